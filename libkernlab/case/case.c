/* Accessors of a loaded case, the dtype table, and the JSON description.
 * A loaded case is immutable: everything here only reads it. */
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/yaml_tree.h"
#include "case_internal.h"

static const struct {
  const char *name;
  size_t size;
  bool is_float;
} dtypes[KL_DTYPE_COUNT_] = {
    [KL_DTYPE_F64] = {"f64", 8, true},  [KL_DTYPE_F32] = {"f32", 4, true},
    [KL_DTYPE_F16] = {"f16", 2, true},  [KL_DTYPE_BF16] = {"bf16", 2, true},
    [KL_DTYPE_I64] = {"i64", 8, false}, [KL_DTYPE_I32] = {"i32", 4, false},
    [KL_DTYPE_I16] = {"i16", 2, false}, [KL_DTYPE_I8] = {"i8", 1, false},
    [KL_DTYPE_U64] = {"u64", 8, false}, [KL_DTYPE_U32] = {"u32", 4, false},
    [KL_DTYPE_U16] = {"u16", 2, false}, [KL_DTYPE_U8] = {"u8", 1, false},
};

const char *kl_dtype_name(kl_dtype t) {
  return (unsigned)t < KL_DTYPE_COUNT_ ? dtypes[t].name : NULL;
}

size_t kl_dtype_size(kl_dtype t) {
  return (unsigned)t < KL_DTYPE_COUNT_ ? dtypes[t].size : 0;
}

int kl_dtype_is_float(kl_dtype t) {
  return (unsigned)t < KL_DTYPE_COUNT_ && dtypes[t].is_float;
}

int kl_dtype_parse(kl_dtype *out, const char *name) {
  for (int i = 0; i < KL_DTYPE_COUNT_; i++)
    if (strcmp(dtypes[i].name, name) == 0) {
      *out = (kl_dtype)i;
      return 0;
    }
  return KL_EINVALID;
}

const char *kl_role_name(kl_role r) {
  switch (r) {
  case KL_ROLE_SCALAR:
    return "scalar";
  case KL_ROLE_INPUT:
    return "input";
  case KL_ROLE_OUTPUT:
    return "output";
  case KL_ROLE_INOUT:
    return "inout";
  case KL_ROLE_SCRATCH:
    return "scratch";
  }
  return NULL;
}

const char *kl_backend_name(kl_backend b) {
  switch (b) {
  case KL_BACKEND_HOST:
    return "host";
  case KL_BACKEND_CUDA:
    return "cuda";
  case KL_BACKEND_COMMAND:
    return "command";
  case KL_BACKEND_PYTHON:
    return "python";
  }
  return NULL;
}

const char *kl_objective_name(kl_objective o) {
  switch (o) {
  case KL_OBJECTIVE_GEOMEAN_SPEEDUP:
    return "geomean_speedup";
  case KL_OBJECTIVE_TOTAL_TIME:
    return "total_time";
  }
  return NULL;
}

