/* The ssh executor: build here, evaluate on a GPU box with kernlab
 * installed there, through the user's own ssh.
 *
 * Every call shares one connection (ControlMaster=auto, a socket per
 * user and destination under /tmp, kept 60 s), never prompts
 * (BatchMode) and notices a dead link within about 15 s (server alive
 * probes). A batch takes three calls: unpack the batch folder there, run
 * `kl evaluate` on it, bring results/ back. ssh's exit status 255 is the
 * connection, not the command: the three steps are tried again, up to
 * `retries` more times, 1, 2, 4, 8 s apart. Results already written there
 * stay, and `kl evaluate` never redoes one, so a drop costs at most the
 * evaluations that were running; the rest is never lost or repeated. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../records/records.h"
#include "exec_internal.h"

#define SSH_LOST 255

static int ssh_call(kl__run_result *res, kl_executor *ex, const char *cmd,
                    const char *input, size_t input_len, int timeout_ms,
                    size_t max_output) {
  char control[200];
  snprintf(control, sizeof(control), "ControlPath=%s", ex->control_path);
  const char *argv[96];
  size_t k = 0;
  static const char *const fixed[] = {
      "-o", "BatchMode=yes",         "-o", "ControlMaster=auto",
      "-o", "ControlPersist=60",     "-o", "ServerAliveInterval=5",
      "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=10"};
  argv[k++] = "ssh";
  for (size_t i = 0; i < KL_ARRAY_SIZE(fixed); i++)
    argv[k++] = fixed[i];
  argv[k++] = "-o";
  argv[k++] = control;
  for (size_t i = 0; ex->ssh_options && ex->ssh_options[i] && k < 90; i++)
    argv[k++] = ex->ssh_options[i];
  argv[k++] = ex->host;
  argv[k++] = cmd;
  argv[k] = NULL;
  return kl__exec_run(res, argv, input, input_len, timeout_ms, max_output);
}

/* The last non-empty line of a program's words, for one-line messages. */
static const char *last_line(kl_buf *b, char *out, size_t cap) {
  const char *t = b->ptr ? b->ptr : "";
  size_t end = strlen(t);
  while (end && (t[end - 1] == '\n' || t[end - 1] == '\r'))
    end--;
  size_t start = end;
  while (start && t[start - 1] != '\n')
    start--;
  snprintf(out, cap, "%.*s", (int)(end - start), t + start);
  return out;
}

/* What one try of the three steps left: the last step's result. */
typedef struct ssh_try {
  kl__run_result res;
  int step;  /* 0: unpacking failed, 1: kl evaluate ran, 2: results back */
  bool done; /* every evaluation has its result */
} ssh_try;

/* One try: unpack the batch there, run kl evaluate on it, bring results/
 * back and collect them. A lost link is t->res.exit_code == SSH_LOST, not
 * an error; the error is kernlab's own failure, or a failure there that
 * no retry mends. `why` gets kl evaluate's last words when it failed. */
static int ssh_try_once(ssh_try *t, kl_executor *ex, kl__eval *ev, size_t n,
                        const char *dir, const char *remote, const kl_buf *pack,
                        char *why, size_t nwhy) {
  kl_buf cmd = KL_BUF_INIT, folder = KL_BUF_INIT;
  kl__run_result got, un;
  memset(&got, 0, sizeof(got));
  memset(&un, 0, sizeof(un));
  int rc, eval_status;
  /* 1: unpack there */
  kl__buf_puts(&cmd, "mkdir -p ");
  kl__sh_quote(&cmd, remote);
  kl__buf_puts(&cmd, " && tar -C ");
  kl__sh_quote(&cmd, remote);
  kl__buf_puts(&cmd, " -xf -");
  if ((rc = kl__buf_status(&cmd)) < 0 ||
      (rc = ssh_call(&t->res, ex, cmd.ptr, pack->ptr, pack->size, 300000,
                     1 << 16)) < 0 ||
      t->res.exit_code != 0)
    goto done;
  /* 2: evaluate there (the slow step: no time limit, the link is
   * watched by the alive probes) */
  t->step = 1;
  kl_buf_dispose(&t->res.output);
  cmd.size = 0;
  kl__sh_quote(&cmd, ex->remote_kl);
  kl__buf_puts(&cmd, " evaluate ");
  kl__sh_quote(&cmd, remote);
  if ((rc = kl__buf_status(&cmd)) < 0 ||
      (rc = ssh_call(&t->res, ex, cmd.ptr, NULL, 0, 0, 1 << 20)) < 0 ||
      t->res.exit_code == SSH_LOST)
    goto done;
  /* 3: bring the results back, whatever step 2 said */
  eval_status = t->res.exit_code;
  if (eval_status != 0) last_line(&t->res.output, why, nwhy);
  cmd.size = 0;
  kl__buf_puts(&cmd, "tar -C ");
  kl__sh_quote(&cmd, remote);
  kl__buf_puts(&cmd, " -cf - results");
  if ((rc = kl__buf_status(&cmd)) < 0 ||
      (rc = ssh_call(&got, ex, cmd.ptr, NULL, 0, 300000, 512u << 20)) < 0)
    goto done;
  if (got.exit_code == 0) {
    const char *unpack[] = {"tar", "-C", dir, "-xf", "-", NULL};
    size_t missing = 0;
    kl__buf_printf(&folder, "%s:%s", ex->host, remote);
    if ((rc = kl__exec_tar(&un, unpack, got.output.ptr, got.output.size)) < 0 ||
        (rc = kl__buf_status(&folder)) < 0 ||
        (rc = kl__batch_collect(dir, ev, n, &missing, "ssh", "folder",
                                folder.ptr)) < 0)
      goto done;
    t->step = 2;
    t->done = missing == 0;
  } else {
    t->res.exit_code = got.exit_code;
    kl__buf_give(&t->res.output, &got.output);
  }
  if (!t->done && eval_status != 0 && t->res.exit_code != SSH_LOST)
    /* kl evaluate itself failed there (not found, a bad folder): no retry
     * makes it work */
    rc = kl__error(KL_EIO, KL_DOMAIN_NONE,
                   "ssh %s: kl evaluate failed there (exit %d): %s", ex->host,
                   eval_status, why);
done:
  kl_buf_dispose(&got.output);
  kl_buf_dispose(&un.output);
  kl_buf_dispose(&folder);
  kl_buf_dispose(&cmd);
  return rc;
}

