/* `kl mcp`: kernlab as a Model Context Protocol server on stdin and
 * stdout (kernlab/mcp.h does the work). Each tool call runs this very kl,
 * found through /proc/self/exe, so the server and its tools are always
 * the same build. Exit 0 when the client closes the input, 1 when the
 * output went away first. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cmd_mcp(int argc, char **argv) {
  if (argc > 1)
    return cli_usage_error("mcp", "unexpected argument '%s'", argv[1]);
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0 || (size_t)len >= sizeof(self) - 1) {
    cli_error("mcp: cannot find the kl program (/proc/self/exe)");
    return EXIT_FAILED;
  }
  self[len] = 0;
  /* a client gone away is an error to report, not a signal to die of */
  signal(SIGPIPE, SIG_IGN);
  kl_mcp_options o = KL_MCP_OPTIONS_INIT;
  o.program = self;
  if (kl_mcp_serve(STDIN_FILENO, STDOUT_FILENO, &o) < 0) return cli_fail();
  return EXIT_OK;
}