void kl_case_free(kl_case *c) {
  if (!c) return;
  for (size_t i = 0; i < c->nparams; i++) {
    kl__free(c->params[i].name);
    kl_expr_free(c->params[i].count);
    kl_expr_free(c->params[i].value);
    kl__free(c->params[i].init_text);
  }
  kl__free(c->params);
  for (size_t i = 0; i < c->nargs; i++) {
    kl__free(c->args[i].name);
    kl__free(c->args[i].struct_type);
  }
  kl__free(c->args);
  for (size_t i = 0; i < c->nshapes; i++) {
    kl__free(c->shapes[i].name);
    kl__free(c->shapes[i].entry);
    kl_vars_free(c->shapes[i].vars);
    kl__free(c->shapes[i].elements);
    kl__free(c->shapes[i].scalars);
  }
  kl__free(c->shapes);
  for (size_t i = 0; i < c->ntunables; i++) {
    kl__free(c->tunables[i].name);
    for (size_t j = 0; j < c->tunables[i].nvalues; j++)
      kl__free(c->tunables[i].values[j]);
    kl__free(c->tunables[i].values);
    kl__free(c->tunables[i].chosen);
  }
  kl__free(c->tunables);
  for (size_t i = 0; c->command && i < c->ncommand; i++)
    kl__free(c->command[i]);
  kl__free(c->command);
  for (size_t i = 0; c->build && i < c->nbuild; i++)
    kl__free(c->build[i]);
  kl__free(c->build);
  for (size_t i = 0; c->server && i < c->nserver; i++)
    kl__free(c->server[i]);
  kl__free(c->server);
  for (size_t i = 0; i < c->nmetrics; i++)
    kl__free(c->metrics[i].name);
  kl__free(c->metrics);
  for (int d = 0; d < 3; d++) {
    kl_expr_free(c->grid[d]);
    kl_expr_free(c->block[d]);
  }
  kl_expr_free(c->shared_bytes);
  kl_expr_free(c->roof_bytes);
  kl_expr_free(c->roof_flops);
  char *strings[] = {c->dir,   c->path,         c->name,       c->description,
                     c->arch,  c->compiler,     c->flags,      c->kernel_path,
                     c->entry, c->program_path, c->ref_source, c->ref_function};
  for (size_t i = 0; i < KL_ARRAY_SIZE(strings); i++)
    kl__free(strings[i]);
  for (size_t i = 0; i < c->nlibs; i++)
    kl__free(c->libs[i]);
  kl__free(c->libs);
  for (size_t i = 0; i < c->nincludes; i++)
    kl__free(c->includes[i]);
  kl__free(c->includes);
  for (size_t i = 0; i < c->nrule_files; i++)
    kl__free(c->rule_files[i]);
  kl__free(c->rule_files);
  kl__yaml_free(c->yaml);
  kl__free(c->yaml_text);
  kl__free(c);
}

const char *kl_case_name(const kl_case *c) {
  return c->name;
}
const char *kl_case_dir(const kl_case *c) {
  return c->dir;
}
const char *kl_case_path(const kl_case *c) {
  return c->path;
}
kl_backend kl_case_backend(const kl_case *c) {
  return c->backend;
}
const char *kl_case_arch(const kl_case *c) {
  return c->arch;
}
const char *kl_case_compiler(const kl_case *c) {
  return c->compiler;
}
const char *kl_case_flags(const kl_case *c) {
  return c->flags;
}
size_t kl_case_lib_count(const kl_case *c) {
  return c->nlibs;
}
const char *kl_case_lib(const kl_case *c, size_t i) {
  return i < c->nlibs ? c->libs[i] : NULL;
}
size_t kl_case_include_count(const kl_case *c) {
  return c->nincludes;
}
const char *kl_case_include(const kl_case *c, size_t i) {
  return i < c->nincludes ? c->includes[i] : NULL;
}
const char *kl_case_kernel_path(const kl_case *c) {
  return c->kernel_path;
}
const char *kl_case_entry(const kl_case *c) {
  return c->entry;
}
int kl_case_on_gpu(const kl_case *c) {
  return c->backend == KL_BACKEND_CUDA ||
         (c->backend == KL_BACKEND_PYTHON && !c->python_host);
}
const char *kl_case_python_device(const kl_case *c) {
  if (c->backend != KL_BACKEND_PYTHON) return NULL;
  return c->python_host ? "host" : "cuda";
}
const char *kl_case_program_path(const kl_case *c) {
  return c->program_path;
}
size_t kl_case_rule_file_count(const kl_case *c) {
  return c->nrule_files;
}

/* ---- case_view.h: borrowed parts for the modules above ------------------- */

