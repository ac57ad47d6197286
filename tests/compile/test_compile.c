/* The compile cache: a key compiles once; flags and defines change the
 * key, and so do the headers and libraries the build read; compiler
 * errors carry the candidate's own line numbers and are cached too. Each
 * test uses a fresh cache folder. */
#define _GNU_SOURCE /* AT_FDCWD, utimensat */
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernlab/kernlab.h"

static char cache[] = "/tmp/kl-cache-test-XXXXXX";
static kl_case *saxpy;

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(cache)) return -1;
  return kl_case_load(&saxpy, KL_SOURCE_DIR "/cases/host_saxpy", NULL);
}

static int teardown(void **state) {
  (void)state;
  kl_case_free(saxpy);
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
  return system(cmd) == 0 ? 0 : -1;
}

static kl_artifact *compile(const char *cand, const char *const *defines) {
  kl_compile_options o = KL_COMPILE_OPTIONS_INIT;
  o.cache_dir = cache;
  o.defines = defines;
  o.candidate_name = "cand.c";
  kl_artifact *a = NULL;
  if (kl_compile_plugin(&a, saxpy, cand, &o))
    fail_msg("%s", kl_error_last()->message);
  return a;
}

static void test_compile__second_time_is_cached(void **state) {
  (void)state;
  kl_artifact *a = compile(NULL, NULL), *b = compile(NULL, NULL);
  assert_true(kl_artifact_ok(a));
  assert_false(kl_artifact_cached(a));
  assert_true(kl_artifact_ok(b));
  assert_true(kl_artifact_cached(b));
  assert_string_equal(kl_artifact_key(a), kl_artifact_key(b));
  assert_string_equal(kl_artifact_path(a), kl_artifact_path(b));
  assert_int_equal(strlen(kl_artifact_key(a)), 64);
  const char *unroll4[] = {"UNROLL=4", NULL}, *unroll8[] = {"UNROLL=8", NULL};
  kl_artifact *c = compile(NULL, unroll4), *d = compile(NULL, unroll8);
  assert_string_not_equal(kl_artifact_key(a), kl_artifact_key(c));
  assert_string_not_equal(kl_artifact_key(c), kl_artifact_key(d));
  assert_false(kl_artifact_cached(c));
  kl_artifact_free(a);
  kl_artifact_free(b);
  kl_artifact_free(c);
  kl_artifact_free(d);
}

static void test_compile__errors_name_the_candidates_line(void **state) {
  (void)state;
  const char *bad = "void saxpy(float *y, const float *x, float a, int n) {\n"
                    "  for (int i = 0; i < n; i++)\n"
                    "    y[i] = a * x[i] + undefined_name;\n"
                    "}\n";
  kl_artifact *a = compile(bad, NULL);
  assert_false(kl_artifact_ok(a));
  assert_null(kl_artifact_path(a));
  const char *first = kl_artifact_first_error(a);
  assert_non_null(first);
  assert_true(strncmp(first, "cand.c:3:", 9) == 0);
  assert_non_null(strstr(first, "undefined_name"));
  assert_false(kl_artifact_cached(a));
  /* the failure is remembered: not compiled a second time */
  kl_artifact *b = compile(bad, NULL);
  assert_false(kl_artifact_ok(b));
  assert_true(kl_artifact_cached(b));
  assert_string_equal(kl_artifact_first_error(b), first);
  kl_artifact_free(a);
  kl_artifact_free(b);
}

static void test_compile__missing_compiler_is_an_error(void **state) {
  (void)state;
  kl_compile_options o = KL_COMPILE_OPTIONS_INIT;
  o.cache_dir = cache;
  o.compiler = "/nonexistent/cc";
  kl_artifact *a = NULL;
  assert_int_equal(kl_compile_plugin(&a, saxpy, NULL, &o), KL_ENOTFOUND);
  assert_null(a);
  assert_non_null(strstr(kl_error_last()->message, "/nonexistent/cc"));
}

