/* kl_executor: settings from the options, then the user config's
 * `executor:` section, then defaults; and the dispatch of a batch through
 * the backend table (local.c, ssh.c, slurm.c), which never calls back in
 * here. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../records/records.h"
#include "../core/yaml_tree.h"
#include "exec_internal.h"

void kl_executor_free(kl_executor *ex) {
  if (!ex) return;
  kl__free(ex->describe);
  kl__free(ex->devices);
  kl__free(ex->host);
  kl__free(ex->remote_kl);
  kl__free(ex->remote_dir);
  kl__free(ex->partition);
  kl__free(ex->worker_path);
  kl__strv_free(ex->ssh_options);
  kl__strv_free(ex->sbatch_options);
  for (size_t i = 0; i < ex->nkept; i++)
    kl__kept_worker_end(&ex->kept[i]);
  kl__free(ex->kept);
  kl__free(ex);
}

const char *kl_executor_kind(const kl_executor *ex) {
  return ex->backend->name;
}
const char *kl_executor_describe(const kl_executor *ex) {
  return ex->describe;
}
int kl_executor_slots(const kl_executor *ex) {
  return ex->backend->slots(ex);
}

/* ---- the user config's executor: section ------------------------------- */

typedef struct config_values {
  char *kind, *devices, *host, *remote_kl, *remote_dir, *partition;
  char **ssh_options, **sbatch_options;
  int gpus, retries;
} config_values;

static void config_values_free(config_values *v) {
  kl__free(v->kind);
  kl__free(v->devices);
  kl__free(v->host);
  kl__free(v->remote_kl);
  kl__free(v->remote_dir);
  kl__free(v->partition);
  kl__strv_free(v->ssh_options);
  kl__strv_free(v->sbatch_options);
}

static void config_error(kl__diag_list *d, const char *path, const ynode *n,
                         const char *msg, const char *key) {
  kl__diag_add(d, KL_EINVALID, KL_DOMAIN_NONE, path, n->line, n->column, NULL,
               msg, key);
}

static void read_section(const ynode *map, const char *path,
                         const char *file_text, kl__diag_list *diags,
                         void *payload) {
  (void)file_text;
  config_values *cv = payload;
  static const char *const keys[] = {
      "kind",       "devices",   "host", "ssh_options",    "remote_kl",
      "remote_dir", "partition", "gpus", "sbatch_options", "retries"};
  if (map->kind != YNODE_MAP) {
    config_error(diags, path, map,
                 "%s is a mapping (kind: local|ssh|slurm, host: ..., "
                 "partition: ...)",
                 "executor");
    return;
  }
  for (size_t i = 0; i < map->count; i++) {
    const char *k = map->pairs[i].key->value;
    const ynode *v = map->pairs[i].value;
    char **text = strcmp(k, "kind") == 0         ? &cv->kind
                  : strcmp(k, "host") == 0       ? &cv->host
                  : strcmp(k, "remote_kl") == 0  ? &cv->remote_kl
                  : strcmp(k, "remote_dir") == 0 ? &cv->remote_dir
                  : strcmp(k, "partition") == 0  ? &cv->partition
                  : strcmp(k, "devices") == 0    ? &cv->devices
                                                 : NULL;
    char ***list = strcmp(k, "ssh_options") == 0      ? &cv->ssh_options
                   : strcmp(k, "sbatch_options") == 0 ? &cv->sbatch_options
                                                      : NULL;
    int *number = strcmp(k, "gpus") == 0      ? &cv->gpus
                  : strcmp(k, "retries") == 0 ? &cv->retries
                                              : NULL;
    if (text) {
      if (v->kind != YNODE_SCALAR) {
        config_error(diags, path, v, "executor.%s is a plain value", k);
      } else {
        kl__free(*text);
        if (!(*text = kl__strdup(v->value))) diags->oom = true;
      }
    } else if (list) {
      if (v->kind != YNODE_SEQ) {
        config_error(diags, path, v,
                     "executor.%s is a list of arguments (never a shell "
                     "line)",
                     k);
        continue;
      }
      char **items = kl__calloc(v->count + 1, sizeof(char *));
      bool ok = items != NULL;
      for (size_t j = 0; ok && j < v->count; j++) {
        if (v->items[j]->kind != YNODE_SCALAR) {
          config_error(diags, path, v->items[j],
                       "executor.%s items are plain values", k);
          ok = false;
        } else if (!(items[j] = kl__strdup(v->items[j]->value))) {
          diags->oom = true;
          ok = false;
        }
      }
      if (!items) diags->oom = true;
      kl__strv_free(ok ? *list : items);
      if (ok) *list = items;
    } else if (number) {
      char *end = NULL;
      long n = v->kind == YNODE_SCALAR ? strtol(v->value, &end, 10) : -1;
      if (!end || *end || n < 0 || n > 64)
        config_error(diags, path, v,
                     "executor.%s is a whole number from 0 "
                     "to 64",
                     k);
      else
        *number = (int)n;
    } else {
      const char *near = kl__suggest(k, keys, KL_ARRAY_SIZE(keys));
      kl__diag_add(diags, KL_EINVALID, KL_DOMAIN_NONE, path,
                   map->pairs[i].key->line, map->pairs[i].key->column, NULL,
                   "unknown key '%s' in executor%s%s%s", k,
                   near ? "; did you mean '" : "", near ? near : "",
                   near ? "'?" : "");
    }
  }
}

