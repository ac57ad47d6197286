/* {"op":"check"}: the candidate against the oracle on fresh seeds, with
 * poisoned outputs (a second pattern re-checks an element equal to the
 * first), inputs that must stay intact, and outputs that must be final
 * once launch and sync returned (work after return).
 *
 * Per seed the candidate runs first and the oracle after it, so that no
 * candidate code runs while the oracle's outputs wait on the device for
 * the comparison (check.c); outputs kept from an earlier check
 * ("keep_oracle", instances.c) are proved unchanged just before they are
 * compared with. Device plugins compare, snapshot and check inputs on the
 * device, without reading a buffer back. With "pool":1 the instances come
 * from the pool and go back to it. Each seed's result says how long the
 * work-after-return pause and the oracle took (settle_ms, oracle_ms) and
 * whether kept outputs served (oracle_kept). */
#define _GNU_SOURCE
#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "worker_internal.h"

/* Launch the candidate on inputs of `seed` with poison pattern `poison`;
 * *launch_us is the wall time of launch and sync. -2 when the candidate's
 * launch or sync failed (its own doing: a bad geometry, a launcher breaking
 * the launch contract), -1 when preparing did. */
static int run_candidate(const kl_plugin *pl, void *inst, int shape, bool first,
                         uint64_t seed, int poison, double *launch_us,
                         klw_tally *t) {
  memset(t, 0, sizeof(*t));
  if (pl->prepare(inst, seed, poison)) {
    snprintf(t->detail, sizeof(t->detail), "%s", pl->last_error(inst));
    return -1;
  }
  double t0 = klw_now_us();
  if (klw_launch(pl, inst) || pl->sync(inst)) {
    snprintf(t->detail, sizeof(t->detail), "launch failed: %s",
             klw_launch_error(pl, inst));
    return -2;
  }
  *launch_us = klw_now_us() - t0;
  klw_work_checked(pl, shape, first); /* what a timed launch must run too */
  return 0;
}

/* ---- work after return ----------------------------------------------------
 */

/* Threads of this process that are running (state R) or in an
 * uninterruptible wait (D), the calling thread excluded. */
static int busy_threads(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  pid_t self = (pid_t)syscall(SYS_gettid);
  int busy = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || strtol(e->d_name, NULL, 10) == self) continue;
    char path[320], buf[256];
    snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')'); /* comm may hold spaces */
    if (close_paren && (close_paren[2] == 'R' || close_paren[2] == 'D')) busy++;
  }
  closedir(d);
  return busy;
}

/* The outputs must be final once launch and sync have returned: copy them,
 * wait a while (twice the launch, 2 ms to 100 ms), compare. Bytes that
 * changed were written by work the call did not wait for (a thread it left
 * running, a stream nobody synchronised), which no timer of the call sees.
 * Plugins that can keep the copy on the device (snapshot, changed_bytes:
 * CUDA's and the Python worker's) do; others, and a snapshot that fails,
 * are read back. Host plugins also may not leave threads running.
 * Adds to *late_bytes and *threads. */
static void settle_check(const kl_plugin *pl, void *inst, double launch_us,
                         uint64_t *late_bytes, int *threads) {
  void *before[256] = {0};
  bool snapped[256] = {0};
  bool device = KLW_ENTRY(pl, snapshot) && KLW_ENTRY(pl, changed_bytes) &&
                !klw_host_checks();
  for (int p = 0; p < pl->nparams; p++) {
    if (!klw_is_checked(pl, p)) continue;
    /* a snapshot that fails (no device memory for the copy) is read back */
    if (device && (snapped[p] = pl->snapshot(inst, p) == 0)) continue;
    uint64_t bytes = pl->buffer_bytes(inst, p);
    if ((before[p] = malloc(bytes ? (size_t)bytes : 1)))
      pl->read(inst, p, before[p], bytes);
  }
  double wait_us = 2 * launch_us;
  wait_us = wait_us < 2000 ? 2000 : wait_us > 100000 ? 100000 : wait_us;
  struct timespec ts = {0, (long)(wait_us * 1000)};
  nanosleep(&ts, NULL);
  if (strcmp(pl->backend, "host") == 0) *threads += busy_threads();
  for (int p = 0; p < pl->nparams; p++) {
    uint64_t n = 0;
    if (snapped[p] && pl->changed_bytes(inst, p, &n) == 0) *late_bytes += n;
    if (!before[p]) continue;
    uint64_t bytes = pl->buffer_bytes(inst, p);
    unsigned char *after = malloc(bytes ? (size_t)bytes : 1);
    if (after && pl->read(inst, p, after, bytes) == 0)
      for (uint64_t i = 0; i < bytes; i++)
        *late_bytes += after[i] != ((unsigned char *)before[p])[i];
    free(after);
    free(before[p]);
  }
}