const case_param *kl__case_params(const kl_case *c) {
  return c->params;
}
const case_arg *kl__case_args(const kl_case *c) {
  return c->args;
}
size_t kl__case_arg_count(const kl_case *c) {
  return c->nargs;
}
const case_shape *kl__case_shapes(const kl_case *c) {
  return c->shapes;
}
const kl_reference_info *kl__case_reference(const kl_case *c) {
  return &c->ref;
}
const kl_budget *kl__case_budget(const kl_case *c) {
  return &c->budget;
}
void kl__case_command_of(kl__case_command *out, const kl_case *c) {
  *out = (kl__case_command){c->command,           c->build,
                            c->ncommand,          c->nbuild,
                            c->command_timeout_s, c->command_time_cap_s,
                            c->command_loopback,  c->metrics,
                            c->nmetrics};
}

/* ---- sections other modules own ------------------------------------------ */

static struct {
  const char *name;
  kl__case_section_fn fn;
} checkers[8];
static size_t nchecks;

void kl__case_section_checker(const char *name, kl__case_section_fn fn) {
  /* called from constructors, before any thread runs */
  if (nchecks < KL_ARRAY_SIZE(checkers)) {
    checkers[nchecks].name = name;
    checkers[nchecks++].fn = fn;
  }
}

const ynode *kl__case_section(const kl_case *c, const char *name,
                              const char **path, const char **text) {
  const ynode *root = c ? c->yaml : NULL;
  if (path) *path = c ? c->path : NULL;
  if (text) *text = c ? c->yaml_text : NULL;
  for (size_t i = 0; root && root->kind == YNODE_MAP && i < root->count; i++)
    if (strcmp(root->pairs[i].key->value, name) == 0)
      return root->pairs[i].value;
  return NULL;
}

void kl__case_check_sections(const kl_case *c, kl__diag_list *diags) {
  for (size_t i = 0; i < nchecks; i++) {
    const char *path, *text;
    const ynode *n = kl__case_section(c, checkers[i].name, &path, &text);
    if (n) checkers[i].fn(n, path, text, diags);
  }
}
const char *kl_case_rule_file(const kl_case *c, size_t i) {
  return i < c->nrule_files ? c->rule_files[i] : NULL;
}
kl_objective kl_case_objective(const kl_case *c) {
  return c->objective;
}
int kl_case_budget(kl_budget *out, const kl_case *c) {
  return kl__result_give(out, &c->budget, sizeof(c->budget),
                         KL__SIZE_THROUGH(kl_budget, min_gain_pct),
                         "kl_budget");
}
int kl_case_reference(kl_reference_info *out, const kl_case *c) {
  return kl__result_give(out, &c->ref, sizeof(c->ref),
                         offsetof(kl_reference_info, trivial_margin),
                         "kl_reference_info");
}
size_t kl_case_param_count(const kl_case *c) {
  return c->nparams;
}
size_t kl_case_shape_count(const kl_case *c) {
  return c->nshapes;
}
size_t kl_case_tunable_count(const kl_case *c) {
  return c->ntunables;
}

int kl_case_param(kl_param_info *into, const kl_case *c, size_t index) {
  if (index >= c->nparams)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "param index %zu out of range (%zu params)", index,
                     c->nparams);
  kl_param_info full = {0};
  kl_param_info *out = &full;
  const case_param *p = &c->params[index];
  out->name = p->name;
  out->dtype = p->dtype;
  out->is_pointer = p->is_pointer;
  out->role = p->role;
  out->count = p->count ? kl_expr_source(p->count) : NULL;
  out->value = p->value ? kl_expr_source(p->value) : NULL;
  out->init = p->init;
  out->init_a = p->init_a;
  out->init_b = p->init_b;
  out->init_text = p->init_text;
  for (size_t a = 0; a < c->nargs; a++)
    if (index >= c->args[a].first &&
        index < c->args[a].first + c->args[a].count)
      out->struct_type = c->args[a].struct_type;
  return kl__result_give(into, &full, sizeof(full),
                         KL__SIZE_THROUGH(kl_param_info, struct_type),
                         "kl_param_info");
}

static int check_shape(const kl_case *c, size_t shape) {
  if (shape >= c->nshapes)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "shape index %zu out of range (%zu shapes)", shape,
                     c->nshapes);
  return 0;
}

