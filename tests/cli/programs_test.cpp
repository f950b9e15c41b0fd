// The two programs of the command line: `inferopt` starts `inferopt-http` from its own folder
// for the HTTP commands, and itself loads no HTTP, TLS or ONNX-library code.

#include <catch2/catch.hpp>

#include "cli/cli_support.hpp"

namespace {

using namespace inferopt::test;
using Catch::Matchers::Contains;

}  // namespace

TEST_CASE("serve and loadgen run in inferopt-http, with their own options", "[cli][programs]") {
  for (const char* command : {"serve", "loadgen"}) {
    CAPTURE(command);
    const process_result r = run_cli({command, "--help"});
    REQUIRE(r.exited());
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains(std::string(command) + " [OPTIONS]"));
  }
  CHECK_THAT(run_cli({"serve", "--help"}).out, Contains("--max-batch"));
  CHECK_THAT(run_cli({"loadgen", "--help"}).out, Contains("--concurrency"));
}

TEST_CASE("without inferopt-http beside it, serve fails in one line with exit 3", "[cli][programs]") {
  scratch root("programs");
  const fs::path alone = root / "inferopt";
  fs::copy_file(INFEROPT_CLI, alone);
  fs::permissions(alone, fs::perms::owner_all);
  const process_result r = run_process({alone.string(), "serve", "model.onnx"});
  REQUIRE(r.exited());
  CHECK(r.exit_code == 3);
  CHECK(is_one_error_line(r.err));
  CHECK_THAT(r.err, Contains("inferopt-http"));
}

TEST_CASE("inferopt itself links no HTTP, TLS or libonnx library", "[cli][programs]") {
  const process_result r = run_process({"/usr/bin/ldd", INFEROPT_CLI});
  REQUIRE(r.exited());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("libdnnl"));  // the listing is real
  for (const char* library : {"libcpp-httplib", "libssl", "libcrypto", "libonnx.so"}) {
    CAPTURE(library);
    CHECK(r.out.find(library) == std::string::npos);
  }
}