static void write_text(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* A kernel that includes a header from another folder and calls a library
 * function: target.include and target.libs build it, the plugin loads
 * with every symbol bound (RTLD_NOW), and the standalone harness's build
 * line names them. Without target.libs the plugin builds (a shared object
 * may leave symbols undefined) but cannot load. */
static void test_compile__case_libs_and_include(void **state) {
  (void)state;
  char dir[512], cmd[1400];
  snprintf(dir, sizeof(dir), "%s/linkcase", cache);
  snprintf(cmd, sizeof(cmd), "mkdir -p %s/inc %s/lib", dir, dir);
  assert_int_equal(system(cmd), 0);
  write_text(dir, "inc/helper.h", "float helper_scale(void);\n");
  write_text(dir, "lib/helper.c", "float helper_scale(void) { return 2; }\n");
  snprintf(cmd, sizeof(cmd),
           "cd %s/lib && cc -fPIC -c helper.c -o helper.o && "
           "ar rcs libhelper.a helper.o",
           dir);
  assert_int_equal(system(cmd), 0);
  write_text(dir, "kernel.c",
             "#include <helper.h>\n"
             "void f(float *x, int n) {\n"
             "  for (int i = 0; i < n; i++) x[i] = helper_scale();\n"
             "}\n");
  static const char yaml[] =
      "kernlab: 1\nname: linkcase\nbackend: host\n"
      "%s"
      "kernel: { source: kernel.c, entry: f }\n"
      "params:\n  - { name: x, type: f32*, role: output, count: n }\n"
      "  - { name: n, type: i32 }\n"
      "shapes:\n  - { name: s, n: 16 }\n"
      "reference: { kind: baseline }\n";
  char text[1024];
  for (int linked = 1; linked >= 0; linked--) {
    snprintf(text, sizeof(text), yaml,
             linked ? "target: { libs: [lib/libhelper.a], include: [inc] }\n"
                    : "target: { include: [inc] }\n");
    write_text(dir, "case.yaml", text);
    kl_case *c = NULL;
    if (kl_case_load(&c, dir, NULL)) fail_msg("%s", kl_error_last()->message);
    assert_int_equal(kl_case_lib_count(c), (size_t)linked);
    assert_int_equal(kl_case_include_count(c), 1);
    kl_compile_options o = KL_COMPILE_OPTIONS_INIT;
    o.cache_dir = cache;
    kl_artifact *a = NULL;
    if (kl_compile_plugin(&a, c, NULL, &o))
      fail_msg("%s", kl_error_last()->message);
    if (!kl_artifact_ok(a)) fail_msg("%s", kl_artifact_log(a));
    void *h = dlopen(kl_artifact_path(a), RTLD_NOW | RTLD_LOCAL);
    if (linked && !h) fail_msg("linked, yet: %s", dlerror());
    if (!linked && h) fail_msg("loaded without the library it calls");
    if (h) dlclose(h);
    kl_buf src = KL_BUF_INIT;
    kl_harness_options ho = KL_HARNESS_OPTIONS_INIT;
    ho.form = KL_HARNESS_STANDALONE;
    assert_int_equal(kl_harness_generate(&src, c, NULL, &ho), 0);
    char want[600];
    snprintf(want, sizeof(want), "-I %s/inc", dir);
    assert_non_null(strstr(src.ptr, want));
    snprintf(want, sizeof(want), "harness.c %s/lib/libhelper.a -lm", dir);
    if (linked && !strstr(src.ptr, want))
      fail_msg("the build line lacks '%s': %.400s", want, src.ptr);
    kl_buf_dispose(&src);
    kl_artifact_free(a);
    kl_case_free(c);
  }
}

/* A header of a target.include folder outside the case's, a library and a
 * source file of target.libs, changed in place: the next build is not the
 * cached one (a stale plugin once served an edited header's old value). A
 * header rewritten with its own bytes keeps the entry, and a build that
 * failed on a header builds once the header is mended. */
/* A file's time set back ten seconds: a build that starts as a file is
 * written is not cached (kl__deps_settled), which the first two builds
 * here must be. */
static void backdate(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  struct timespec now, t[2];
  clock_gettime(CLOCK_REALTIME, &now);
  t[0] = t[1] = (struct timespec){.tv_sec = now.tv_sec - 10};
  assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static kl_artifact *build_case(const char *dir) {
  kl_case *c = NULL;
  if (kl_case_load(&c, dir, NULL)) fail_msg("%s", kl_error_last()->message);
  kl_compile_options o = KL_COMPILE_OPTIONS_INIT;
  o.cache_dir = cache;
  kl_artifact *a = NULL;
  if (kl_compile_plugin(&a, c, NULL, &o))
    fail_msg("%s", kl_error_last()->message);
  kl_case_free(c);
  return a;
}

static void test_compile__edited_header_or_library_builds_again(void **state) {
  (void)state;
  char dir[512], shared[512], cmd[1400], text[2400];
  snprintf(dir, sizeof(dir), "%s/depcase", cache);
  snprintf(shared, sizeof(shared), "%s/depshared", cache);
  snprintf(cmd, sizeof(cmd), "mkdir -p %s %s", dir, shared);
  assert_int_equal(system(cmd), 0);
  write_text(shared, "scale.h", "#define SCALE 2.0f\n");
  write_text(shared, "extra.c", "float extra(void) { return 1; }\n");
  snprintf(cmd, sizeof(cmd),
           "cd %s && printf 'float helper(void) { return 2; }\\n' >h.c && "
           "cc -fPIC -c h.c -o h.o && ar rcs libh.a h.o",
           shared);
  assert_int_equal(system(cmd), 0);
  write_text(
      dir, "kernel.c",
      "#include <scale.h>\n"
      "float helper(void);\nfloat extra(void);\n"
      "void f(float *x, int n) {\n"
      "  for (int i = 0; i < n; i++) x[i] = SCALE * helper() + extra();\n"
      "}\n");
  snprintf(text, sizeof(text),
           "kernlab: 1\nname: depcase\nbackend: host\n"
           "target: { include: [%s], libs: [%s/libh.a, %s/extra.c] }\n"
           "kernel: { source: kernel.c, entry: f }\n"
           "params:\n  - { name: x, type: f32*, role: output, count: n }\n"
           "  - { name: n, type: i32 }\n"
           "shapes:\n  - { name: s, n: 16 }\n"
           "reference: { kind: baseline }\n",
           shared, shared, shared);
  write_text(dir, "case.yaml", text);
  static const char *const made[] = {"scale.h", "extra.c", "libh.a"};
  for (size_t i = 0; i < 3; i++)
    backdate(shared, made[i]);
  kl_artifact *first = build_case(dir), *again = build_case(dir);
  if (!kl_artifact_ok(first)) fail_msg("%s", kl_artifact_log(first));
  assert_false(kl_artifact_cached(first));
  assert_true(kl_artifact_cached(again));
  assert_string_equal(kl_artifact_key(first), kl_artifact_key(again));
  /* the same bytes written again: still the entry */
  write_text(shared, "scale.h", "#define SCALE 2.0f\n");
  kl_artifact *same = build_case(dir);
  assert_true(kl_artifact_cached(same));
  /* each change in place: built again, under another name */
  const char *keys[4] = {kl_artifact_key(first)};
  kl_artifact *changed[3];
  write_text(shared, "scale.h", "#define SCALE 3.0f\n");
  changed[0] = build_case(dir);
  snprintf(cmd, sizeof(cmd),
           "cd %s && printf 'float helper(void) { return 5; }\\n' >h.c && "
           "cc -fPIC -c h.c -o h.o && rm libh.a && ar rcs libh.a h.o",
           shared);
  assert_int_equal(system(cmd), 0);
  changed[1] = build_case(dir);
  write_text(shared, "extra.c", "float extra(void) { return 7; }\n");
  changed[2] = build_case(dir);
  for (int i = 0; i < 3; i++) {
    if (!kl_artifact_ok(changed[i]))
      fail_msg("%s", kl_artifact_log(changed[i]));
    if (kl_artifact_cached(changed[i])) fail_msg("change %d served cached", i);
    keys[i + 1] = kl_artifact_key(changed[i]);
    for (int j = 0; j <= i; j++)
      assert_string_not_equal(keys[i + 1], keys[j]);
  }
  /* a header that breaks the build, then mended */
  write_text(shared, "scale.h", "#define SCALE 4.0f +\n");
  kl_artifact *broken = build_case(dir);
  assert_false(kl_artifact_ok(broken));
  write_text(shared, "scale.h", "#define SCALE 4.0f\n");
  kl_artifact *mended = build_case(dir);
  if (!kl_artifact_ok(mended)) fail_msg("%s", kl_artifact_log(mended));
  assert_false(kl_artifact_cached(mended));
  kl_artifact *list[] = {first,      again,      same,   changed[0],
                         changed[1], changed[2], broken, mended};
  for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
    kl_artifact_free(list[i]);
}

/* target.include through a link that is then pointed at another folder:
 * the same -I, other headers, built again. A header modified after the
 * build began (its time ahead of the clock here) leaves nothing cached:
 * the build may have read it before the change or after. */
static void test_compile__moved_link_and_unsettled_header(void **state) {
  (void)state;
  char dir[512], cmd[4096], text[1400];
  snprintf(dir, sizeof(dir), "%s/linkdeps", cache);
  snprintf(cmd, sizeof(cmd),
           "mkdir -p %s/a %s/b %s/case && "
           "printf '#define SCALE 2.0f\\n' >%s/a/scale.h && "
           "printf '#define SCALE 3.0f\\n' >%s/b/scale.h && "
           "ln -sfn a %s/inc",
           dir, dir, dir, dir, dir, dir);
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof(cmd), "%s/case", dir);
  write_text(cmd, "kernel.c",
             "#include <scale.h>\n"
             "void f(float *x, int n) {\n"
             "  for (int i = 0; i < n; i++) x[i] = SCALE;\n"
             "}\n");
  snprintf(text, sizeof(text),
           "kernlab: 1\nname: linkdeps\nbackend: host\n"
           "target: { include: [%s/inc] }\n"
           "kernel: { source: kernel.c, entry: f }\n"
           "params:\n  - { name: x, type: f32*, role: output, count: n }\n"
           "  - { name: n, type: i32 }\n"
           "shapes:\n  - { name: s, n: 16 }\n"
           "reference: { kind: baseline }\n",
           dir);
  write_text(cmd, "case.yaml", text);
  char sub[600];
  snprintf(sub, sizeof(sub), "%s/a", dir);
  backdate(sub, "scale.h");
  snprintf(sub, sizeof(sub), "%s/b", dir);
  backdate(sub, "scale.h");
  kl_artifact *a = build_case(cmd), *a2 = build_case(cmd);
  assert_true(kl_artifact_cached(a2));
  char relink[1200];
  snprintf(relink, sizeof(relink), "ln -sfn b %s/inc", dir);
  assert_int_equal(system(relink), 0);
  kl_artifact *b = build_case(cmd);
  if (!kl_artifact_ok(b)) fail_msg("%s", kl_artifact_log(b));
  assert_false(kl_artifact_cached(b));
  assert_string_not_equal(kl_artifact_key(a), kl_artifact_key(b));
  /* b's header, dated ahead: each build runs, none is kept */
  char path[700];
  snprintf(path, sizeof(path), "%s/b/scale.h", dir);
  struct timespec now, t[2];
  clock_gettime(CLOCK_REALTIME, &now);
  t[0] = t[1] = (struct timespec){.tv_sec = now.tv_sec + 100};
  assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
  write_text(sub, "scale.h", "#define SCALE 5.0f\n");
  assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
  kl_artifact *u1 = build_case(cmd), *u2 = build_case(cmd);
  if (!kl_artifact_ok(u1)) fail_msg("%s", kl_artifact_log(u1));
  assert_true(kl_artifact_ok(u2));
  assert_false(kl_artifact_cached(u1));
  assert_false(kl_artifact_cached(u2));
  kl_artifact *list[] = {a, a2, b, u1, u2};
  for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
    kl_artifact_free(list[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compile__second_time_is_cached),
      cmocka_unit_test(test_compile__errors_name_the_candidates_line),
      cmocka_unit_test(test_compile__missing_compiler_is_an_error),
      cmocka_unit_test(test_compile__case_libs_and_include),
      cmocka_unit_test(test_compile__edited_header_or_library_builds_again),
      cmocka_unit_test(test_compile__moved_link_and_unsettled_header),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