/* The tally's scale: the output nearest a trivial one, its relative L2
 * error and each trivial output's, and how many of a trivial output's
 * elements the elementwise tolerance would reject. */
static json_object *scale_json(const klw_tally *t) {
  static const char *const names[KL_PLUGIN_NTRIVIAL] = {"zeros", "mean",
                                                        "rolled", "transposed"};
  json_object *s = json_object_new_object(), *rel = json_object_new_object(),
              *bad = json_object_new_object();
  json_object_object_add(s, "param", json_object_new_string(t->scale_param));
  json_object_object_add(s, "rel_l2", json_object_new_double(t->rel_l2));
  for (int k = 0; k < KL_PLUGIN_NTRIVIAL; k++) {
    if (t->trivial_rel[k] < 0) continue;
    json_object_object_add(rel, names[k],
                           json_object_new_double(t->trivial_rel[k]));
    json_object_object_add(bad, names[k],
                           json_object_new_int64((int64_t)t->trivial_bad[k]));
  }
  json_object_object_add(s, "trivial", rel);
  json_object_object_add(s, "trivial_rejected", bad);
  json_object_object_add(s, "elements",
                         json_object_new_int64((int64_t)t->elements));
  json_object_object_add(s, "rows", json_object_new_int64((int64_t)t->rows));
  json_object_object_add(s, "ref_rms", json_object_new_double(t->ref_rms));
  json_object_object_add(s, "max_ulp", json_object_new_double(t->max_ulp));
  return s;
}

static json_object *seed_result(uint64_t seed, bool correct,
                                const char *detail) {
  json_object *r = json_object_new_object();
  json_object_object_add(r, "seed", json_object_new_int64((int64_t)seed));
  json_object_object_add(r, "correct", json_object_new_boolean(correct));
  json_object_object_add(r, "detail", json_object_new_string(detail));
  return r;
}

