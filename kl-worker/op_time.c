/* {"op":"time"}: time one plugin, or two interleaved, with the sampler
 * (sampler.c) and the timer their backend needs (timer_host.c for host
 * code, timer_cupti.c for device code); then the stale_outputs gate: the
 * outputs the candidate's last timed launch left are checked against the
 * oracle on the same inputs, varied as that sample's were. With "pool":1
 * the request's instances (the first placement set, the gate's oracle) come
 * from the pool and go back to it (instances.c); the other placement sets
 * are made for the request alone. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernlab/time_request.h"
#include "worker_internal.h"

/* After timing: compare the outputs `inst` holds from its last timed launch
 * with the oracle's outputs on the same inputs (plugin `orc` run on `seed`
 * and varied by `vary` as inst was, or, when orc is NULL, the plugin's own
 * reference), adding to *t. Returns 0, or -1 with t->detail when the
 * comparison itself could not run. */
static int verify_timed(const kl_plugin *pl, void *inst, int shape,
                        const kl_plugin *orc, uint64_t seed, uint64_t vary,
                        bool pooled, klw_tally *t) {
  klw_want want = KLW_WANT_INIT(orc, shape, pooled);
  want.vary = vary;
  int rc = -1;
  char err[sizeof(t->detail)];
  if (klw_want_compute(&want, pl, inst, seed, err, sizeof(err))) {
    snprintf(t->detail, sizeof(t->detail), "%s", err);
    goto done;
  }
  if (klw_compare_outputs(pl, inst, &want, t, false) < 0) goto done;
  if (t->mismatches) {
    char first[sizeof(t->detail)];
    snprintf(first, sizeof(first), "%s", t->detail);
    char varied[48] = "";
    if (vary)
      snprintf(varied, sizeof(varied), " varied by %llu",
               (unsigned long long)vary);
    snprintf(t->detail, sizeof(t->detail),
             "%.64s, after timing, on the "
             "inputs of seed %llu%s",
             first, (unsigned long long)seed, varied);
  }
  rc = 0;
done:
  klw_want_release(&want, pl);
  return rc;
}

/* The stale_outputs gate for the timed candidate: the outputs its last
 * placement block left (inputs of klw_block_seed(seed, block)) are checked
 * against the oracle; restore() re-poisons outputs before every sample, so
 * work skipped in the last sample shows. When that block is the first one,
 * whose inputs the warm-up also saw, the instance first gets fresh inputs
 * and two more launches on them, as timing would: a result kept from the
 * warm-up cannot pass, nor can a kernel that does less when its inputs
 * repeat, and each is varied first where samples were. Those launches
 * are the timer's (s, timer->relaunch): under graphs, replays of the
 * instance's graph. */
static int verify_last(klw_sampling *s, const klw_timer *timer, void *inst,
                       const kl_plugin *orc, uint64_t seed, size_t block,
                       klw_tally *t) {
  const kl_plugin *pl = s->pl[s->np - 1];
  int shape = s->tr->shape;
  bool pooled = s->tr->pooled;
  uint64_t vary = s->varied[s->np - 1];
  if (block == 0) {
    block = 1;
    bool failed = pl->prepare(inst, klw_block_seed(seed, block), 0) != 0;
    vary = 0;
    for (int i = 0; i < 2 && !failed; i++) {
      if (s->vary) {
        vary = klw_vary_seed(seed, s->tr->max_n + (size_t)i);
        failed = pl->vary(inst, vary) != 0;
      }
      failed = failed || pl->restore(inst) != 0;
      if (!failed && timer->relaunch) {
        failed = timer->relaunch(s, s->np - 1, inst) != 0;
        if (failed) {
          snprintf(t->detail, sizeof(t->detail), "%.150s", s->err);
          return -1;
        }
      } else if (!failed) {
        failed = klw_launch(pl, inst) != 0;
      }
      failed = failed || pl->sync(inst) != 0;
    }
    if (failed) {
      snprintf(t->detail, sizeof(t->detail), "%s", klw_launch_error(pl, inst));
      return -1;
    }
  }
  return verify_timed(pl, inst, shape, orc, klw_block_seed(seed, block), vary,
                      pooled, t);
}

/* The "verify" member of a time reply: one entry per timed plugin. */
static json_object *verify_json(const klw_tally *t, int np) {
  json_object *arr = json_object_new_array();
  for (int k = 0; k < np; k++) {
    json_object *v = json_object_new_object();
    json_object_object_add(v, "correct",
                           json_object_new_boolean(t[k].mismatches == 0));
    json_object_object_add(v, "mismatches",
                           json_object_new_int64((int64_t)t[k].mismatches));
    json_object_object_add(v, "unwritten",
                           json_object_new_int64((int64_t)t[k].unwritten));
    json_object_object_add(v, "detail", json_object_new_string(t[k].detail));
    json_object_array_add(arr, v);
  }
  return arr;
}

