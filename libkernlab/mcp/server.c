/* kl mcp's server: MCP's stdio transport, JSON-RPC 2.0 one message a line.
 *
 * The calling thread reads and answers everything but tools/call at once
 * (initialize, ping, tools/list, notifications); a tools/call goes on a
 * queue that one runner thread works through in order, so measurements
 * never overlap and a ping or a notifications/cancelled is read while a
 * call runs. A cancelled call is dropped from the queue, or its kl process
 * tree is killed (child.c), and it gets no reply, as MCP asks. Every
 * message goes out whole under one lock. Malformed input gets JSON-RPC's
 * errors: -32700 (not JSON), -32600 (not a request), -32601 (no such
 * method), -32602 (bad params: no tool name, an unknown tool, arguments
 * that are not an object); a tool's own failures are results with isError
 * (tools.c). At the input's end the calls already asked for are
 * answered, then the server returns. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp_internal.h"

#define MAX_LINE ((size_t)64 << 20)

static const char *const protocol_versions[] = {"2025-06-18", "2025-03-26",
                                                "2024-11-05"};

typedef struct queued_call {
  kl_mcp__call call; /* first: the call's pointer is the entry's */
  json_object *id, *params, *progress_token;
  int progress;
  struct queued_call *next;
} queued_call;

typedef struct server {
  int in_fd, out_fd;
  const char *program;
  pthread_mutex_t out_lock;
  bool out_failed;
  pthread_mutex_t lock; /* the queue, `running`, `ending`, the children */
  pthread_cond_t wake;
  queued_call *head, *tail, *running;
  bool ending;
} server;