void klw_op_check(json_object *req) {
  const kl_plugin *pl = klw_plugin_at(klw_get_int(req, "plugin", -1));
  int64_t oracle_id = klw_get_int(req, "oracle", -1);
  const kl_plugin *orc = oracle_id >= 0 ? klw_plugin_at(oracle_id) : NULL;
  int shape = (int)klw_get_int(req, "shape", 0);
  bool pooled = klw_get_int(req, "pool", 0) != 0;
  json_object *seeds;
  if (!pl || (oracle_id >= 0 && !orc) ||
      !json_object_object_get_ex(req, "seeds", &seeds)) {
    klw_reply_error("check: bad plugin, oracle or seeds");
    return;
  }
  if (orc && orc->nparams != pl->nparams) {
    klw_reply_error("check: oracle and candidate have different signatures");
    return;
  }
  void *inst = NULL;
  klw_want want = KLW_WANT_INIT(orc, shape, pooled);
  want.keep = (int)klw_get_int(req, "keep_oracle", -1);
  json_object *results = NULL;
  char err[256];
  bool all_correct = true, replied = false;
  bool made = false; /* inst is new: its first launch is in this check */
  if (pl->nparams > 256 || klw_instance_take(pl, shape, pooled, &inst, &made)) {
    klw_reply_error("check: create: %s", pl->last_error(NULL));
    return;
  }
  results = json_object_new_array();
  size_t nseeds = json_object_array_length(seeds);
  for (size_t i = 0; i < nseeds; i++) {
    uint64_t seed =
        (uint64_t)json_object_get_int64(json_object_array_get_idx(seeds, i));
    klw_tally t, t2;
    double launch_us = 0;
    int ran =
        run_candidate(pl, inst, shape, made && i == 0, seed, 0, &launch_us, &t);
    if (ran == -2) { /* the candidate's verdict, not the worker's error */
      json_object_array_add(results, seed_result(seed, false, t.detail));
      all_correct = false;
      continue;
    }
    if (ran) {
      klw_reply_error("check: %s", t.detail);
      goto done;
    }
    uint64_t late_bytes = 0;
    int threads = 0;
    double t0 = klw_now_us();
    /* an instance's first launch (modules loaded, scratch made) says
     * nothing of how long the kernel's own work runs: the least pause */
    settle_check(pl, inst, made && i == 0 ? 0 : launch_us, &late_bytes,
                 &threads);
    double settle_us = klw_now_us() - t0;
    uint64_t inputs_written = 0;
    char input_detail[160] = "";
    for (int p = 0; p < pl->nparams; p++)
      if (pl->param_roles[p] == KL_PLUGIN_ROLE_INPUT &&
          !pl->input_intact(inst, p)) {
        if (!inputs_written)
          snprintf(input_detail, sizeof(input_detail),
                   "%s: input written by the kernel", pl->param_names[p]);
        inputs_written++;
      }
    /* the oracle's outputs on the same inputs, made after the candidate ran
     * (or kept from an earlier check and proved unchanged now) */
    t0 = klw_now_us();
    int rc = klw_want_compute(&want, pl, inst, seed, err, sizeof(err));
    double oracle_us = klw_now_us() - t0;
    bool kept = want.kept_hit;
    if (rc || klw_compare_outputs(pl, inst, &want, &t, true) < 0) {
      klw_reply_error("check: %s", rc ? err : t.detail);
      goto done;
    }
    /* An element equal to the first poison pattern may be a real result:
     * run once more with the second pattern (the oracle again after it)
     * and keep the smaller count. */
    if (t.unwritten > 0 &&
        run_candidate(pl, inst, shape, false, seed, 1, &launch_us, &t2) == 0 &&
        klw_want_compute(&want, pl, inst, seed, err, sizeof(err)) == 0 &&
        klw_compare_outputs(pl, inst, &want, &t2, true) == 0 &&
        t2.unwritten < t.unwritten)
      t = t2;
    bool correct = !t.mismatches && !inputs_written;
    all_correct &= correct && !late_bytes && !threads;
    json_object *r =
        seed_result(seed, correct, t.detail[0] ? t.detail : input_detail);
    json_object_object_add(r, "mismatches",
                           json_object_new_int64((int64_t)t.mismatches));
    json_object_object_add(r, "unwritten",
                           json_object_new_int64((int64_t)t.unwritten));
    json_object_object_add(r, "nonfinite",
                           json_object_new_int64((int64_t)t.nonfinite));
    json_object_object_add(r, "inputs_written",
                           json_object_new_int64((int64_t)inputs_written));
    json_object_object_add(r, "max_abs_err",
                           json_object_new_double(t.max_abs_err));
    json_object_object_add(r, "late_bytes",
                           json_object_new_int64((int64_t)late_bytes));
    json_object_object_add(r, "busy_threads", json_object_new_int(threads));
    json_object_object_add(r, "settle_ms",
                           json_object_new_double(settle_us / 1000.0));
    json_object_object_add(r, "oracle_ms",
                           json_object_new_double(oracle_us / 1000.0));
    json_object_object_add(r, "oracle_kept", json_object_new_boolean(kept));
    if (t.scaled) json_object_object_add(r, "scale", scale_json(&t));
    json_object_array_add(results, r);
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object_object_add(o, "results", results);
  results = NULL;
  klw_reply(o);
  replied = true;
done:
  json_object_put(results);
  klw_want_release(&want, pl);
  /* a candidate that failed a check is not used again in this evaluation:
   * its instance is not kept for one */
  klw_instance_give(pl, shape, inst, pooled && all_correct && replied);
}