const char *kl_case_shape_entry(const kl_case *c, size_t shape) {
  if (shape >= c->nshapes) return NULL;
  return c->shapes[shape].entry ? c->shapes[shape].entry : c->entry;
}

const char *kl_case_shape_name(const kl_case *c, size_t shape) {
  return shape < c->nshapes ? c->shapes[shape].name : NULL;
}

double kl_case_shape_weight(const kl_case *c, size_t shape) {
  return shape < c->nshapes ? c->shapes[shape].weight : 0;
}

int kl_case_shape_find(const kl_case *c, const char *name) {
  for (size_t i = 0; i < c->nshapes; i++)
    if (strcmp(c->shapes[i].name, name) == 0) return (int)i;
  return kl__error(KL_ENOTFOUND, KL_DOMAIN_CASE, "case '%s' has no shape '%s'",
                   c->name, name);
}

int kl_case_shape_vars(kl_vars **out, const kl_case *c, size_t shape) {
  *out = NULL;
  int rc = check_shape(c, shape);
  if (rc < 0) return rc;
  kl_vars *v;
  if ((rc = kl_vars_create(&v)) < 0) return rc;
  const kl_vars *src = c->shapes[shape].vars;
  for (size_t i = 0; i < kl_vars_count(src); i++) {
    kl_value x;
    kl_vars_get(&x, src, kl_vars_name(src, i));
    if ((rc = kl_vars_set(v, kl_vars_name(src, i), &x)) < 0) {
      kl_vars_free(v);
      return rc;
    }
  }
  *out = v;
  return 0;
}

int kl_case_param_elements(int64_t *out, const kl_case *c, size_t param,
                           size_t shape) {
  int rc = check_shape(c, shape);
  if (rc < 0) return rc;
  if (param >= c->nparams || !c->params[param].is_pointer)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE, "param %zu is not a buffer",
                     param);
  *out = c->shapes[shape].elements[param];
  return 0;
}

int kl_case_scalar_value(kl_value *out, const kl_case *c, size_t param,
                         size_t shape) {
  int rc = check_shape(c, shape);
  if (rc < 0) return rc;
  if (param >= c->nparams || c->params[param].is_pointer)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE, "param %zu is not a scalar",
                     param);
  *out = c->shapes[shape].scalars[param];
  return 0;
}

int kl_case_launch(kl_launch *out, const kl_case *c, size_t shape) {
  int rc = check_shape(c, shape);
  if (rc < 0) return rc;
  if (!c->has_launch)
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_CASE,
                     "case '%s' has no launch geometry (%s backend)", c->name,
                     kl_backend_name(c->backend));
  *out = c->shapes[shape].launch;
  return 0;
}

int kl_case_roofline(double *bytes, double *flops, const kl_case *c,
                     size_t shape) {
  int rc = check_shape(c, shape);
  if (rc < 0) return rc;
  if (!c->roof_bytes && !c->roof_flops) return KL_ENOTFOUND;
  if (bytes) *bytes = c->shapes[shape].roof_bytes;
  if (flops) *flops = c->shapes[shape].roof_flops;
  return 0;
}

int64_t kl_case_buffer_bytes(const kl_case *c, size_t shape) {
  if (shape >= c->nshapes) return 0;
  int64_t total = 0;
  for (size_t p = 0; p < c->nparams; p++)
    if (c->params[p].is_pointer)
      total += c->shapes[shape].elements[p] *
               (int64_t)kl_dtype_size(c->params[p].dtype);
  return total;
}

const char *kl_case_tunable_name(const kl_case *c, size_t i) {
  return i < c->ntunables ? c->tunables[i].name : NULL;
}

size_t kl_case_tunable_value_count(const kl_case *c, size_t i) {
  return i < c->ntunables ? c->tunables[i].nvalues : 0;
}

const char *kl_case_tunable_current(const kl_case *c, size_t i) {
  if (i >= c->ntunables || c->tunables[i].nvalues == 0) return NULL;
  return c->tunables[i].chosen ? c->tunables[i].chosen
                               : c->tunables[i].values[0];
}

