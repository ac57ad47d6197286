/* What kl-pyworker loads for a python case: a JSON description written
 * beside the candidate in the compile cache (compile.c writes it; this
 * file owns its format, kl-worker/kl_pyworker.py reads it):
 *
 *   {"case": name, "device": "cuda" | "host", "module": the case's module,
 *    "candidate": the candidate's file or null (the baseline: the module's
 *    forward), "params": [{"name", "role", "dtype"}...],
 *    "shapes": [{"name", "values": {key: number...}}...],
 *    "atol": x, "rtol": y}
 *
 * A shape's values are its keys and every scalar param, as the case's
 * expressions see them; the module's inputs(shape, seed) reads them. */
#define _GNU_SOURCE /* realpath */
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../case/case_view.h"
#include "../core/internal.h"
#include "python_case.h"

static json_object *shape_values(const case_shape *s) {
  json_object *v = json_object_new_object();
  for (size_t i = 0; v && i < kl_vars_count(s->vars); i++) {
    const char *name = kl_vars_name(s->vars, i);
    kl_value x;
    if (!name || kl_vars_get(&x, s->vars, name) < 0) continue;
    json_object_object_add(v, name,
                           x.is_int ? json_object_new_int64(x.i)
                                    : json_object_new_double(x.f));
  }
  return v;
}

int kl__python_case_describe(kl_buf *out, const kl_case *c,
                             const char *candidate_path) {
  const kl_reference_info *ref = kl__case_reference(c);
  if (kl_case_backend(c) != KL_BACKEND_PYTHON)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "case '%s' is not a python case", kl_case_name(c));
  json_object *o = json_object_new_object();
  json_object *params = json_object_new_array();
  json_object *shapes = json_object_new_array();
  json_object_object_add(o, "case", json_object_new_string(kl_case_name(c)));
  json_object_object_add(o, "device",
                         json_object_new_string(kl_case_python_device(c)));
  /* absolute: the worker runs in its sandbox's folder, not the caller's */
  char module[PATH_MAX], cand[PATH_MAX];
  if (!realpath(kl_case_kernel_path(c), module))
    snprintf(module, sizeof(module), "%s", kl_case_kernel_path(c));
  if (candidate_path && !realpath(candidate_path, cand))
    snprintf(cand, sizeof(cand), "%s", candidate_path);
  json_object_object_add(o, "module", json_object_new_string(module));
  json_object_object_add(o, "candidate",
                         candidate_path ? json_object_new_string(cand) : NULL);
  for (size_t p = 0; p < kl_case_param_count(c); p++) {
    const case_param *pa = &kl__case_params(c)[p];
    json_object *q = json_object_new_object();
    json_object_object_add(q, "name", json_object_new_string(pa->name));
    json_object_object_add(q, "role",
                           json_object_new_string(kl_role_name(pa->role)));
    json_object_object_add(q, "dtype",
                           json_object_new_string(kl_dtype_name(pa->dtype)));
    json_object_array_add(params, q);
  }
  for (size_t s = 0; s < kl_case_shape_count(c); s++) {
    json_object *e = json_object_new_object();
    json_object_object_add(e, "name",
                           json_object_new_string(kl_case_shape_name(c, s)));
    json_object_object_add(e, "values", shape_values(&kl__case_shapes(c)[s]));
    json_object_array_add(shapes, e);
  }
  json_object_object_add(o, "params", params);
  json_object_object_add(o, "shapes", shapes);
  json_object_object_add(o, "atol", json_object_new_double(ref->atol));
  json_object_object_add(o, "rtol", json_object_new_double(ref->rtol));
  const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY);
  int rc = text ? kl__buf_puts(out, text) : kl__error_oom();
  json_object_put(o);
  return rc < 0 ? rc : kl__buf_status(out);
}
