/* kl_evaluate_dir: the evaluating side of a batch folder (batch.c has
 * its format): the evaluations of DIR/jobs.json without a result yet, run
 * on this host's GPUs by a local executor, each result written as it
 * finishes. One `kl evaluate` per folder at a time: it holds DIR/.lock. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "../core/json.h"
#include "exec_internal.h"
#include "kernlab/time_request.h"

static uint64_t u64_of(json_object *o, const char *key) {
  const char *t = kl__json_text(o, key);
  return t ? strtoull(t, NULL, 10) : 0;
}

static int plugin_path(char **to, const char *dir, json_object *plugins,
                       const char *key) {
  const char *rel = kl__json_text(plugins, key);
  if (!rel) return 0;
  if (strstr(rel, "..") || rel[0] == '/')
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s/jobs.json: plugin path '%s' leaves the folder", dir,
                     rel);
  return (*to = kl__path_join(dir, rel)) ? 0 : kl__error_oom();
}

/* One evaluation of jobs.json, its strings pointing into the document. */
static int eval_from(kl__eval *e, const char *dir, json_object *j) {
  memset(e, 0, sizeof(*e));
  kl_bench_options o = KL_BENCH_OPTIONS_INIT;
  json_object *v = kl__json_get(j, "compare"), *t = kl__json_get(j, "time"),
              *pl = kl__json_get(j, "plugins");
  e->compare = v && json_object_get_boolean(v);
  o.candidate_name = kl__json_text(j, "name");
  o.shape = kl__json_text(j, "shape");
  o.profile = kl__json_text(j, "profile");
  o.check_seeds = (int)kl__json_num(j, "check_seeds");
  o.seed = u64_of(j, "seed");
  o.check_seed = u64_of(j, "check_seed"); /* 0 in batches written before it */
  o.timeout_ms = (int)kl__json_num(j, "timeout_ms");
  if (t) {
    o.time.cold = (int)kl__json_num(t, KL_TIME_KEY_COLD);
    o.time.warmup = (int)kl__json_num(t, KL_TIME_KEY_WARMUP);
    o.time.min_samples = (size_t)kl__json_num(t, KL_TIME_KEY_MIN_SAMPLES);
    o.time.max_samples = (size_t)kl__json_num(t, KL_TIME_KEY_MAX_SAMPLES);
    o.time.target_rel_ci = kl__json_num(t, KL_TIME_KEY_TARGET_REL_CI);
    o.time.time_cap_ms = (int)kl__json_num(t, KL_TIME_KEY_TIME_CAP_MS);
    o.time.seed = u64_of(t, KL_TIME_KEY_SEED);
    o.time.block_rounds = (size_t)kl__json_num(t, KL_TIME_KEY_BLOCK_ROUNDS);
    o.time.decide_gain_pct = kl__json_num(t, KL_TIME_KEY_DECIDE_GAIN_PCT);
  }
  e->plugins.compile_seconds = kl__json_num(j, "compile_seconds");
  e->plugins.oracle_cached =
      (v = kl__json_get(j, "oracle_cached")) && json_object_get_boolean(v);
  e->plugins.candidate_cached =
      (v = kl__json_get(j, "candidate_cached")) && json_object_get_boolean(v);
  if (!pl)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s/jobs.json: an evaluation without plugins", dir);
  int rc;
  if ((rc = kl__json_dup(&e->plugins.warnings, j, "warnings")) < 0) return rc;
  if ((rc = plugin_path(&e->plugins.oracle, dir, pl, "oracle")) < 0 ||
      (rc = plugin_path(&e->plugins.against, dir, pl, "against")) < 0 ||
      (rc = plugin_path(&e->plugins.candidate, dir, pl, "candidate")) < 0)
    return rc;
  /* a candidate's presence is what its plugin says */
  o.candidate = e->plugins.candidate ? "(built)" : NULL;
  e->o = o;
  e->prebuilt = true;
  return 0;
}

typedef struct evaluating {
  const char *dir;
  json_object **ids; /* per evaluation: its id */
  kl__eval *ev;
} evaluating;

/* As each evaluation finishes (on its thread): its result file. */
static void write_result(kl__eval *e, void *payload) {
  evaluating *x = payload;
  size_t i = (size_t)(e - x->ev);
  const char *id = json_object_get_string(x->ids[i]);
  kl_buf b = KL_BUF_INIT, js = KL_BUF_INIT, path = KL_BUF_INIT;
  int rc = 0;
  kl__buf_puts(&b, "{\"id\":");
  kl__buf_json_string(&b, id);
  kl__buf_printf(&b, ",\"seconds\":%.3f,\"ok\":%s", e->seconds,
                 e->rc < 0 ? "false" : "true");
  if (e->rc < 0) {
    kl__buf_printf(&b, ",\"code\":%d,\"error\":", e->rc);
    kl__buf_json_string(&b, e->error);
  } else {
    kl__buf_puts(&b, ",\"where\":");
    kl__buf_puts(&b, e->where ? e->where : "null");
    kl__buf_puts(&b, ",\"report\":");
    rc = kl_report_json(&js, e->report);
    kl__buf_put(&b, js.ptr ? js.ptr : "null", js.ptr ? js.size : 4);
  }
  kl__buf_puts(&b, "}\n");
  kl__buf_printf(&path, "%s/results/%s.json", x->dir, id);
  if (rc < 0 || (rc = kl__buf_status(&b)) < 0 ||
      (rc = kl__buf_status(&path)) < 0 ||
      (rc = kl__write_file_atomic(path.ptr, b.ptr, b.size)) < 0) {
    const kl_error *err = kl_error_last();
    fprintf(stderr, "kl evaluate: %s: %s\n", id,
            err ? err->message : "cannot write the result");
  }
  kl_buf_dispose(&b);
  kl_buf_dispose(&js);
  kl_buf_dispose(&path);
}

