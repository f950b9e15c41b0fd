// Builds inferopt's default model (a small residual CNN) with the graph builder, saves it,
// loads it back and checks that the file holds exactly what was built.
//
//   example_00_default_model OUT_DIR_OR_FILE.onnx
//
// The Quick start uses it to generate the model it optimizes.

#include <filesystem>
#include <iostream>

#include "inferopt/ir.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  fs::path out = argc > 1 ? fs::path(argv[1]) : fs::path("default_cnn.onnx");
  if (out.extension() != ".onnx") {
    fs::create_directories(out);
    out /= "default_cnn.onnx";
  }
  try {
    inferopt::ir::model m = inferopt::ir::make_default_model();
    inferopt::ir::verify(m.graph());
    inferopt::ir::save_model(m, out);

    inferopt::ir::model back = inferopt::ir::load_model(out);
    if (inferopt::ir::serialize_model(back) != inferopt::ir::serialize_model(m)) {
      std::cerr << "mismatch: the saved model differs from the built one\n";
      return 1;
    }
    auto stats = inferopt::ir::compute_statistics(back);
    std::cout << "wrote " << out.string() << ": " << stats.nodes << " nodes, " << stats.params << " parameters\n";
    return 0;
  } catch (const inferopt::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
