/* Shared by the MCP server's files: server.c (JSON-RPC, the call queue,
 * cancellation), tools.c (the tool table: schemas, arguments to kl's
 * argv, results) and child.c (one kl process per call). */
#ifndef KL_MCP_INTERNAL_H
#define KL_MCP_INTERNAL_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "../core/internal.h"
#include "kernlab/mcp.h"

/* A running child, as the thread that cancels it sees it: `pid` is set
 * while the process exists (not yet reaped), under `lock`. */
typedef struct kl_mcp__child {
  pthread_mutex_t *lock;
  pid_t pid;
  bool cancelled; /* set under lock by the canceller */
} kl_mcp__child;

/* What a finished child left: its exit status (-1 when a signal ended
 * it), its stdout whole, and its stderr lines that were not events. */
typedef struct kl_mcp__exit {
  int status;
  int signal;
  kl_buf out;
  kl_buf errors;
} kl_mcp__exit;

/* Called with each stderr line that starts with '{' (an event). */
typedef void (*kl_mcp__line_fn)(const char *line, void *payload);

/* Run `program` with argv (NULL-ended, argv[0] included) in its own
 * process group, stdin from /dev/null, until it ends; fills *res (the
 * caller disposes its buffers). Output past 64 MiB is dropped. 0, or
 * KL_EIO when it could not be started. */
int kl_mcp__child_run(kl_mcp__exit *res, kl_mcp__child *child,
                      const char *program, char *const *argv,
                      kl_mcp__line_fn on_event, void *payload);
/* End the child and every process under it (the worker it started is in
 * a process group of its own): SIGKILL to each, found through /proc.
 * Call with child->lock held. */
void kl_mcp__child_kill(kl_mcp__child *child);

/* A tool call in progress: how the tool reports progress and registers its
 * child for cancellation. */
typedef struct kl_mcp__call {
  kl_mcp__child child;
  void (*progress)(struct kl_mcp__call *call, const char *message);
  void *server;
} kl_mcp__call;

/* tools.c: the tools/list document, and one call: `name` with its
 * arguments (an object, or NULL) into a tools/call result object (owned
 * by the caller). Returns 0 with *result, KL_ENOTFOUND for no such tool
 * (a JSON-RPC error, -32602), KL_ENOMEM. */
int kl_mcp__tools_list(json_object **out);
int kl_mcp__tool_call(json_object **result, kl_mcp__call *call,
                      const char *program, const char *name, json_object *args);

#endif /* KL_MCP_INTERNAL_H */