static int set_text(char **to, const char *given, const char *config,
                    const char *fallback) {
  const char *v = given ? given : config ? config : fallback;
  if (!v) return 0;
  return (*to = kl__strdup(v)) ? 0 : kl__error_oom();
}

static int set_list(char ***to, const char *const *given, char **config) {
  const char *const *v = given ? given : (const char *const *)config;
  if (!v) return 0;
  return (*to = kl__strv_dup(v)) ? 0 : kl__error_oom();
}

int kl_executor_create(kl_executor **out, const kl_executor_options *opts) {
  *out = NULL;
  kl_executor_options full;
  int rc = kl__executor_options_take(&full, opts);
  if (rc < 0) return rc;
  const kl_executor_options *o = &full;
  config_values cv;
  memset(&cv, 0, sizeof(cv));
  cv.gpus = cv.retries = -1;
  kl_executor *ex = NULL;
  kl_buf d = KL_BUF_INIT;
  if ((rc = kl__user_config_section("executor", read_section, &cv)) < 0)
    goto fail;
  if (!(ex = kl__calloc(1, sizeof(*ex)))) {
    rc = kl__error_oom();
    goto fail;
  }
  const char *kind = o->kind ? o->kind : cv.kind ? cv.kind : "local";
  static const kl__exec_backend *const backends[] = {
      &kl__exec_local, &kl__exec_ssh, &kl__exec_slurm};
  for (size_t i = 0; !ex->backend && i < KL_ARRAY_SIZE(backends); i++)
    if (strcmp(kind, backends[i]->name) == 0) ex->backend = backends[i];
  if (!ex->backend) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                   "unknown executor '%s' (local, ssh or slurm)", kind);
    goto fail;
  }
  ex->kind = ex->backend->kind;
  if ((rc = set_text(&ex->host, o->host, cv.host, NULL)) < 0 ||
      (rc = set_text(&ex->remote_kl, o->remote_kl, cv.remote_kl, "kl")) < 0 ||
      (rc = set_text(&ex->remote_dir, o->remote_dir, cv.remote_dir,
                     ".cache/kernlab/batches")) < 0 ||
      (rc = set_text(&ex->partition, o->partition, cv.partition, NULL)) < 0 ||
      (rc = set_text(&ex->worker_path, o->worker_path, NULL, NULL)) < 0 ||
      (rc = set_list(&ex->ssh_options, o->ssh_options, cv.ssh_options)) < 0 ||
      (rc = set_list(&ex->sbatch_options, o->sbatch_options,
                     cv.sbatch_options)) < 0)
    goto fail;
  ex->fresh_workers = o->fresh_workers != 0;
  ex->gpus = o->gpus >= 0 ? o->gpus : cv.gpus >= 0 ? cv.gpus : 1;
  ex->retries = o->retries >= 0 ? o->retries : cv.retries >= 0 ? cv.retries : 3;
  const char *devices = o->devices ? o->devices : cv.devices;
  if (devices && ex->kind == EXEC_LOCAL &&
      (rc = kl__local_parse_devices(
           ex, devices, o->devices ? "--devices" : "executor.devices")) < 0)
    goto fail;
  if (ex->kind == EXEC_SSH && (!ex->host || !ex->host[0])) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                   "the ssh executor needs a host (--host user@box, or "
                   "executor.host in the config file)");
    goto fail;
  }
  if (ex->kind == EXEC_SLURM && (!ex->partition || !ex->partition[0])) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                   "the slurm executor needs a partition (--partition NAME, "
                   "or executor.partition in the config file)");
    goto fail;
  }
  if (ex->kind == EXEC_SSH)
    snprintf(ex->control_path, sizeof(ex->control_path), "/tmp/kl-ssh-%ld-%%C",
             (long)getuid());
  if (ex->kind == EXEC_SSH) {
    kl__buf_printf(&d, "ssh: %s", ex->host);
  } else if (ex->kind == EXEC_SLURM) {
    kl__buf_printf(&d, "slurm: partition %s, %d GPU%s per job", ex->partition,
                   ex->gpus, ex->gpus == 1 ? "" : "s");
  } else if (ex->devices_known) {
    kl__buf_puts(&d, ex->ndevices == 1 ? "local: GPU " : "local: GPUs ");
    for (size_t i = 0; i < ex->ndevices; i++)
      kl__buf_printf(&d, "%s%d", i ? "," : "", ex->devices[i]);
  } else {
    kl__buf_puts(&d, "local: every visible GPU");
  }
  if (!(ex->describe = kl__buf_detach(&d))) { /* NULL when a write failed */
    rc = KL_ENOMEM;
    goto fail;
  }
  config_values_free(&cv);
  *out = ex;
  return 0;
