/* libFuzzer target: kl mcp's reading of what a client sends. The bytes
 * become the server's whole input (a file, so any size goes in at once);
 * the tools run /bin/true, so a tools/call costs a process and answers "no
 * JSON document". Whatever came in, every line that goes out must be one
 * JSON-RPC 2.0 object with a result or an error (or a notification), and
 * the server must return 0 at the input's end. Built by scripts/fuzz.sh;
 * replayed under ctest by fuzz/replay.c. */
#include <fcntl.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_tmp.h"
#include "kernlab/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reply(const char *line) {
  json_object *m = json_tokener_parse(line), *v;
  if (!m || !json_object_is_type(m, json_type_object)) abort();
  if (!json_object_object_get_ex(m, "jsonrpc", &v) ||
      strcmp(json_object_get_string(v), "2.0") != 0)
    abort();
  bool answer = json_object_object_get_ex(m, "result", &v) ||
                json_object_object_get_ex(m, "error", &v);
  if (!answer && !json_object_object_get_ex(m, "method", &v)) abort();
  json_object_put(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char in_path[600], out_path[600];
  fuzz_write(in_path, sizeof(in_path), "mcp-in", data, size);
  fuzz_write(out_path, sizeof(out_path), "mcp-out", (const uint8_t *)"", 0);
  int in = open(in_path, O_RDONLY), out = open(out_path, O_WRONLY | O_TRUNC);
  if (in < 0 || out < 0) abort();
  kl_mcp_options o = KL_MCP_OPTIONS_INIT;
  o.program = "/bin/true";
  if (kl_mcp_serve(in, out, &o) != 0) abort();
  close(in);
  close(out);
  FILE *f = fopen(out_path, "r");
  if (!f) abort();
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0)
    check_reply(line);
  free(line);
  fclose(f);
  return 0;
}
