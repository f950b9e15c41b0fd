// Exit codes by kind of failure (src/cli/exit_codes.hpp), per command: a model that needs
// more memory than the process may have is bad input (exit 2, one line saying so) for every
// command that computes it, and no command crashes or reports a bug of ours on it.

#include <catch2/catch.hpp>

#include "cli/bad_models.hpp"
#include "cli/cli_support.hpp"
#include "cli/every_command.hpp"

namespace {

using namespace inferopt::test;
using Catch::Matchers::Contains;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool address_space_capped_runs = false;  // sanitizers reserve terabytes of shadow
#else
constexpr bool address_space_capped_runs = true;
#endif

/// Runs the CLI with its address space capped at `megabytes`, through the shell's ulimit.
process_result run_cli_capped(const std::vector<std::string>& args, int megabytes) {
  std::vector<std::string> argv{"/bin/sh", "-c", "ulimit -v " + std::to_string(megabytes * 1024) + " && exec \"$0\" \"$@\"",
                                INFEROPT_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

bool computes_the_model(const std::vector<std::string>& args) {
  return args[0] == "run" || args[0] == "bench" || args[0] == "compare" || args[0] == "quantize";
}

}  // namespace

TEST_CASE("running out of memory is exit 2 with one line for every command, never a crash", "[cli][exit-codes]") {
  if (!address_space_capped_runs) {
    WARN("address-space caps do not work under sanitizers; skipped");
    return;
  }
  scratch root("out_of_memory");
  const fs::path model = root / "hungry.onnx";
  const fs::path out = root / "out";
  fs::create_directories(out);
  // 2^28 floats: 1 GiB, within the validation limit, beyond a 768 MiB address space.
  write_bytes(model, memory_hungry_model_bytes(std::int64_t{1} << 28));
  for (const auto& args : every_command(model, out)) {
    CAPTURE(args);
    const process_result r = run_cli_capped(args, 768);
    CAPTURE(r.err);
    REQUIRE(r.exited());
    if (computes_the_model(args)) {
      CHECK(r.exit_code == 2);
      CHECK(is_one_error_line(r.err));
      CHECK_THAT(r.err, Contains("out of memory"));
      CHECK(folder_entries(out).empty());
    } else {
      CHECK((r.exit_code == 0 || r.exit_code == 2));
      if (r.exit_code == 2) CHECK(is_one_error_line(r.err));
    }
    fs::remove_all(out);
    fs::create_directories(out);
  }
}
