#pragma once
// Every CLI command, as the argument lists the contract tests run on one model: each
// subcommand, and the variants that take different paths through the code (`--json`, each
// -O level, `--verify`, a raised and a lowered opset).

#include <filesystem>
#include <string>
#include <vector>

namespace inferopt::test {

/// The commands to run on `model`, writing anything they write under `out`.
inline std::vector<std::vector<std::string>> every_command(const std::filesystem::path& model,
                                                           const std::filesystem::path& out) {
  const std::string m = model.string();
  const std::string o = (out / "out.onnx").string();
  const std::string report = (out / "report.json").string();
  return {
      {"inspect", m},
      {"inspect", m, "--json"},
      {"optimize", m, "-o", o, "-O1"},
      {"optimize", m, "-o", o, "-O2", "--report", report},
      {"optimize", m, "-o", o, "-O3", "--verify"},
      {"fp16", m, "-o", o},
      {"quantize", m, "-o", o, "--calib-random", "2"},
      {"run", m},
      {"bench", m, "--warmup", "0", "--iters", "1"},
      {"compare", m, m},
      {"plan", m, "--json"},
      {"sparsify", m, "-o", o, "--report", report},
      {"prune", m, "-o", o, "--ratio", "0.5"},
      {"convert", m, "-o", o, "--opset", "13"},
      {"convert", m, "-o", o, "--opset", "20"},
  };
}

}  // namespace inferopt::test
