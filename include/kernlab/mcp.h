/** @file kernlab/mcp.h  A Model Context Protocol server (`kl mcp`).
 *
 * kl_mcp_serve speaks MCP's stdio transport on two file descriptors:
 * JSON-RPC 2.0, one message a line. It answers `initialize` (protocol
 * versions 2025-06-18, 2025-03-26 and 2024-11-05: the client's when it is
 * one of those, else the newest), `ping`, `tools/list` and `tools/call`,
 * and honours `notifications/cancelled`.
 *
 * Each tool is one of kl's verbs (check, new, harness, bench, compare,
 * profile, rules, prompt, best, history, report, observe --show, case
 * from-observation, case from-kernelbench; propose, proposal_verdict and
 * propose_stop for `kl run --proposer agent`), run as the `kl`
 * program `program` names, with --json: the call's `structuredContent` is
 * that verb's --json document, byte for byte the CLI's, and so are its
 * sandbox, gates and records, because it is the CLI. A child process per
 * call also means a verb that fails cannot take the server down, and a
 * call is cancelled by ending that process and everything it started (the
 * worker included). While bench, compare and profile run, their
 * --json-events become `notifications/progress` when the call carries
 * `_meta.progressToken`. docs/mcp.md describes the tools.
 *
 * Threads: kl_mcp_serve reads requests on the calling thread and runs
 * tool calls one at a time, in order, on a thread of its own, so `ping`
 * and cancellation are answered while a call runs. Replies are written
 * whole, one line each, under a lock; a program that serves should ignore
 * SIGPIPE (kl mcp and Python do) so that a client gone away is an error
 * (KL_EIO), not the end of the process. It returns when the input has ended
 * and the calls asked for before its end are answered, or at once (their
 * kl processes ended) when the output can no longer be written.
 */
#ifndef KERNLAB_MCP_H
#define KERNLAB_MCP_H

#include "common.h"

KL_BEGIN_DECLS

#define KL_MCP_OPTIONS_VERSION 1
typedef struct kl_mcp_options {
  unsigned version;    /**< KL_MCP_OPTIONS_VERSION */
  const char *program; /**< the kl program each tool call runs (required) */
} kl_mcp_options;
#define KL_MCP_OPTIONS_INIT                                                    \
  { KL_MCP_OPTIONS_VERSION, NULL }
/** Fill *opts with the defaults of the fields its `version` knows.
 *  @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int) kl_mcp_options_init(kl_mcp_options *opts, unsigned version);

/** Serve MCP on in_fd (requests) and out_fd (replies) until in_fd ends.
 *  @return 0 at the end of the input; KL_EINVALID (no program), KL_EIO
 *  (the output could not be written), KL_ENOMEM. */
KL_EXTERN(int)
kl_mcp_serve(int in_fd, int out_fd, const kl_mcp_options *opts);

/** The tools kl_mcp_serve offers, as `tools/list` answers them:
 *  {"tools": [{"name", "title", "description", "inputSchema"}, ...]}.
 *  @return 0, KL_ENOMEM. */
KL_EXTERN(int) kl_mcp_tools_json(kl_buf *out);

KL_END_DECLS

#endif /* KERNLAB_MCP_H */
