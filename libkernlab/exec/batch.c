/* The batch folder: what the ssh and slurm executors ship, and what
 * `kl evaluate DIR` runs where the GPUs are (evaluate.c). This file writes
 * it on the controlling side and collects its results there.
 *
 *   DIR/jobs.json        {"version":1,"case":FOLDER,"evaluations":[...]}:
 *                        each evaluation's id, mode, plugins and bench
 *                        options (seeds as decimal strings: 64 bits)
 *   DIR/plugins/KEY.so   built here (the compile cache's names)
 *   DIR/case/            the case's files (ssh), or jobs.json names the
 *                        case's own folder on a shared filesystem (slurm)
 *   DIR/results/ID.json  one per finished evaluation, written atomically
 *                        as it finishes: a report, or why there is none
 *
 * An evaluation with a result is never run again, so a batch interrupted
 * anywhere (a dropped connection, a cancelled job) resumes where it
 * stopped. One `kl evaluate` per folder at a time: it holds DIR/.lock. */
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
#include "../core/sandbox.h"
#include "exec_internal.h"
#include "kernlab/time_request.h"

/* sep "key": "plugins/BASE" (or null) */
static int put_plugin(kl_buf *b, const char *sep, const char *key,
                      const char *path) {
  kl__buf_printf(b, "%s\"%s\":", sep, key);
  if (!path) {
    kl__buf_puts(b, "null");
    return kl__buf_status(b);
  }
  const char *base = strrchr(path, '/');
  kl_buf rel = KL_BUF_INIT;
  kl__buf_printf(&rel, "plugins/%s", base ? base + 1 : path);
  int rc = kl__buf_status(&rel);
  if (rc == 0) {
    kl__buf_json_string(b, rel.ptr);
    rc = kl__buf_status(b);
  }
  kl_buf_dispose(&rel);
  return rc;
}

static int copy_plugin(const char *dir, const char *path) {
  if (!path) return 0;
  const char *base = strrchr(path, '/');
  kl_buf to = KL_BUF_INIT, data = KL_BUF_INIT;
  int rc = kl__buf_printf(&to, "%s/plugins/%s", dir, base ? base + 1 : path);
  if (rc < 0 || kl__is_file(to.ptr)) goto done;
  if ((rc = kl__read_file(&data, path)) < 0) goto done;
  rc = kl__write_file_atomic(to.ptr, data.ptr ? data.ptr : "", data.size);
done:
  kl_buf_dispose(&to);
  kl_buf_dispose(&data);
  return rc;
}

static int eval_json(kl_buf *b, size_t i, const kl__eval *e, bool first) {
  const kl_bench_options *o = &e->o;
  const kl_time_options *t = &o->time;
  kl__buf_printf(b, "%s{\"id\":\"e%zu\",\"compare\":%s", first ? "" : ",", i,
                 e->compare ? "true" : "false");
  kl__buf_puts(b, ",\"name\":");
  kl__buf_json_string(b, o->candidate_name);
  kl__buf_puts(b, ",\"shape\":");
  kl__buf_json_string(b, o->shape);
  kl__buf_puts(b, ",\"profile\":");
  kl__buf_json_string(b, o->profile);
  if (e->plugins.warnings) { /* what the compiler said, for the report */
    kl__buf_puts(b, ",\"warnings\":");
    kl__buf_json_string(b, e->plugins.warnings);
  }
  kl__buf_puts(b, ",\"plugins\":{");
  put_plugin(b, "", "oracle", e->plugins.oracle);
  put_plugin(b, ",", "against", e->plugins.against);
  put_plugin(b, ",", "candidate", e->plugins.candidate);
  kl__buf_printf(
      b,
      "},\"compile_seconds\":%.6g,\"oracle_cached\":%s,"
      "\"candidate_cached\":%s,\"check_seeds\":%d,\"seed\":\"%" PRIu64 "\","
      "\"check_seed\":\"%" PRIu64 "\","
      "\"timeout_ms\":%d,\"time\":{",
      e->plugins.compile_seconds, e->plugins.oracle_cached ? "true" : "false",
      e->plugins.candidate_cached ? "true" : "false", o->check_seeds, o->seed,
      o->check_seed, o->timeout_ms);
  /* the time request's fields under their names (kernlab/time_request.h) */
  kl__buf_printf(b,
                 "\"%s\":%d,\"%s\":%d,\"%s\":%zu,\"%s\":%zu,\"%s\":%.17g,"
                 "\"%s\":%d,\"%s\":\"%" PRIu64 "\",\"%s\":%zu,\"%s\":%.17g}}",
                 KL_TIME_KEY_COLD, t->cold, KL_TIME_KEY_WARMUP, t->warmup,
                 KL_TIME_KEY_MIN_SAMPLES, t->min_samples,
                 KL_TIME_KEY_MAX_SAMPLES, t->max_samples,
                 KL_TIME_KEY_TARGET_REL_CI, t->target_rel_ci,
                 KL_TIME_KEY_TIME_CAP_MS, t->time_cap_ms, KL_TIME_KEY_SEED,
                 t->seed, KL_TIME_KEY_BLOCK_ROUNDS, t->block_rounds,
                 KL_TIME_KEY_DECIDE_GAIN_PCT, t->decide_gain_pct);
  return kl__buf_status(b);
}