static klw_time_req parse_time_req(json_object *req) {
  klw_time_req t;
  t.shape = (int)klw_get_int(req, "shape", 0);
  t.cold = (int)klw_get_int(req, KL_TIME_KEY_COLD, KL_TIME_DEFAULT_COLD);
  t.warmup = (int)klw_get_int(req, KL_TIME_KEY_WARMUP, KL_TIME_DEFAULT_WARMUP);
  t.min_n = (size_t)klw_get_int(req, KL_TIME_KEY_MIN_SAMPLES,
                                KL_TIME_DEFAULT_MIN_SAMPLES);
  t.max_n = (size_t)klw_get_int(req, KL_TIME_KEY_MAX_SAMPLES,
                                KL_TIME_DEFAULT_MAX_SAMPLES);
  t.target = klw_get_double(req, KL_TIME_KEY_TARGET_REL_CI,
                            KL_TIME_DEFAULT_TARGET_REL_CI);
  t.cap_us = klw_get_double(req, KL_TIME_KEY_TIME_CAP_MS,
                            KL_TIME_DEFAULT_TIME_CAP_MS) *
             1000.0;
  t.seed = (uint64_t)klw_get_int(req, KL_TIME_KEY_SEED, KL_TIME_DEFAULT_SEED);
  t.block_rounds = (size_t)klw_get_int(req, KL_TIME_KEY_BLOCK_ROUNDS,
                                       KL_TIME_DEFAULT_BLOCK_ROUNDS);
  t.decide_gain = klw_get_double(req, KL_TIME_KEY_DECIDE_GAIN_PCT,
                                 KL_TIME_DEFAULT_DECIDE_GAIN_PCT);
  t.verify = (int)klw_get_int(req, KL_TIME_KEY_VERIFY, KL_TIME_DEFAULT_VERIFY);
  t.oracle = (int)klw_get_int(req, KL_TIME_KEY_ORACLE, KL_TIME_DEFAULT_ORACLE);
  t.pooled = klw_get_int(req, "pool", 0) != 0;
  t.probe_true_us = klw_get_double(req, KL_TIME_KEY_PROBE_TRUE_US,
                                   KL_TIME_DEFAULT_PROBE_TRUE_US);
  if (!(t.probe_true_us > 0 && t.probe_true_us < 1000)) t.probe_true_us = 0;
  json_object *launch;
  t.graph = json_object_object_get_ex(req, "launch", &launch) &&
            strcmp(json_object_get_string(launch), "graph") == 0;
  if (t.block_rounds < 1) t.block_rounds = 1;
  if (t.min_n < 1) t.min_n = 1;
  if (t.max_n < t.min_n) t.max_n = t.min_n;
  return t;
}

#ifdef KL_HAVE_CUPTI
/* {"ok":false,"code":"calibrate","uuid":U,"driver":D}: time again with
 * "probe_true_us" (libkernlab/worker/calibration.c). */
static void ask_calibration(void) {
  char uuid[48];
  int driver = 0;
  klw_device_identity(uuid, sizeof(uuid), &driver);
  json_object *o =
      klw_failure("calibrate", "time: the device's calibration is wanted");
  json_object_object_add(o, "uuid", json_object_new_string(uuid));
  json_object_object_add(o, "driver", json_object_new_int(driver));
  klw_reply(o);
}
#endif

/* Whether a request varies its inputs between samples: its outputs are
 * verified after timing, and every plugin it runs, the oracle too, has
 * vary() (the generated host and CUDA plugins; not the Python worker's).
 * KERNLAB_GATES_OFF=vary: for measuring what it costs. */
static bool vary_wanted(const klw_time_req *tr, const kl_plugin *const *pl,
                        int np) {
  if (!tr->verify || klw_gate_off("vary")) return false;
  const kl_plugin *orc = tr->oracle >= 0 ? klw_plugin_at(tr->oracle) : NULL;
  if (tr->oracle >= 0 && !(orc && KLW_ENTRY(orc, vary))) return false;
  for (int k = 0; k < np; k++)
    if (!KLW_ENTRY(pl[k], vary)) return false;
  return true;
}

