// ONNX backend conformance: every test case of Debian's libonnx-testdata whose ops we
// support must match the expected outputs at ONNX's tolerances (rtol 1e-3, atol 1e-7).
// Set INFEROPT_CONFORMANCE_FILTER=substring to run a subset while developing kernels, and
// INFEROPT_CONFORMANCE_VERBOSE=1 to print why each unsupported case is unsupported.
// INFEROPT_CONFORMANCE_ROOT=dir runs the cases under dir instead of the installed ones.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>

#include "inferopt/ir/serialize.hpp"
#include "inferopt/runtime/session.hpp"
#include "support/paths.hpp"
#include "support/tensor_compare.hpp"

namespace fs = std::filesystem;
using namespace inferopt;

namespace {

enum class outcome { passed, failed, unsupported };

struct case_result {
  outcome result = outcome::unsupported;
  std::string detail;
};

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  // input_10 sorts after input_9.
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    auto num = [](const fs::path& p) {
      std::string s = p.stem().string();
      return std::stoi(s.substr(s.find('_') + 1));
    };
    return num(a) < num(b);
  });
  return out;
}

// ONNX's test data stores bfloat16 tensors as uint16 (numpy has no bfloat16); read them as
// the bfloat16 the model declares.
runtime::tensor as_declared(const runtime::tensor& t, ir::data_type declared) {
  if (declared != ir::data_type::bfloat16 || t.dtype() != ir::data_type::uint16) return t;
  auto holder = std::make_shared<const runtime::tensor>(t);
  return runtime::tensor::view(declared, t.shape(), holder->raw(), holder);
}

// A few old test cases feed data whose shape contradicts the model's own declaration (the
// castlike bfloat16 cases declare 'like' as 3x4 and feed [1]); they test nothing we can pass.
std::string contradiction(const runtime::io_info& in, const runtime::tensor& t) {
  if (!in.has_shape) return {};
  bool same = t.rank() == in.shape.size();
  for (std::size_t d = 0; same && d < t.rank(); ++d) same = !in.shape[d].is_static() || in.shape[d].value() == t.dim(d);
  if (same) return {};
  return "test data for input '" + in.name + "' has shape " + runtime::to_string(t.shape()) +
         ", which contradicts the model's declaration";
}

case_result run_case(const fs::path& dir) {
  ir::model m;
  try {
    m = ir::load_model(dir / "model.onnx");
  } catch (const error& e) {
    return {outcome::unsupported, std::string("load: ") + e.what()};
  }
  std::unique_ptr<runtime::session> s;
  try {
    s = std::make_unique<runtime::session>(m, runtime::session_options{.threads = 1});
  } catch (const error& e) {
    if (e.code() == errc::unsupported) return {outcome::unsupported, e.what()};
    return {outcome::failed, std::string("build: ") + e.what()};
  }
  std::vector<const runtime::io_info*> feeds_info;
  for (const auto& in : s->inputs()) {
    if (!in.optional) feeds_info.push_back(&in);
  }
  for (const auto& set : sorted_files(dir, "test_data_set_")) {
    runtime::tensor_map feeds;
    auto inputs = sorted_files(set, "input_");
    try {
      for (std::size_t k = 0; k < inputs.size() && k < feeds_info.size(); ++k) {
        feeds[feeds_info[k]->name] = as_declared(runtime::read_tensor_file(inputs[k].string()), feeds_info[k]->type);
        std::string why = contradiction(*feeds_info[k], feeds[feeds_info[k]->name]);
        if (!why.empty()) return {outcome::unsupported, why};
      }
    } catch (const error& e) {
      return {outcome::unsupported, std::string("input: ") + e.what()};  // sequences, optionals, strings
    }
    runtime::tensor_map got;
    try {
      got = s->run(feeds);
    } catch (const error& e) {
      if (e.code() == errc::unsupported) return {outcome::unsupported, e.what()};
      return {outcome::failed, std::string("run: ") + e.what()};
    }
    auto expected = sorted_files(set, "output_");
    for (std::size_t k = 0; k < expected.size() && k < s->outputs().size(); ++k) {
      runtime::tensor want;
      try {
        want = as_declared(runtime::read_tensor_file(expected[k].string()), s->outputs()[k].type);
      } catch (const error& e) {
        return {outcome::unsupported, std::string("expected output: ") + e.what()};
      }
      const auto& name = s->outputs()[k].name;
      std::string mismatch = test::compare_tensors(got.at(name), want, 1e-3, 1e-7);
      if (!mismatch.empty()) return {outcome::failed, set.filename().string() + " output '" + name + "': " + mismatch};
    }
  }
  return {outcome::passed, {}};
}

std::set<std::string> ops_of(const fs::path& model) {
  std::set<std::string> ops;
  try {
    ir::model m = ir::load_model(model);
    for (ir::node* n : m.graph().nodes()) ops.insert(n->op_type());
  } catch (const error&) {
    ops.insert("<unloadable>");
  }
  return ops;
}

}  // namespace

TEST_CASE("the executor passes every supported ONNX backend test case", "[runtime][conformance]") {
  // INFEROPT_CONFORMANCE_ROOT: another copy of the backend test data (e.g. newer cases
  // generated with onnx's backend test tools), laid out as node/, simple/, ...
  const char* root_override = std::getenv("INFEROPT_CONFORMANCE_ROOT");
  auto root = root_override ? std::optional<fs::path>(root_override) : test::onnx_testdata_dir();
  if (!root) {
    WARN("libonnx-testdata is not installed; skipped");
    return;
  }
  const char* filter = std::getenv("INFEROPT_CONFORMANCE_FILTER");
  const bool verbose = std::getenv("INFEROPT_CONFORMANCE_VERBOSE") != nullptr;  // print why cases are unsupported
  std::map<std::string, std::array<int, 3>> per_op;
  std::map<std::string, std::array<int, 3>> per_suite;
  std::vector<std::string> failures;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    const fs::path dir = *root / suite;
    if (!fs::is_directory(dir)) continue;
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    }
    std::sort(cases.begin(), cases.end());
    for (const fs::path& c : cases) {
      if (filter && c.filename().string().find(filter) == std::string::npos) continue;
      case_result r = run_case(c);
      const int k = static_cast<int>(r.result);
      ++per_suite[suite][k];
      for (const std::string& op : ops_of(c / "model.onnx")) ++per_op[op][k];
      if (r.result == outcome::failed) failures.push_back(std::string(suite) + "/" + c.filename().string() + ": " + r.detail);
      if (r.result == outcome::unsupported && verbose) {
        std::cout << "UNSUPPORTED " << suite << "/" << c.filename().string() << ": " << r.detail << "\n";
      }
    }
  }
  std::cout << std::left << std::setw(28) << "op" << std::right << std::setw(8) << "passed" << std::setw(8) << "failed"
            << std::setw(13) << "unsupported" << "\n";
  for (const auto& [op, n] : per_op) {
    std::cout << std::left << std::setw(28) << op << std::right << std::setw(8) << n[0] << std::setw(8) << n[1]
              << std::setw(13) << n[2] << "\n";
  }
  for (const auto& [suite, n] : per_suite) {
    std::cout << "suite " << suite << ": " << n[0] << " passed, " << n[1] << " failed, " << n[2] << " unsupported\n";
  }
  for (const std::string& f : failures) std::cout << "FAILED " << f << "\n";
  CHECK(failures.empty());
  if (!filter && !root_override) CHECK(per_suite["node"][0] >= 400);
}
