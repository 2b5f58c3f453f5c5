// mxfp4 command-line tool: entry point. Each subcommand lives in its own file (cmd_*.cpp).
// Every failure prints exactly one line on stderr ("mxfp4[ <cmd>]: <problem>") and exits
// non-zero: 2 for usage errors, 1 for bad input or failed work.
#include <cstdio>
#include <exception>
#include <new>
#include <vector>

#include "common.hpp"

int main(int argc, char** argv) {
  using namespace mxfp4cli;
  CLI::App app{"MXFP4 quantization and GEMM (spec: docs/semantics.md)", "mxfp4"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(mxfp4::version()));

  std::vector<Command> commands = {add_quantize(app), add_dequantize(app), add_gemm(app),
                                   add_info(app),     add_bench(app),      add_tune(app)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "mxfp4: %s (see mxfp4 --help)\n", one_line(e.what()).c_str());
    return 2;
  }

  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    const std::string prefix = "mxfp4 " + c.app->get_name();
    try {
      return c.run();
    } catch (const CliError& e) {
      std::fprintf(stderr, "%s: %s\n", prefix.c_str(), one_line(e.what()).c_str());
      return e.code();
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "%s: out of memory\n", prefix.c_str());
      return 1;
    } catch (const std::exception& e) {
      // mxfp4::InvalidArgument / TypeMismatch / Error / CudaError and npy::NpyError.
      std::fprintf(stderr, "%s: %s\n", prefix.c_str(), one_line(e.what()).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "mxfp4: no subcommand given (see mxfp4 --help)\n");
  return 2;
}