void klw_op_time(json_object *req) {
  /* an enabled range profiler (kept between profiles) slows what is timed
   * after it: transpose at 4k x 4k read 256.5 us against 253.8 us */
  klw_profile_release();
  json_object *ids;
  if (!json_object_object_get_ex(req, "plugins", &ids)) {
    klw_reply_error("time: no plugins");
    return;
  }
  int np = (int)json_object_array_length(ids);
  if (np < 1 || np > 2) {
    klw_reply_error("time: one or two plugins, not %d", np);
    return;
  }
#ifdef KL_HAVE_CUPTI
  /* the CUPTI timer wants the device's calibration, or to be told that
   * there is none: a request that says neither is answered with the
   * device's identity, which the parent's calibration is kept under */
  const kl_plugin *first =
      klw_plugin_at(json_object_get_int64(json_object_array_get_idx(ids, 0)));
  json_object *given;
  if (first && first->flush &&
      !json_object_object_get_ex(req, KL_TIME_KEY_PROBE_TRUE_US, &given)) {
    ask_calibration();
    return;
  }
#endif
  klw_time_req tr = parse_time_req(req);
  const kl_plugin *pl[2] = {0};
  void *inst[2] = {0};
  klw_sampling s;
  memset(&s, 0, sizeof(s));
  s.tr = &tr;
  s.pl = pl;
  s.inst = inst;
  s.np = np;
  const klw_timer *timer = NULL;
  bool timed = false;
  double t_setup = klw_now_us();
  for (int k = 0; k < np; k++) {
    int64_t id = json_object_get_int64(json_object_array_get_idx(ids, k));
    if (!(pl[k] = klw_plugin_at(id))) {
      klw_reply_error("time: no plugin %d", (int)id);
      goto done;
    }
    if (klw_instance_take(pl[k], tr.shape, tr.pooled, &inst[k], NULL)) {
      inst[k] = NULL;
      klw_reply_error("time: create: %s", pl[k]->last_error(NULL));
      goto done;
    }
    if (pl[k]->prepare(inst[k], tr.seed, 0)) {
      klw_reply_error("time: prepare: %s", pl[k]->last_error(inst[k]));
      goto done;
    }
  }
  if (pl[0]->flush) { /* a device plugin: CUPTI times it */
    for (int k = 1; k < np; k++)
      if (!pl[k]->flush) {
        klw_reply_error("time: a device and a host plugin cannot be compared");
        goto done;
      }
#ifdef KL_HAVE_CUPTI
    timer = &klw_timer_cupti;
#else
    klw_reply_error("time: this kl-worker was built without CUPTI, so it "
                    "cannot time device kernels");
    goto done;
#endif
  } else if (tr.graph) {
    klw_reply_error("time: --launch graph times device kernels; a host "
                    "plugin has no CUDA graph to replay");
    goto done;
  } else {
    timer = &klw_timer_host;
  }
  s.vary = vary_wanted(&tr, pl, np);
  const char *reason;
  double start_us, setup_us = klw_now_us() - t_setup;
  if (klw_sample(&s, timer, &reason, &start_us) < 0) {
    if (s.gate) {
      char text[sizeof(s.err) + 16];
      snprintf(text, sizeof(text), "time: %s", s.err);
      klw_reply_cheat(s.gate, s.culprit, text);
    } else {
      klw_reply_error("time: %s", s.err);
    }
    goto done;
  }
  klw_tally vt[2];
  memset(vt, 0, sizeof(vt));
  void *last = NULL;
  size_t block = 0;
  timer->last(&s, &last, &block);
  double t_verify = klw_now_us();
  if (tr.verify && verify_last(&s, timer, last,
                               tr.oracle >= 0 ? klw_plugin_at(tr.oracle) : NULL,
                               tr.seed, block, &vt[np - 1]) < 0) {
    klw_reply_error("time: verify: %s", vt[np - 1].detail);
    goto done;
  }
  double verify_us = klw_now_us() - t_verify;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object *costs = json_object_new_object();
  const struct {
    const char *name;
    double us;
  } cost[] = {{"setup_ms", setup_us},   {"warmup_ms", s.warmup_us},
              {"place_ms", s.place_us}, {"queue_ms", s.queue_us},
              {"wait_ms", s.wait_us},   {"collect_ms", s.collect_us},
              {"verify_ms", verify_us}};
  for (size_t i = 0; i < sizeof(cost) / sizeof(cost[0]); i++)
    json_object_object_add(costs, cost[i].name,
                           json_object_new_double(cost[i].us / 1000.0));
  json_object_object_add(o, "costs", costs);
  if (tr.verify) json_object_object_add(o, "verify", verify_json(vt, np));
  if (s.vary) json_object_object_add(o, "varied", json_object_new_boolean(1));
  json_object *all = json_object_new_array();
  for (int k = 0; k < np; k++) {
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < s.n; i++)
      json_object_array_add(arr, json_object_new_double(s.us[k][i]));
    json_object_array_add(all, arr);
  }
  json_object_object_add(o, "samples", all);
  timer->reply(&s, o);
  json_object_object_add(o, "stop_reason", json_object_new_string(reason));
  /* the sampling wall: placement sets made between windows and the
   * stale-outputs gate are the costs' place_ms and verify_ms */
  json_object_object_add(
      o, "wall_ms",
      json_object_new_double(
          (klw_now_us() - start_us - s.ready_us - verify_us) / 1000.0));
  json_object_object_add(o, "block_rounds",
                         json_object_new_int64((int64_t)s.block_rounds));
  json_object_object_add(o, "stretched", json_object_new_boolean(s.stretched));
  klw_reply(o);
  timed = true;
done:
  if (timer) timer->stop(&s);
  for (int k = 0; k < np; k++) {
    /* a device instance after the first runs on the first one's stream
     * (share_stream), which it does not own: not one to keep */
    if (pl[k] && inst[k])
      klw_instance_give(pl[k], tr.shape, inst[k],
                        tr.pooled && timed && (k == 0 || !pl[k]->flush));
    free(s.us[k]);
    free(s.mhz[k]);
  }
}
