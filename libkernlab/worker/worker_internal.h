/* What kl-worker's request handlers share (worker_main.c). */
#ifndef KLW_WORKER_INTERNAL_H
#define KLW_WORKER_INTERNAL_H

#include <json-c/json.h>
#include <stdint.h>

#include "kernlab/plugin.h"

/* Send one reply line (takes the object). */
void klw_reply(json_object *o);
void klw_reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int64_t klw_get_int(json_object *req, const char *key, int64_t dflt);
double klw_get_double(json_object *req, const char *key, double dflt);
/* A loaded plugin by id, or NULL. */
const kl_plugin *klw_plugin_at(int64_t id);
/* Microseconds on a monotonic clock. */
double klw_now_us(void);
/* Evict the host's last-level cache without leaving dirty lines. */
int klw_flush_host_caches(void);

/* {"op":"profile"}: hardware counters of one launch (op_profile.c). */
void klw_op_profile(json_object *req);
/* {"op":"metric_passes"}: check names and count passes, offline for a
 * named chip or for this device (op_profile.c). */
void klw_op_metric_passes(json_object *req);

#endif /* KLW_WORKER_INTERNAL_H */