const char *kl_case_tunable_value(const kl_case *c, size_t i, size_t j) {
  if (i >= c->ntunables || j >= c->tunables[i].nvalues) return NULL;
  return c->tunables[i].values[j];
}

/* ---- JSON ---------------------------------------------------------------- */

static int json_value(kl_buf *b, const kl_value *v) {
  if (v->is_int) return kl__buf_printf(b, "%lld", (long long)v->i);
  return kl__buf_printf(b, "%.17g", v->f);
}

static int json_key(kl_buf *b, const char *key) {
  kl__buf_json_string(b, key);
  return kl__buf_putc(b, ':');
}

static int describe_params(kl_buf *b, const kl_case *c) {
  kl__buf_puts(b, "\"params\":[");
  for (size_t i = 0; i < c->nparams; i++) {
    const case_param *p = &c->params[i];
    kl__buf_puts(b, i ? ",{" : "{");
    json_key(b, "name");
    kl__buf_json_string(b, p->name);
    kl__buf_printf(b, ",\"type\":\"%s%s\",\"dtype\":\"%s\"",
                   kl_dtype_name(p->dtype), p->is_pointer ? "*" : "",
                   kl_dtype_name(p->dtype));
    kl__buf_printf(b, ",\"pointer\":%s,\"role\":\"%s\"",
                   p->is_pointer ? "true" : "false", kl_role_name(p->role));
    kl__buf_puts(b, ",\"count\":");
    kl__buf_json_string(b, p->count ? kl_expr_source(p->count) : NULL);
    kl__buf_puts(b, ",\"value\":");
    kl__buf_json_string(b, p->value ? kl_expr_source(p->value) : NULL);
    kl__buf_puts(b, ",\"init\":");
    kl__buf_json_string(b, p->init_text);
    for (size_t a = 0; a < c->nargs; a++) /* a struct's field */
      if (c->args[a].struct_type && i >= c->args[a].first &&
          i < c->args[a].first + c->args[a].count) {
        kl__buf_puts(b, ",\"struct\":");
        kl__buf_json_string(b, c->args[a].struct_type);
      }
    kl__buf_putc(b, '}');
  }
  kl__buf_putc(b, ']');
  return kl__buf_status(b);
}

static int describe_shapes(kl_buf *b, const kl_case *c) {
  kl__buf_puts(b, "\"shapes\":[");
  for (size_t s = 0; s < c->nshapes; s++) {
    const case_shape *sh = &c->shapes[s];
    kl__buf_puts(b, s ? ",{" : "{");
    json_key(b, "name");
    kl__buf_json_string(b, sh->name);
    if (sh->entry) {
      kl__buf_puts(b, ",\"entry\":");
      kl__buf_json_string(b, sh->entry);
    }
    kl__buf_printf(b, ",\"weight\":%.17g,\"values\":{", sh->weight);
    for (size_t i = 0; i < kl_vars_count(sh->vars); i++) {
      kl_value v;
      const char *name = kl_vars_name(sh->vars, i);
      kl_vars_get(&v, sh->vars, name);
      if (i) kl__buf_putc(b, ',');
      json_key(b, name);
      json_value(b, &v);
    }
    kl__buf_puts(b, "},\"elements\":{");
    bool first = true;
    for (size_t p = 0; p < c->nparams; p++) {
      if (!c->params[p].is_pointer) continue;
      if (!first) kl__buf_putc(b, ',');
      first = false;
      json_key(b, c->params[p].name);
      kl__buf_printf(b, "%lld", (long long)sh->elements[p]);
    }
    kl__buf_printf(b, "},\"buffer_bytes\":%lld",
                   (long long)kl_case_buffer_bytes(c, s));
    if (c->has_launch) {
      const kl_launch *l = &sh->launch;
      kl__buf_printf(
          b,
          ",\"launch\":{\"grid\":[%lld,%lld,%lld],\"block\":[%lld,%lld,"
          "%lld],\"shared_bytes\":%lld}",
          (long long)l->grid[0], (long long)l->grid[1], (long long)l->grid[2],
          (long long)l->block[0], (long long)l->block[1],
          (long long)l->block[2], (long long)l->shared_bytes);
    }
    if (c->roof_bytes || c->roof_flops)
      kl__buf_printf(b, ",\"roofline\":{\"bytes\":%.17g,\"flops\":%.17g}",
                     sh->roof_bytes, sh->roof_flops);
    kl__buf_putc(b, '}');
  }
  kl__buf_putc(b, ']');
  return kl__buf_status(b);
}