static bool has_result(const char *dir, const char *id) {
  kl_buf p = KL_BUF_INIT;
  bool yes = kl__buf_printf(&p, "%s/results/%s.json", dir, id) == 0 &&
             kl__is_file(p.ptr);
  kl_buf_dispose(&p);
  return yes;
}

int kl_evaluate_dir(const char *dir_in, const char *devices,
                    const char *worker_path) {
  char dir[PATH_MAX];
  if (!realpath(dir_in, dir))
    return kl__error_os(KL_ENOTFOUND, dir_in, "no such batch folder");
  kl_buf p = KL_BUF_INIT, text = KL_BUF_INIT, results = KL_BUF_INIT;
  json_object *doc = NULL, **ids = NULL;
  kl_case *c = NULL;
  char *case_path = NULL;
  kl__eval *ev = NULL;
  kl_executor *ex = NULL;
  size_t n = 0;
  int lock = -1;
  int rc = kl__buf_printf(&p, "%s/.lock", dir);
  if (rc < 0) goto done;
  if ((lock = open(p.ptr, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
    rc = kl__error_os(KL_EIO, p.ptr, "cannot open the batch's lock");
    goto done;
  }
  if (flock(lock, LOCK_EX) < 0) {
    rc = kl__error_os(KL_EIO, p.ptr, "cannot lock the batch");
    goto done;
  }
  p.size = 0;
  if ((rc = kl__buf_printf(&p, "%s/jobs.json", dir)) < 0 ||
      (rc = kl__read_file(&text, p.ptr)) < 0 ||
      (rc = kl__json_parse(&doc, text.ptr, p.ptr, "batch")) < 0)
    goto done;
  json_object *list = kl__json_get(doc, "evaluations");
  const char *case_dir = kl__json_text(doc, "case");
  if (!list || !json_object_is_type(list, json_type_array) || !case_dir) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                   "%s: not a batch (no case or evaluations)", p.ptr);
    goto done;
  }
  case_path =
      case_dir[0] == '/' ? kl__strdup(case_dir) : kl__path_join(dir, case_dir);
  if (!case_path) {
    rc = kl__error_oom();
    goto done;
  }
  if ((rc = kl_case_load(&c, case_path, NULL)) < 0) goto done;
  size_t total = json_object_array_length(list);
  if (total && (!(ev = kl__calloc(total, sizeof(*ev))) ||
                !(ids = kl__calloc(total, sizeof(*ids))))) {
    rc = kl__error_oom();
    goto done;
  }
  for (size_t i = 0; i < total; i++) {
    json_object *j = json_object_array_get_idx(list, i);
    json_object *id = kl__json_get(j, "id");
    const char *ids_text = id ? json_object_get_string(id) : "";
    if (!id || !ids_text[0] || strchr(ids_text, '/') || ids_text[0] == '.') {
      rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: evaluation %zu has no usable id", p.ptr, i);
      goto done;
    }
    if (has_result(dir, ids_text))
      continue; /* done by an earlier evaluator of this folder */
    ids[n] = id;
    if ((rc = eval_from(&ev[n++], dir, j)) < 0) goto done;
  }
  if (n == 0) goto done;
  kl_executor_options eo = KL_EXECUTOR_OPTIONS_INIT;
  eo.kind = "local";
  eo.devices = devices;
  eo.worker_path = worker_path;
  if ((rc = kl_executor_create(&ex, &eo)) < 0 ||
      (rc = kl__buf_printf(&results, "%s/results", dir)) < 0 ||
      (rc = kl__mkdir_p(results.ptr)) < 0 ||
      (rc = kl__executor_devices(ex, c)) < 0)
    goto done;
  evaluating x = {dir, ids, ev};
  rc = kl__local_evaluate(ex, c, ev, n, write_result, &x);
done:
  for (size_t i = 0; i < n; i++)
    kl__eval_dispose(&ev[i]);
  kl__free(ev);
  kl__free(ids);
  kl_executor_free(ex);
  kl_case_free(c);
  kl__free(case_path);
  json_object_put(doc);
  kl_buf_dispose(&p);
  kl_buf_dispose(&text);
  kl_buf_dispose(&results);
  if (lock >= 0) close(lock);
  return rc;
}