/* The case's files without its records, into DIR/case, through tar. */
static int copy_case(const char *dir, const kl_case *c) {
  kl_buf to = KL_BUF_INIT;
  kl__run_result packed, un;
  memset(&packed, 0, sizeof(packed));
  memset(&un, 0, sizeof(un));
  int rc = kl__buf_printf(&to, "%s/case", dir);
  if (rc < 0 || (rc = kl__mkdir_p(to.ptr)) < 0) goto done;
  const char *pack[] = {"tar",
                        "-C",
                        kl_case_dir(c),
                        "--exclude=./runs",
                        "--exclude=./exports",
                        "--exclude=./*.jsonl",
                        "--exclude=./benchmark.csv",
                        "--exclude=./.*",
                        "-cf",
                        "-",
                        ".",
                        NULL};
  const char *unpack[] = {"tar", "-C", to.ptr, "-xf", "-", NULL};
  if ((rc = kl__exec_tar(&packed, pack, NULL, 0)) < 0) goto done;
  rc = kl__exec_tar(&un, unpack, packed.output.ptr, packed.output.size);
done:
  kl_buf_dispose(&packed.output);
  kl_buf_dispose(&un.output);
  kl_buf_dispose(&to);
  return rc;
}

int kl__batch_write(const char *dir, const kl_case *c, kl__eval *ev, size_t n,
                    bool copy, size_t *pending) {
  *pending = 0;
  /* build here: a candidate that does not compile is answered at once */
  for (size_t i = 0; i < n; i++) {
    kl__eval *e = &ev[i];
    if (e->report || e->prebuilt) continue;
    kl_report *failed = NULL;
    int rc = kl__bench_build(&e->plugins, &failed, c, &e->o, e->compare);
    if (rc < 0) return rc;
    e->report = failed;
    e->prebuilt = !failed;
  }
  for (size_t i = 0; i < n; i++)
    *pending += !ev[i].report;
  if (*pending == 0) return 0;
  kl__sandbox_dir_remove(dir); /* an earlier session's batch */
  kl_buf b = KL_BUF_INIT, sub = KL_BUF_INIT, path = KL_BUF_INIT;
  int rc = kl__buf_printf(&sub, "%s/plugins", dir);
  if (rc < 0 || (rc = kl__mkdir_p(sub.ptr)) < 0) goto done;
  if (copy && (rc = copy_case(dir, c)) < 0) goto done;
  kl__buf_puts(&b, "{\"version\":1,\"case\":");
  kl__buf_json_string(&b, copy ? "case" : kl_case_dir(c));
  kl__buf_puts(&b, ",\"evaluations\":[");
  bool first = true;
  for (size_t i = 0; i < n; i++) {
    if (ev[i].report) continue;
    if ((rc = copy_plugin(dir, ev[i].plugins.oracle)) < 0 ||
        (rc = copy_plugin(dir, ev[i].plugins.against)) < 0 ||
        (rc = copy_plugin(dir, ev[i].plugins.candidate)) < 0)
      goto done;
    eval_json(&b, i, &ev[i], first);
    first = false;
  }
  kl__buf_puts(&b, "]}\n");
  kl__buf_printf(&path, "%s/jobs.json", dir);
  if ((rc = kl__buf_status(&b)) < 0 || (rc = kl__buf_status(&path)) < 0)
    goto done;
  rc = kl__write_file_atomic(path.ptr, b.ptr, b.size);
done:
  kl_buf_dispose(&path);
  kl_buf_dispose(&b);
  kl_buf_dispose(&sub);
  return rc;
}

/* ---- back on the controlling side
 * -------------------------------------------- */

/* `where` from the evaluating host, with the executor and its job. */
static char *placed(json_object *where, const char *executor, const char *key,
                    const char *value) {
  json_object *w = json_object_new_object();
  if (!w) return NULL;
  json_object_object_add(w, "executor", json_object_new_string(executor));
  json_object_object_foreach(where, k, v) {
    if (strcmp(k, "executor") != 0)
      json_object_object_add(w, k, json_object_get(v));
  }
  if (key && value)
    json_object_object_add(w, key, json_object_new_string(value));
  char *out = kl__strdup(json_object_to_json_string_ext(
      w, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(w);
  return out;
}

int kl__batch_collect(const char *dir, kl__eval *ev, size_t n, size_t *missing,
                      const char *executor, const char *key,
                      const char *value) {
  *missing = 0;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    kl__eval *e = &ev[i];
    if (e->report || e->rc < 0) continue;
    kl_buf p = KL_BUF_INIT, text = KL_BUF_INIT;
    if (kl__buf_printf(&p, "%s/results/e%zu.json", dir, i) < 0) {
      rc = kl__error_oom();
      break;
    }
    json_object *doc = NULL, *rep;
    if (!kl__is_file(p.ptr)) {
      (*missing)++;
    } else if ((rc = kl__read_file(&text, p.ptr)) == 0 &&
               (rc = kl__json_parse(&doc, text.ptr, p.ptr, "result")) == 0) {
      json_object *ok = kl__json_get(doc, "ok");
      e->seconds = kl__json_num(doc, "seconds");
      if (!ok || !json_object_get_boolean(ok)) {
        const char *msg = kl__json_text(doc, "error");
        e->rc = kl__json_num(doc, "code") < 0 ? (int)kl__json_num(doc, "code")
                                              : KL_EIO;
        e->error = kl__strdup(msg ? msg : "the evaluation failed there");
      } else if (!(rep = kl__json_get(doc, "report"))) {
        rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE, "%s: no report", p.ptr);
      } else if ((rc = kl__report_from_json(&e->report, rep, p.ptr)) == 0) {
        json_object *w = kl__json_get(doc, "where");
        if (w && !(e->where = placed(w, executor, key, value)))
          rc = kl__error_oom();
      }
    }
    json_object_put(doc);
    kl_buf_dispose(&p);
    kl_buf_dispose(&text);
  }
  return rc;
}