fail:
  kl_buf_dispose(&d);
  config_values_free(&cv);
  kl_executor_free(ex);
  return rc;
}

int kl__executor_one_device(kl_executor **out, const char *worker_path,
                            int device) {
  kl_executor_options eo = KL_EXECUTOR_OPTIONS_INIT;
  eo.kind = "local";
  eo.devices = "0";
  eo.worker_path = worker_path;
  int rc = kl_executor_create(out, &eo);
  if (rc == 0) (*out)->devices[0] = device; /* -1: the worker's default GPU */
  return rc;
}

int kl__executor_devices(kl_executor *ex, const kl_case *c) {
  return ex->backend->devices ? ex->backend->devices(ex, c) : 0;
}

int kl__executor_evaluate(kl_executor *ex, const kl_case *c, kl__eval *ev,
                          size_t n, const char *batch_dir, const char *ledger) {
  for (size_t i = 0; i < n; i++) {
    ev[i].rc = 0;
    kl__free(ev[i].error);
    ev[i].error = NULL;
  }
  return ex->backend->evaluate(ex, c, ev, n, batch_dir, ledger);
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t executor_options_sizes[] = {
    0, offsetof(kl_executor_options, fresh_workers),
    sizeof(kl_executor_options)};

KL__OPTIONS_FUNCTIONS(kl_executor_options, kl_executor_options_init,
                      kl__executor_options_take, KL_EXECUTOR_OPTIONS_INIT,
                      executor_options_sizes)
