/* kl_case_new: stamp a case folder from a template.
 *
 * A template is a folder of files (share/kernlab/templates/<name>/). Each
 * regular file is copied with every `{{name}}` replaced by the new case's
 * name. The target folder must not exist: nothing is ever overwritten. If a
 * copy fails half way, the files written so far are removed again. */
#include <stddef.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "case_internal.h"

static bool valid_case_name(const char *name) {
  if (!name || !name[0] || name[0] == '.' || name[0] == '-' ||
      strlen(name) > 128)
    return false;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
      return false;
  return true;
}

static int substitute(kl_buf *out, const char *text, const char *name) {
  const char *p = text;
  for (const char *hit; (hit = strstr(p, "{{name}}"));) {
    kl__buf_put(out, p, (size_t)(hit - p));
    kl__buf_puts(out, name);
    p = hit + strlen("{{name}}");
  }
  kl__buf_puts(out, p);
  return kl__buf_status(out);
}

/* One template file, {{name}} stamped, as a new file of the case. */
static int stamp(const char *tdir, const char *target, const char *file,
                 const char *name) {
  char *src = kl__path_join(tdir, file), *dst = kl__path_join(target, file);
  kl_buf text = KL_BUF_INIT, stamped = KL_BUF_INIT;
  int rc = src && dst ? kl__read_file(&text, src) : kl__error_oom();
  if (rc < 0) goto done;
  substitute(&stamped, text.ptr ? text.ptr : "", name);
  if ((rc = kl__buf_status(&stamped)) < 0) goto done;
  rc = kl__write_new_file(dst, stamped.ptr ? stamped.ptr : "", stamped.size);
done:
  kl_buf_dispose(&text);
  kl_buf_dispose(&stamped);
  kl__free(src);
  kl__free(dst);
  return rc;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of a folder, sorted, so stamping is deterministic. */
static int list_files(char ***out, size_t *count, const char *dir) {
  *out = NULL;
  *count = 0;
  DIR *d = opendir(dir);
  if (!d)
    return kl__error_os(errno == ENOENT ? KL_ENOTFOUND : KL_EIO, dir,
                        "cannot open template");
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char *full = kl__path_join(dir, e->d_name);
    bool file = full && kl__is_file(full);
    kl__free(full);
    if (!file) continue;
    if ((rc = KL__GROW(names, cap, n + 1)) < 0) break;
    if (!(names[n] = kl__strdup(e->d_name))) {
      rc = kl__error_oom();
      break;
    }
    n++;
  }
  closedir(d);
  if (rc < 0) {
    for (size_t i = 0; i < n; i++)
      kl__free(names[i]);
    kl__free(names);
    return rc;
  }
  qsort(names, n, sizeof(*names), compare_names);
  *out = names;
  *count = n;
  return 0;
}

static char *template_dir(const char *template_name) {
  if (strchr(template_name, '/')) return kl__strdup(template_name);
  const char *share = kl_share_dir();
  if (!share) return NULL;
  char *templates = kl__path_join(share, "templates");
  char *dir = templates ? kl__path_join(templates, template_name) : NULL;
  kl__free(templates);
  return dir;
}

int kl_case_new(kl_buf *out_path, const char *name,
                const kl_case_new_options *given) {
  kl_case_new_options full;
  int taken = kl__case_new_options_take(&full, given);
  if (taken < 0) return taken;
  const kl_case_new_options *opts = &full;
  const char *tname = opts->template_name ? opts->template_name : "host";
  const char *parent = opts->dir ? opts->dir : ".";
  if (!valid_case_name(name))
    return kl__error(KL_EINVALID, KL_DOMAIN_TEMPLATE,
                     "case name '%s' may hold only letters, digits, '_', "
                     "'-' and '.', and not start with '.' or '-'",
                     name ? name : "");
  char *tdir = template_dir(tname);
  if (!tdir)
    return kl_share_dir()
               ? kl__error_oom()
               : kl__error(KL_ENOTFOUND, KL_DOMAIN_TEMPLATE,
                           "kernlab's share folder was not found; set "
                           "KERNLAB_SHARE_DIR");
  if (!kl__is_dir(tdir)) {
    int rc = kl__error(
        KL_ENOTFOUND, KL_DOMAIN_TEMPLATE,
        "no template '%s' (looked in %s; bundled: host, cuda, python)", tname,
        tdir);
    kl__free(tdir);
    return rc;
  }
  char **files = NULL;
  size_t nfiles = 0, written = 0;
  char *target = kl__path_join(parent, name);
  int rc = target ? list_files(&files, &nfiles, tdir) : kl__error_oom();
  if (rc < 0) goto done;
  if (nfiles == 0) {
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_TEMPLATE,
                   "template '%s' has no files", tname);
    goto done;
  }
  if (!kl__is_dir(parent)) {
    rc = kl__error(KL_ENOTFOUND, KL_DOMAIN_TEMPLATE,
                   "%s: no such folder to create the case in", parent);
    goto done;
  }
  /* nothing is done yet: a folder the user cannot write to is bad input */
  if (mkdir(target, 0755) < 0) {
    rc = kl__error_os(errno == EEXIST ? KL_EEXISTS
                                      : kl__errno_code(errno, false),
                      target, "cannot create the case folder");
    goto done;
  }
  for (; written < nfiles; written++)
    if ((rc = stamp(tdir, target, files[written], name)) < 0) break;
  if (rc < 0) { /* leave nothing half-made behind */
    for (size_t i = 0; i < written; i++) {
      char *dst = kl__path_join(target, files[i]);
      if (dst) unlink(dst);
      kl__free(dst);
    }
    rmdir(target);
    goto done;
  }
  if (out_path) {
    kl_buf_dispose(out_path);
    rc = kl__buf_puts(out_path, target);
  }
done:
  for (size_t i = 0; i < nfiles; i++)
    kl__free(files[i]);
  kl__free(files);
  kl__free(tdir);
  kl__free(target);
  return rc;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t case_new_options_sizes[] = {0, sizeof(kl_case_new_options)};

KL__OPTIONS_FUNCTIONS(kl_case_new_options, kl_case_new_options_init,
                      kl__case_new_options_take, KL_CASE_NEW_OPTIONS_INIT,
                      case_new_options_sizes)
