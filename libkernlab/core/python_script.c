/* kl__python_script: run a small python3 program that reads a user's
 * Python file (by ast, never importing it) and prints one JSON object.
 *
 * The readers of Python sources (kl case from-kernelbench, kl case
 * from-observation of a Triton kernel) share the protocol: the script gets
 * the file's path and its own argument, prints its answer as one JSON
 * object, or {"error", "line", "column"} for a problem in the file, which
 * becomes the one-line error `path:line:column: message`. */
#include "json.h"

int kl__python_script(json_object **out, const char *script, const char *path,
                      const char *arg, size_t max_output) {
  *out = NULL;
  const char *argv[] = {"python3", "-c", script, path, arg, NULL};
  kl__run_result res;
  int rc = kl__run(&res, argv, NULL, 60000, max_output);
  if (rc < 0) {
    if (rc == KL_ENOTFOUND)
      return kl__error(KL_ENOTFOUND, KL_DOMAIN_OS,
                       "python3 is needed to read %s", path);
    return rc;
  }
  json_object *doc = res.exit_code == 0 && res.output.ptr
                         ? json_tokener_parse(res.output.ptr)
                         : NULL;
  json_object *err = doc ? kl__json_get(doc, "error") : NULL;
  if (!doc) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                   "%s: python3 could not read it: %.200s", path,
                   res.output.ptr ? res.output.ptr : "");
  } else if (err) {
    rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path,
                      (int)kl__json_num(doc, "line"),
                      (int)kl__json_num(doc, "column"), NULL, "%s",
                      json_object_get_string(err));
    json_object_put(doc);
  } else {
    *out = doc;
  }
  kl_buf_dispose(&res.output);
  return rc;
}