static void send_message(server *s, json_object *msg) {
  const char *text = json_object_to_json_string_ext(
      msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  kl_buf line = KL_BUF_INIT;
  kl__buf_puts(&line, text);
  kl__buf_putc(&line, '\n');
  pthread_mutex_lock(&s->out_lock);
  for (size_t done = 0; line.ptr && !s->out_failed && done < line.size;) {
    ssize_t w = write(s->out_fd, line.ptr + done, line.size - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      s->out_failed = true;
    else
      done += (size_t)w;
  }
  pthread_mutex_unlock(&s->out_lock);
  kl_buf_dispose(&line);
}

static json_object *message_with(json_object *id) {
  json_object *m = json_object_new_object();
  json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
  json_object_object_add(m, "id", id ? json_object_get(id) : NULL);
  return m;
}

static void send_result(server *s, json_object *id, json_object *result) {
  json_object *m = message_with(id);
  json_object_object_add(m, "result", result);
  send_message(s, m);
  json_object_put(m);
}

static void send_error(server *s, json_object *id, int code,
                       const char *message) {
  json_object *m = message_with(id);
  json_object *e = json_object_new_object();
  json_object_object_add(e, "code", json_object_new_int(code));
  json_object_object_add(e, "message", json_object_new_string(message));
  json_object_object_add(m, "error", e);
  send_message(s, m);
  json_object_put(m);
}

static void send_progress(kl_mcp__call *call, const char *message) {
  queued_call *q = (queued_call *)call;
  server *s = call->server;
  if (!q->progress_token) return;
  json_object *m = json_object_new_object();
  json_object *p = json_object_new_object();
  json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
  json_object_object_add(m, "method",
                         json_object_new_string("notifications/progress"));
  json_object_object_add(p, "progressToken",
                         json_object_get(q->progress_token));
  json_object_object_add(p, "progress", json_object_new_int(++q->progress));
  json_object_object_add(p, "message", json_object_new_string(message));
  json_object_object_add(m, "params", p);
  send_message(s, m);
  json_object_put(m);
}

static bool same_id(json_object *a, json_object *b) {
  if (!a || !b || json_object_get_type(a) != json_object_get_type(b))
    return false;
  if (json_object_is_type(a, json_type_int))
    return json_object_get_int64(a) == json_object_get_int64(b);
  return json_object_is_type(a, json_type_string) &&
         strcmp(json_object_get_string(a), json_object_get_string(b)) == 0;
}

static void free_call(queued_call *q) {
  json_object_put(q->id);
  json_object_put(q->params);
  json_object_put(q->progress_token);
  kl__free(q);
}

static void run_call(server *s, queued_call *q) {
  json_object *name = NULL, *args = NULL, *result = NULL;
  json_object_object_get_ex(q->params, "name", &name);
  json_object_object_get_ex(q->params, "arguments", &args);
  int rc = kl_mcp__tool_call(&result, &q->call, s->program,
                             json_object_get_string(name), args);
  pthread_mutex_lock(&s->lock);
  bool cancelled = q->call.child.cancelled;
  pthread_mutex_unlock(&s->lock);
  if (cancelled) {
    json_object_put(result);
  } else if (rc == KL_ENOTFOUND) {
    send_error(s, q->id, -32602, kl_error_last()->message);
  } else if (rc < 0 || !result) {
    send_error(s, q->id, -32603, "internal error");
    json_object_put(result);
  } else {
    send_result(s, q->id, result);
  }
}

static void *runner(void *arg) {
  server *s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->head && !s->ending)
      pthread_cond_wait(&s->wake, &s->lock);
    if (!s->head) break;
    queued_call *q = s->head;
    s->head = q->next;
    if (!s->head) s->tail = NULL;
    if (q->call.child.cancelled) {
      free_call(q);
      continue;
    }
    s->running = q;
    pthread_mutex_unlock(&s->lock);
    run_call(s, q);
    pthread_mutex_lock(&s->lock);
    s->running = NULL;
    free_call(q);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static void cancel(server *s, json_object *params) {
  json_object *id = NULL;
  if (!json_object_object_get_ex(params, "requestId", &id)) return;
  pthread_mutex_lock(&s->lock);
  for (queued_call *q = s->head; q; q = q->next)
    if (same_id(q->id, id)) q->call.child.cancelled = true;
  if (s->running && same_id(s->running->id, id))
    kl_mcp__child_kill(&s->running->call.child);
  pthread_mutex_unlock(&s->lock);
}

static void initialize(server *s, json_object *id, json_object *params) {
  json_object *v = NULL;
  const char *asked = json_object_object_get_ex(params, "protocolVersion", &v)
                          ? json_object_get_string(v)
                          : NULL;
  const char *version = protocol_versions[0];
  for (size_t i = 0; asked && i < KL_ARRAY_SIZE(protocol_versions); i++)
    if (strcmp(asked, protocol_versions[i]) == 0) version = asked;
  json_object *r = json_object_new_object();
  json_object *caps = json_object_new_object();
  json_object *tools = json_object_new_object();
  json_object *info = json_object_new_object();
  json_object_object_add(r, "protocolVersion", json_object_new_string(version));
  json_object_object_add(tools, "listChanged", json_object_new_boolean(0));
  json_object_object_add(caps, "tools", tools);
  json_object_object_add(r, "capabilities", caps);
  json_object_object_add(info, "name", json_object_new_string("kernlab"));
  json_object_object_add(info, "title", json_object_new_string("kernlab"));
  json_object_object_add(info, "version",
                         json_object_new_string(kl_version_string()));
  json_object_object_add(r, "serverInfo", info);
  json_object_object_add(
      r, "instructions",
      json_object_new_string(
          "kernlab measures GPU and CPU kernels honestly. Start with check on "
          "a case, bench the baseline, then compare each candidate (a file "
          "or source text); a candidate counts only when compare's decision "
          "is faster. Read share/kernlab/agents/kernlab/SKILL.md."));
  send_result(s, id, r);
}

static void enqueue_call(server *s, json_object *id, json_object *params) {
  json_object *name = NULL, *args = NULL, *meta = NULL, *token = NULL;
  if (!params || !json_object_is_type(params, json_type_object) ||
      !json_object_object_get_ex(params, "name", &name) ||
      !json_object_is_type(name, json_type_string)) {
    send_error(s, id, -32602, "tools/call needs params.name, a string");
    return;
  }
  if (json_object_object_get_ex(params, "arguments", &args) && args &&
      !json_object_is_type(args, json_type_object)) {
    send_error(s, id, -32602, "tools/call's arguments must be an object");
    return;
  }
  if (json_object_object_get_ex(params, "_meta", &meta) && meta)
    json_object_object_get_ex(meta, "progressToken", &token);
  queued_call *q = kl__calloc(1, sizeof(*q));
  if (!q) {
    send_error(s, id, -32603, "out of memory");
    return;
  }
  /* copies, not references: json-c counts references without atomics,
   * and the runner thread uses these while this one frees the message */
  if (json_object_deep_copy(id, &q->id, NULL) != 0 ||
      json_object_deep_copy(params, &q->params, NULL) != 0 ||
      (token && json_object_deep_copy(token, &q->progress_token, NULL) != 0)) {
    free_call(q);
    send_error(s, id, -32603, "out of memory");
    return;
  }
  q->call.child.lock = &s->lock;
  q->call.progress = send_progress;
  q->call.server = s;
  pthread_mutex_lock(&s->lock);
  if (s->tail)
    s->tail->next = q;
  else
    s->head = q;
  s->tail = q;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
}

static bool valid_id(json_object *id) {
  return id && (json_object_is_type(id, json_type_int) ||
                json_object_is_type(id, json_type_string));
}

static void handle_line(server *s, const char *line, size_t len) {
  enum json_tokener_error jerr;
  json_tokener *tok = json_tokener_new();
  json_object *msg =
      tok ? json_tokener_parse_ex(tok, line, (int)len + 1) : NULL;
  jerr =
      tok ? json_tokener_get_error(tok) : json_tokener_error_parse_unexpected;
  if (msg && tok) {
    size_t end = json_tokener_get_parse_end(tok);
    if (end < len && end + strspn(line + end, " \t\r") < len)
      jerr = json_tokener_error_parse_unexpected;
  }
  json_tokener_free(tok);
  if (!msg || jerr != json_tokener_success) {
    json_object_put(msg);
    send_error(s, NULL, -32700, "parse error: not a JSON message");
    return;
  }
  json_object *id = NULL, *method = NULL, *params = NULL, *version = NULL;
  bool has_id = json_object_is_type(msg, json_type_object) &&
                json_object_object_get_ex(msg, "id", &id);
  if (!json_object_is_type(msg, json_type_object) ||
      !json_object_object_get_ex(msg, "jsonrpc", &version) ||
      !json_object_is_type(version, json_type_string) ||
      strcmp(json_object_get_string(version), "2.0") != 0 ||
      (has_id && !valid_id(id))) {
    send_error(s, has_id && valid_id(id) ? id : NULL, -32600,
               json_object_is_type(msg, json_type_array)
                   ? "invalid request: batches are not supported"
                   : "invalid request: not a JSON-RPC 2.0 message");
    json_object_put(msg);
    return;
  }
  if (!json_object_object_get_ex(msg, "method", &method)) {
    json_object_put(msg); /* a response to us: we send no requests */
    return;
  }
  if (!json_object_is_type(method, json_type_string)) {
    send_error(s, has_id ? id : NULL, -32600,
               "invalid request: method must be a string");
    json_object_put(msg);
    return;
  }
  json_object_object_get_ex(msg, "params", &params);
  const char *m = json_object_get_string(method);
  if (params && !json_object_is_type(params, json_type_object) &&
      !json_object_is_type(params, json_type_array)) {
    if (has_id) send_error(s, id, -32600, "invalid request: bad params");
  } else if (!has_id) {
    if (strcmp(m, "notifications/cancelled") == 0 && params) cancel(s, params);
    /* notifications/initialized and any other notification: nothing to do */
  } else if (strcmp(m, "initialize") == 0) {
    initialize(s, id, params);
  } else if (strcmp(m, "ping") == 0) {
    send_result(s, id, json_object_new_object());
  } else if (strcmp(m, "tools/list") == 0) {
    json_object *list = NULL;
    if (kl_mcp__tools_list(&list) < 0)
      send_error(s, id, -32603, "out of memory");
    else
      send_result(s, id, list);
  } else if (strcmp(m, "tools/call") == 0) {
    enqueue_call(s, id, params);
  } else {
    char text[300];
    snprintf(text, sizeof(text), "method not found: %.200s", m);
    send_error(s, id, -32601, text);
  }
  json_object_put(msg);
}

/* read lines until the input ends; a line past MAX_LINE is a parse error */
static void read_loop(server *s) {
  kl_buf line = KL_BUF_INIT;
  char chunk[65536];
  bool skipping = false;
  for (;;) {
    ssize_t n = read(s->in_fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; i++) {
      if (chunk[i] != '\n') {
        if (!skipping && line.size >= MAX_LINE) {
          skipping = true;
          send_error(s, NULL, -32700, "parse error: message too long");
        }
        if (!skipping) kl__buf_putc(&line, chunk[i]);
        continue;
      }
      if (!skipping && line.size && line.size > strspn(line.ptr, " \t\r"))
        handle_line(s, line.ptr, line.size);
      skipping = false;
      if (line.ptr) line.ptr[0] = 0;
      line.size = 0;
    }
    if (s->out_failed) break;
  }
  if (!skipping && line.size && line.size > strspn(line.ptr, " \t\r"))
    handle_line(s, line.ptr, line.size);
  kl_buf_dispose(&line);
}

static const size_t mcp_options_sizes[] = {0, sizeof(kl_mcp_options)};

int kl_mcp_options_init(kl_mcp_options *opts, unsigned version) {
  const kl_mcp_options defaults = KL_MCP_OPTIONS_INIT;
  return kl__options_init(opts, &defaults, version, mcp_options_sizes,
                          KL_ARRAY_SIZE(mcp_options_sizes), "kl_mcp_options");
}

int kl_mcp_serve(int in_fd, int out_fd, const kl_mcp_options *given) {
  kl_mcp_options opts;
  int rc = kl__options_take(&opts, given, mcp_options_sizes,
                            KL_ARRAY_SIZE(mcp_options_sizes), "kl_mcp_options");
  if (rc < 0) return rc;
  if (!opts.program || !opts.program[0])
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_mcp_serve: no kl program to run the tools");
  server s;
  memset(&s, 0, sizeof(s));
  s.in_fd = in_fd;
  s.out_fd = out_fd;
  s.program = opts.program;
  pthread_mutex_init(&s.out_lock, NULL);
  pthread_mutex_init(&s.lock, NULL);
  pthread_cond_init(&s.wake, NULL);
  pthread_t thread;
  if (pthread_create(&thread, NULL, runner, &s) != 0) {
    rc = kl__error(KL_ENOMEM, KL_DOMAIN_NONE, "cannot start a thread");
    goto done;
  }
  read_loop(&s);
  /* the calls already asked for still get their answers (a client may
   * write its requests and close its end); a closed output ends them */
  pthread_mutex_lock(&s.lock);
  s.ending = true;
  if (s.out_failed) {
    for (queued_call *q = s.head; q; q = q->next)
      q->call.child.cancelled = true;
    if (s.running) kl_mcp__child_kill(&s.running->call.child);
  }
  pthread_cond_signal(&s.wake);
  pthread_mutex_unlock(&s.lock);
  pthread_join(thread, NULL);
  if (s.out_failed)
    rc = kl__error(KL_EIO, KL_DOMAIN_NONE, "kl mcp: the output was closed");
done:
  pthread_cond_destroy(&s.wake);
  pthread_mutex_destroy(&s.lock);
  pthread_mutex_destroy(&s.out_lock);
  return rc;
}
