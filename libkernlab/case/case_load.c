/* kl_case_load: read case.yaml, validate it, evaluate it for every shape.
 *
 * How it works: the YAML becomes a position-keeping tree (yaml_tree.c); one
 * function per section (case_sections.c) walks its part of the tree,
 * records what it can and adds a located diagnostic for everything wrong
 * (case_read.c), then carries on, so that a user sees every error of the
 * file at once. Once the sections are read, each shape is evaluated
 * (case_eval.c). The sections other modules own are checked by them
 * (case.c). The case is only returned when no diagnostic was recorded. */
#define _GNU_SOURCE /* realpath */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

/* ---- entry point --------------------------------------------------------- */

static const char *const top_keys[] = {
    "kernlab", "name",    "description", "backend",  "target",    "kernel",
    "params",  "shapes",  "reference",   "roofline", "objective", "tunables",
    "budget",  "program", "rules",       "llm",      "webhook",   "timing"};

static int resolve_paths(kl_case *c, const char *path) {
  if (kl__is_dir(path)) {
    c->dir = kl__strdup(path);
    c->path = kl__path_join(path, "case.yaml");
  } else {
    c->dir = kl__path_dir(path);
    c->path = kl__strdup(path);
  }
  if (!c->dir || !c->path) return kl__error_oom();
  /* Trim a trailing slash so messages read "cases/x/case.yaml". */
  size_t n = strlen(c->dir);
  while (n > 1 && c->dir[n - 1] == '/')
    c->dir[--n] = '\0';
  if (n > 1 && kl__is_dir(path)) {
    kl__free(c->path);
    if (!(c->path = kl__path_join(c->dir, "case.yaml"))) return kl__error_oom();
  }
  if (!kl__is_file(c->path)) {
    if (kl__is_dir(path))
      return kl__error(KL_ENOTFOUND, KL_DOMAIN_CASE,
                       "%s: no case.yaml in this folder", path);
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_CASE,
                     "%s: no such case folder or file", path);
  }
  return 0;
}

int kl_case_load(kl_case **out, const char *path,
                 const kl_case_options *given) {
  *out = NULL;
  kl_case_options opts;
  int rc = kl__case_options_take(&opts, given);
  if (rc < 0) return rc;
  if (!path || !*path)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE, "no case path given");
  kl_case *c = kl__calloc(1, sizeof(*c));
  if (!c) return kl__error_oom();
  rc = resolve_paths(c, path);
  if (rc < 0) {
    kl_case_free(c);
    return rc;
  }
  kl_buf text = KL_BUF_INIT;
  if ((rc = kl__read_file(&text, c->path)) < 0) {
    kl_case_free(c);
    return rc;
  }
  loader ld = {0};
  ld.c = c;
  ld.path = c->path;
  ld.text = text.ptr ? text.ptr : "";
  ynode *root =
      kl__yaml_parse(text.ptr ? text.ptr : "", text.size, c->path, &ld.diags);
  if (!root && !kl__ld_has_errors(&ld))
    kl__ld_err_at(&ld, 1, 1, "the case file is empty");
  else if (root && kl__ld_want(&ld, root, YNODE_MAP, "a case file")) {
    kl__ld_read_header(&ld, root);
    if (ld.backend_ok && c->backend == KL_BACKEND_COMMAND) {
      /* a program that measures itself: no params, shapes or reference */
      kl__ld_read_command(&ld, root);
      kl__ld_read_rest(&ld, root);
      kl__ld_read_tunables(&ld, root);
      goto read;
    }
    kl__ld_check_keys(&ld, root, top_keys, KL_ARRAY_SIZE(top_keys), "the case");
    static const char *const required[] = {"kernlab", "name",   "backend",
                                           "kernel",  "params", "shapes"};
    for (size_t i = 0; i < KL_ARRAY_SIZE(required); i++)
      if (!kl__ld_map_get(root, required[i]))
        kl__ld_err_at(&ld, 1, 1, "missing required key '%s'", required[i]);
    kl__ld_read_target(&ld, root);
    kl__ld_read_kernel(&ld, root);
    kl__ld_read_params(&ld, root);
    kl__ld_read_shapes(&ld, root);
    kl__ld_read_reference(&ld, root);
    kl__ld_read_rest(&ld, root);
    kl__ld_read_timing(&ld, root);
    kl__ld_read_rule_files(&ld, root);
    kl__ld_read_tunables(&ld, root);
    if (!kl__ld_has_errors(&ld) &&
        (rc = kl__ld_configure_tunables(c, opts.tunables)) < 0) {
      kl__yaml_free(root);
      kl_buf_dispose(&text);
      kl__diag_clear(&ld.diags);
      kl_case_free(c);
      return rc;
    }
    /* Evaluating over a signature that could not be read would only
     * repeat its errors as unknown names. */
    if (!ld.diags.oom && !ld.params_broken) kl__ld_evaluate(&ld);
  }
read:
  /* the sections other modules own: kept as written, checked by them */
  c->yaml = root;
  c->yaml_text = kl__buf_detach(&text);
  if (root && root->kind == YNODE_MAP) kl__case_check_sections(c, &ld.diags);
  if (kl__ld_has_errors(&ld)) {
    rc = kl__diag_report(&ld.diags, opts.on_diag, opts.payload);
    kl__diag_clear(&ld.diags);
    kl_case_free(c);
    return rc;
  }
  kl__diag_clear(&ld.diags);
  *out = c;
  return 0;
}
