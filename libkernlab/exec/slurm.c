/* The slurm executor: build here, write the batch under the run's folder
 * (on a filesystem the nodes share), submit `kl evaluate DIR` with sbatch,
 * record the job id, wait for it to leave the queue, read the results.
 *
 * sbatch --parsable answers with the id at once; squeue says when the job
 * is gone and scontrol how it ended (CANCELLED, NODE_FAIL, FAILED,
 * PREEMPTED, TIMEOUT...). Whatever the state, the results the job wrote
 * count; what it left undone is submitted again, up to `retries` more
 * jobs, and `kl evaluate` never redoes a finished evaluation. Each job is
 * a line of the run's executor.jsonl when submitted and when it ended. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/json.h"
#include "../records/records.h"
#include "exec_internal.h"

static int slurm_call(kl__run_result *res, const char *const *argv) {
  int rc = kl__exec_run(res, argv, NULL, 0, 60000, 1 << 20);
  if (rc == KL_ENOTFOUND)
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                     "%s: not found: the slurm executor needs Slurm's "
                     "commands in PATH",
                     argv[0]);
  return rc;
}

static void trim(char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r'))
    s[--n] = 0;
}

/* Submit DIR/job.sh: the job id, or an error with sbatch's words. */
static int submit(char *id, size_t cap, kl_executor *ex, const char *dir,
                  const char *name) {
  char out[4200], jobname[128], gres[32], part[256];
  snprintf(out, sizeof(out), "--output=%s/slurm-%%j.out", dir);
  snprintf(jobname, sizeof(jobname), "--job-name=kl-%s", name);
  snprintf(gres, sizeof(gres), "--gres=gpu:%d", ex->gpus);
  snprintf(part, sizeof(part), "--partition=%s", ex->partition);
  char script[4200];
  snprintf(script, sizeof(script), "%s/job.sh", dir);
  const char *argv[64];
  size_t k = 0;
  argv[k++] = "sbatch";
  argv[k++] = "--parsable";
  argv[k++] = part;
  argv[k++] = jobname;
  argv[k++] = out;
  if (ex->gpus > 0) argv[k++] = gres;
  for (size_t i = 0; ex->sbatch_options && ex->sbatch_options[i] && k < 60; i++)
    argv[k++] = ex->sbatch_options[i];
  argv[k++] = script;
  argv[k] = NULL;
  kl__run_result res;
  int rc = slurm_call(&res, argv);
  if (rc == 0) {
    snprintf(id, cap, "%s", res.output.ptr ? res.output.ptr : "");
    char *semi = strchr(id, ';'); /* "id;cluster" */
    if (semi) *semi = 0;
    trim(id);
    if (res.exit_code != 0 || !id[0] || strspn(id, "0123456789") != strlen(id))
      rc = kl__error(KL_EIO, KL_DOMAIN_NONE, "sbatch failed (exit %d): %s",
                     res.exit_code, res.output.ptr ? res.output.ptr : "");
  }
  kl_buf_dispose(&res.output);
  return rc;
}

/* Wait for the job to leave the queue; its final state. */
static int wait_job(char *state, size_t cap, const char *id) {
  for (;;) {
    const char *q[] = {"squeue", "-h", "-j", id, "-o", "%T", NULL};
    kl__run_result res;
    int rc = slurm_call(&res, q);
    if (rc < 0) return rc;
    char now[64] = "";
    if (res.exit_code == 0 && res.output.ptr)
      snprintf(now, sizeof(now), "%s", res.output.ptr);
    trim(now);
    kl_buf_dispose(&res.output);
    /* squeue also lists a job in a finishing state for a moment */
    if (!now[0] || strcmp(now, "COMPLETED") == 0 ||
        strcmp(now, "CANCELLED") == 0 || strcmp(now, "FAILED") == 0 ||
        strcmp(now, "NODE_FAIL") == 0 || strcmp(now, "TIMEOUT") == 0)
      break;
    usleep(300 * 1000);
  }
  const char *s[] = {"scontrol", "-o", "show", "job", id, NULL};
  kl__run_result res;
  int rc = slurm_call(&res, s);
  snprintf(state, cap, "UNKNOWN");
  const char *at = rc == 0 && res.exit_code == 0 && res.output.ptr
                       ? strstr(res.output.ptr, "JobState=")
                       : NULL;
  if (at) {
    at += strlen("JobState=");
    size_t len = strcspn(at, " \n");
    snprintf(state, cap, "%.*s", (int)len, at);
  }
  kl_buf_dispose(&res.output);
  kl_error_clear();
  return 0;
}

static int slurm_evaluate(kl_executor *ex, const kl_case *c, kl__eval *ev,
                          size_t n, const char *dir, const char *ledger) {
  size_t pending = 0;
  int rc = kl__batch_write(dir, c, ev, n, false, &pending);
  if (rc < 0 || pending == 0) return rc;
  const char *name = strrchr(dir, '/');
  name = name ? name + 1 : dir;
  kl_buf script = KL_BUF_INIT, path = KL_BUF_INIT;
  kl__buf_puts(&script, "#!/bin/sh\n# kernlab: one batch of "
                        "evaluations (kl evaluate)\nexec ");
  kl__sh_quote(&script, ex->remote_kl);
  kl__buf_puts(&script, " evaluate ");
  kl__sh_quote(&script, dir);
  kl__buf_putc(&script, '\n');
  kl__buf_printf(&path, "%s/job.sh", dir);
  char id[64] = "", state[64] = "";
  int attempt = 0;
  bool done = false;
  if ((rc = kl__buf_status(&script)) < 0 || (rc = kl__buf_status(&path)) < 0 ||
      (rc = kl__write_file_atomic(path.ptr, script.ptr, script.size)) < 0)
    goto out;
  if (chmod(path.ptr, 0755) < 0) {
    rc = kl__error_os(KL_EIO, path.ptr,
                      "cannot make the job script "
                      "executable");
    goto out;
  }
  for (; !done && attempt <= ex->retries; attempt++) {
    size_t missing = 0;
    if ((rc = submit(id, sizeof(id), ex, dir, name)) < 0 ||
        (rc = kl__executor_line_write(ledger, "slurm", name, attempt + 1,
                                      "submitted", id, ex->partition)) < 0 ||
        (rc = wait_job(state, sizeof(state), id)) < 0 ||
        (rc = kl__batch_collect(dir, ev, n, &missing, "slurm", "job", id)) < 0)
      goto out;
    done = missing == 0;
    char detail[160];
    snprintf(detail, sizeof(detail), "%zu of %zu evaluations without a result",
             missing, pending);
    if ((rc = kl__executor_line_write(ledger, "slurm", name, attempt + 1, state,
                                      id, done ? NULL : detail)) < 0)
      goto out;
  }
  if (!done)
    rc = kl__error(KL_EIO, KL_DOMAIN_NONE,
                   "slurm: batch %s is still unfinished after %d jobs (the "
                   "last, %s, ended %s); see %s/slurm-%s.out",
                   name, attempt, id, state, dir, id);
out:
  kl_buf_dispose(&script);
  kl_buf_dispose(&path);
  return rc;
}

static int slurm_slots(const kl_executor *ex) {
  return ex->gpus > 0 ? ex->gpus : 1;
}

const kl__exec_backend kl__exec_slurm = {"slurm", EXEC_SLURM, slurm_evaluate,
                                         NULL, slurm_slots};