static int ssh_evaluate(kl_executor *ex, const kl_case *c, kl__eval *ev,
                        size_t n, const char *dir, const char *ledger) {
  size_t pending = 0;
  int rc = kl__batch_write(dir, c, ev, n, true, &pending);
  if (rc < 0 || pending == 0) return rc;
  /* where the batch goes there: unique to this batch and session */
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  const char *name = strrchr(dir, '/');
  const char *batch = name ? name + 1 : dir;
  kl_buf remote = KL_BUF_INIT, cmd = KL_BUF_INIT;
  kl__run_result pack;
  memset(&pack, 0, sizeof(pack));
  const char *pack_argv[] = {"tar",       "-C",      dir,    "-cf", "-",
                             "jobs.json", "plugins", "case", NULL};
  char why[512] = "";
  bool done = false;
  int attempt = 0;
  kl__buf_printf(&remote, "%s/%s-%ld-%lld-%s", ex->remote_dir, host,
                 (long)getpid(), (long long)time(NULL), batch);
  if ((rc = kl__buf_status(&remote)) < 0 ||
      (rc = kl__exec_tar(&pack, pack_argv, NULL, 0)) < 0)
    goto out;
  for (; !done && attempt <= ex->retries; attempt++) {
    if (attempt > 0) sleep(1u << (attempt - 1 < 3 ? attempt - 1 : 3));
    ssh_try t;
    memset(&t, 0, sizeof(t));
    rc = ssh_try_once(&t, ex, ev, n, dir, remote.ptr, &pack.output, why,
                      sizeof(why));
    done = t.done;
    if (rc == 0 && !done) {
      int status = t.res.exit_code;
      if (status != 0 && why[0] == 0)
        last_line(&t.res.output, why, sizeof(why));
      rc = kl__executor_line_write(
          ledger, "ssh", batch, attempt + 1,
          status == SSH_LOST ? "connection_lost" : "failed", remote.ptr, why);
      if (rc == 0 && status != SSH_LOST && status != 0 && t.step == 0)
        rc = kl__error(KL_EIO, KL_DOMAIN_NONE,
                       "ssh %s: could not unpack the batch there (exit %d): "
                       "%s",
                       ex->host, status, why);
    }
    kl_buf_dispose(&t.res.output);
    if (rc < 0) goto out;
  }
  if (!done) {
    rc = kl__error(KL_EIO, KL_DOMAIN_NONE,
                   "ssh %s: the connection failed %d times: %s", ex->host,
                   attempt, why[0] ? why : "no answer");
    goto out;
  }
  kl__run_result res; /* tidy up there; a failure leaves only files */
  memset(&res, 0, sizeof(res));
  kl__buf_puts(&cmd, "rm -rf ");
  kl__sh_quote(&cmd, remote.ptr);
  if (kl__buf_status(&cmd) == 0)
    ssh_call(&res, ex, cmd.ptr, NULL, 0, 60000, 1 << 16);
  kl_buf_dispose(&res.output);
  kl_error_clear();
  if (attempt > 1)
    rc = kl__executor_line_write(ledger, "ssh", batch, attempt, "completed",
                                 remote.ptr, NULL);
out:
  kl_buf_dispose(&pack.output);
  kl_buf_dispose(&remote);
  kl_buf_dispose(&cmd);
  return rc;
}

static int ssh_slots(const kl_executor *ex) {
  (void)ex;
  return 1;
}

const kl__exec_backend kl__exec_ssh = {"ssh", EXEC_SSH, ssh_evaluate, NULL,
                                       ssh_slots};
