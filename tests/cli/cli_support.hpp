#pragma once
// What the CLI tests share: running the built `inferopt` binary, scratch folders, whole-file
// reads and writes, reading models back with protobuf (independently of our IR), and the
// checks every failing command must pass.

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include "cli/run_process.hpp"
#include "inferopt/ir/sample_models.hpp"
#include "inferopt/ir/serialize.hpp"
#include "support/paths.hpp"

namespace inferopt::test {

namespace fs = std::filesystem;

/// Runs the CLI under test with `args` (not including the program name).
inline process_result run_cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv{INFEROPT_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

/// A fresh empty folder for one CLI test, removed when the test ends.
class scratch : public scratch_folder {
 public:
  explicit scratch(const std::string& name) : scratch_folder("cli_" + name) {}
};

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Every entry of a folder (hidden ones included), by file name, sorted.
inline std::vector<std::string> folder_entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// Saves the Quick start's default model (seeded, so every test sees the same bytes).
inline fs::path save_default_model(const fs::path& path) {
  ir::save_model(ir::make_default_model(), path);
  return path;
}

/// Parses a model file with protobuf alone, so checks do not depend on the IR under test.
inline onnx::ModelProto read_model_proto(const fs::path& p) {
  onnx::ModelProto m;
  if (!m.ParseFromString(read_bytes(p))) throw std::runtime_error(p.string() + ": not a ModelProto");
  return m;
}

inline int count_ops(const onnx::ModelProto& m, const std::string& op) {
  return static_cast<int>(std::count_if(m.graph().node().begin(), m.graph().node().end(),
                                        [&](const onnx::NodeProto& n) { return n.op_type() == op; }));
}

inline std::vector<std::string> output_names(const onnx::ModelProto& m) {
  std::vector<std::string> out;
  for (const auto& o : m.graph().output()) out.push_back(o.name());
  return out;
}

/// The pass names a pipeline text mentions, once per step (the report's rows: a pass named
/// twice is two steps), in order:
/// `fixpoint(eliminate-identity,dce),prune{ratio=0.3},dce` -> {eliminate-identity, dce, prune, dce}.
inline std::vector<std::string> pass_names_in(const std::string& pipeline) {
  std::vector<std::string> names;
  std::string word;
  int brace_depth = 0;  // option text inside {...} names no pass
  auto flush = [&](char next) {
    if (!word.empty() && !(word == "fixpoint" && next == '(')) names.push_back(word);
    word.clear();
  };
  for (char c : pipeline) {
    if (c == '{') ++brace_depth;
    if (brace_depth == 0 && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) {
      word += c;
    } else {
      flush(c);
    }
    if (c == '}') --brace_depth;
  }
  flush('\0');
  return names;
}

/// True when `err` is exactly one line `inferopt: error: ...\n`.
/// The corpus's small BERT (TorchScript, dynamic batch) with `sentences` written to
/// `dir/sentences.txt`, and the arguments that calibrate a command on them.
struct text_encoder_case {
  fs::path model;
  std::vector<std::string> calibration;  ///< --calib-text FILE --tokenizer T
};

inline text_encoder_case text_encoder(const fs::path& dir, const std::string& sentences) {
  const fs::path source(INFEROPT_SOURCE_DIR);
  const fs::path text = dir / "sentences.txt";
  std::ofstream(text) << sentences;
  return {source / "tests/models/corpus/bert_dynamic_ts.onnx",
          {"--calib-text", text.string(), "--tokenizer", (source / "tests/data/tokenizer/wordpiece_tokenizer.json").string()}};
}

/// `head` followed by `tail`.
inline std::vector<std::string> joined(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

inline bool is_one_error_line(const std::string& err) {
  return err.rfind("inferopt: error: ", 0) == 0 && !err.empty() && err.back() == '\n' &&
         std::count(err.begin(), err.end(), '\n') == 1;
}

/// What a refused model must leave, checked with Catch: it was given as `model` holding
/// `bytes`. Without a crash or hang the CLI exited 2 with one error line containing each of
/// `phrases`, printed nothing else, left the model as it was and `out_dir` empty.
inline void check_refused(const process_result& r, const fs::path& model, const std::string& bytes,
                          const fs::path& out_dir, const std::vector<std::string>& phrases) {
  REQUIRE(r.exited());
  CHECK(r.exit_code == 2);
  CHECK(is_one_error_line(r.err));
  for (const std::string& phrase : phrases) CHECK(r.err.find(phrase) != std::string::npos);
  CHECK(r.out.empty());
  CHECK(read_bytes(model) == bytes);
  CHECK(folder_entries(out_dir).empty());
}

}  // namespace inferopt::test
