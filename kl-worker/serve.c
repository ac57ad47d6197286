/* kl-worker's request loop, callable in process (kl_worker_serve in
 * kernlab/plugin.h).
 *
 * It reads one JSON request per line from fd KL_WORKER_FD (3) and writes one
 * JSON response per line back; its stdout and stderr are the parent's log
 * file, so a candidate that prints cannot corrupt the protocol. Requests,
 * each handled by its own file:
 *   {"op":"load","path":P}                       -> {"ok":true,"id":N,...}
 *   {"op":"check","plugin":N,"oracle":M|-1,"shape":S,"seeds":[...]}
 *   {"op":"time","plugins":[N(,M)],"shape":S,"cold":b,"warmup":k,
 *    "min_samples":a,"max_samples":b,"target_rel_ci":x,"time_cap_ms":t,
 *    "seed":s,"probe_true_us":T}                 ->
 * {"ok":true,"samples":[[..]]}; a device request without probe_true_us is
 * answered {"ok":false,"code":"calibrate","uuid":U,"driver":D} (op_time.c)
 *   {"op":"profile","plugin":N,"shape":S,"metrics":[...],"seed":s,"cold":b}
 *                                                -> counters (op_profile.c)
 *   {"op":"metric_passes","metrics":[...],"chip":C} -> {"passes":P}
 *   {"op":"device"(,"memory":1)}                 -> devices (op_device.c)
 *   {"op":"notes","plugin":N}                    -> {"notes":{..}|null}
 *   {"op":"release"}      -> {"released":n}: the pooled instances destroyed
 *   {"op":"calibrate","launches":N} -> the timer's probe kernel's true
 *                                      duration (op_calibrate.c)
 *   ("pool":1 in check, time and profile: instances.c; "keep_oracle":K in
 *    check: the oracle's outputs kept)
 *   {"op":"quit"} -> {"ok":true} once the device's counters are free
 * Failures the worker survives answer {"ok":false,"error":"..."}; a crash
 * or hang is the parent's to notice.
 *
 * kl-worker (main.c) serves plugins it dlopens; the Python worker serves
 * plugins it builds from a case's module, through the same loop, so the
 * checks, the sampler and the CUPTI timer are the same code for both. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "worker_internal.h"

/* One handler per operation. */
static const struct {
  const char *name;
  void (*run)(json_object *req);
} ops[] = {
    {"load", klw_op_load},          {"check", klw_op_check},
    {"time", klw_op_time},          {"device", klw_op_device},
    {"profile", klw_op_profile},    {"metric_passes", klw_op_metric_passes},
    {"notes", klw_op_notes},        {"release", klw_op_release},
    {"calibrate", klw_op_calibrate}};

__attribute__((visibility("default"))) int
kl_worker_serve(kl_plugin_loader load) {
  klw_set_loader(load);
  for (;;) {
    char *line = klw_read_line();
    if (!line) return 0; /* the parent went away */
    json_object *req = json_tokener_parse(line);
    json_object *op;
    if (!req || !json_object_object_get_ex(req, "op", &op)) {
      klw_reply_error("bad request");
      json_object_put(req);
      continue;
    }
    const char *name = json_object_get_string(op);
    if (strcmp(name, "quit") == 0) {
      /* the counters first: the parent starts the next worker as soon as
       * this answers, without waiting for this process to end */
      klw_profile_release();
      json_object *o = json_object_new_object();
      json_object_object_add(o, "ok", json_object_new_boolean(1));
      klw_reply(o);
      json_object_put(req);
      return 0;
    }
    klw_copies_forget(); /* what earlier requests' launches copied */
    size_t i = 0;
    while (i < sizeof(ops) / sizeof(ops[0]) && strcmp(ops[i].name, name) != 0)
      i++;
    if (i < sizeof(ops) / sizeof(ops[0]))
      ops[i].run(req);
    else
      klw_reply_error("unknown op '%s'", name);
    json_object_put(req);
    /* what a candidate printed goes out before the next request */
    fflush(stdout);
  }
}