int kl_case_describe_json(kl_buf *out, const kl_case *c) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_putc(&b, '{');
  json_key(&b, "name");
  kl__buf_json_string(&b, c->name);
  kl__buf_puts(&b, ",\"path\":");
  kl__buf_json_string(&b, c->path);
  kl__buf_printf(&b,
                 ",\"backend\":\"%s\",\"arch\":", kl_backend_name(c->backend));
  kl__buf_json_string(&b, c->arch);
  kl__buf_puts(&b, ",\"libs\":[");
  for (size_t i = 0; i < c->nlibs; i++) {
    kl__buf_puts(&b, i ? "," : "");
    kl__buf_json_string(&b, c->libs[i]);
  }
  kl__buf_puts(&b, "],\"include\":[");
  for (size_t i = 0; i < c->nincludes; i++) {
    kl__buf_puts(&b, i ? "," : "");
    kl__buf_json_string(&b, c->includes[i]);
  }
  kl__buf_puts(&b, "],\"kernel\":{\"source\":");
  kl__buf_json_string(&b, c->kernel_path);
  kl__buf_puts(&b, ",\"entry\":");
  kl__buf_json_string(&b, c->entry);
  kl__buf_puts(&b, "},\"program\":");
  kl__buf_json_string(&b, c->program_path);
  kl__buf_puts(&b, ",\"rules\":[");
  for (size_t i = 0; i < c->nrule_files; i++) {
    kl__buf_puts(&b, i ? "," : "");
    kl__buf_json_string(&b, c->rule_files[i]);
  }
  kl__buf_puts(&b, "],");
  describe_params(&b, c);
  kl__buf_putc(&b, ',');
  describe_shapes(&b, c);
  kl__buf_printf(&b, ",\"reference\":{\"kind\":\"%s\",\"source\":",
                 c->ref.kind == KL_REFERENCE_HOST ? "host" : "baseline");
  kl__buf_json_string(&b, c->ref.source);
  kl__buf_puts(&b, ",\"function\":");
  kl__buf_json_string(&b, c->ref.function);
  kl__buf_printf(&b, ",\"atol\":%.17g,\"rtol\":%.17g}", c->ref.atol,
                 c->ref.rtol);
  kl__buf_printf(&b, ",\"objective\":\"%s\"", kl_objective_name(c->objective));
  kl__buf_puts(&b, ",\"tunables\":{");
  for (size_t i = 0; i < c->ntunables; i++) {
    if (i) kl__buf_putc(&b, ',');
    json_key(&b, c->tunables[i].name);
    kl__buf_putc(&b, '[');
    for (size_t j = 0; j < c->tunables[i].nvalues; j++) {
      if (j) kl__buf_putc(&b, ',');
      kl__buf_json_string(&b, c->tunables[i].values[j]);
    }
    kl__buf_putc(&b, ']');
  }
  kl__buf_printf(&b,
                 "},\"budget\":{\"iterations\":%lld,\"patience\":%lld,"
                 "\"min_gain_pct\":%.17g}}",
                 (long long)c->budget.iterations, (long long)c->budget.patience,
                 c->budget.min_gain_pct);
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t case_options_sizes[] = {
    0, offsetof(kl_case_options, tunables), sizeof(kl_case_options)};

KL__OPTIONS_FUNCTIONS(kl_case_options, kl_case_options_init,
                      kl__case_options_take, KL_CASE_OPTIONS_INIT,
                      case_options_sizes)
