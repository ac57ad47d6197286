/* The harness generator: golden files for both forms of both host cases
 * (KL_UPDATE_GOLDEN=1 rewrites them after a deliberate change), determinism,
 * the standalone form compiling and running with nothing but cc, and a host
 * plugin's vary() driven through the ABI. */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/internal.h"
#include "kernlab/kernlab.h"
#include "kernlab/plugin.h"
#include "support/slurp.h"

#define SRC KL_SOURCE_DIR

static void generate(kl_buf *out, const char *case_name, const char *cand,
                     kl_harness_form form) {
  char path[512];
  snprintf(path, sizeof(path), SRC "/cases/%s", case_name);
  kl_case *c;
  if (kl_case_load(&c, path, NULL)) fail_msg("%s", kl_error_last()->message);
  kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
  o.form = form;
  if (cand) o.candidate_name = "candidate.c";
  if (kl_harness_generate(out, c, cand, &o))
    fail_msg("%s", kl_error_last()->message);
  kl_case_free(c);
}

static void golden(const char *case_name, const char *cand,
                   kl_harness_form form, const char *file) {
  kl_buf b = KL_BUF_INIT;
  generate(&b, case_name, cand, form);
  char path[512];
  snprintf(path, sizeof(path), SRC "/tests/harness/golden/%s", file);
  const char *update = getenv("KL_UPDATE_GOLDEN");
  if (update && update[0] == '1') {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(b.ptr, 1, b.size, f);
    fclose(f);
  }
  char *want = kl_test_slurp(path);
  if (!want) fail_msg("no golden file %s (run with KL_UPDATE_GOLDEN=1)", path);
  if (strcmp(want, b.ptr) != 0) {
    size_t i = 0;
    while (want[i] && want[i] == b.ptr[i])
      i++;
    fail_msg("%s differs from the generated source at byte %zu", file, i);
  }
  free(want);
  kl_buf_dispose(&b);
}

static void test_harness__golden_files(void **state) {
  (void)state;
  golden("host_saxpy", NULL, KL_HARNESS_STANDALONE, "host_saxpy.standalone.c");
  golden("host_saxpy", NULL, KL_HARNESS_PLUGIN, "host_saxpy.plugin.c");
  golden("host_matmul", NULL, KL_HARNESS_STANDALONE,
         "host_matmul.standalone.c");
  golden("vector_add", NULL, KL_HARNESS_STANDALONE, "vector_add.standalone.cu");
  golden("rmsnorm_bf16", NULL, KL_HARNESS_PLUGIN, "rmsnorm_bf16.plugin.cu");
  golden("host_saxpy",
         "void saxpy(float *y, const float *x, float a, int n) {\n"
         "  for (int i = 0; i < n; i++) y[i] += a * x[i];\n}\n",
         KL_HARNESS_STANDALONE, "host_saxpy.candidate.standalone.c");
}

static void test_harness__deterministic(void **state) {
  (void)state;
  kl_buf a = KL_BUF_INIT, b = KL_BUF_INIT;
  generate(&a, "host_matmul", NULL, KL_HARNESS_PLUGIN);
  generate(&b, "host_matmul", NULL, KL_HARNESS_PLUGIN);
  assert_int_equal(a.size, b.size);
  assert_memory_equal(a.ptr, b.ptr, a.size);
  kl_buf_dispose(&a);
  kl_buf_dispose(&b);
}

static void test_harness__standalone_runs_with_only_cc(void **state) {
  (void)state;
  /* A candidate with an off-by-one against the embedded baseline: the
   * standalone program must find it by itself. */
  kl_buf b = KL_BUF_INIT;
  generate(&b, "host_saxpy",
           "void saxpy(float *y, const float *x, float a, int n) {\n"
           "  for (int i = 0; i < n - 1; i++) y[i] = a * x[i] + y[i];\n}\n",
           KL_HARNESS_STANDALONE);
  char dir[] = "/tmp/kl-harness-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char src[256], exe[256], cmd[1024], out[256];
  snprintf(src, sizeof(src), "%s/h.c", dir);
  snprintf(exe, sizeof(exe), "%s/h", dir);
  snprintf(out, sizeof(out), "%s/out.txt", dir);
  FILE *f = fopen(src, "wb");
  fwrite(b.ptr, 1, b.size, f);
  fclose(f);
  snprintf(cmd, sizeof(cmd),
           "cc -std=c11 -O2 -Wall -Wextra -Werror %s -lm -o %s", src, exe);
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof(cmd), "%s > %s", exe, out);
  int status = system(cmd);
  assert_int_not_equal(status, 0); /* an incorrect candidate fails */
  char *text = kl_test_slurp(out);
  assert_non_null(text);
  assert_non_null(strstr(text, "\"shape\":\"1M\",\"checked\":true,"
                               "\"correct\":false"));
  assert_non_null(strstr(text, "\"mismatches\":3,")); /* one per seed */
  free(text);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
  kl_buf_dispose(&b);
}

/* The build line a harness prints uses the case's target.flags in place of
 * the default flags, as kernlab's own compile does. */
static void test_harness__build_line_says_the_case_flags(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-harness-XXXXXX", cmd[1024];
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof(cmd),
           "cp -r " SRC "/cases/host_saxpy/. %s && sed -i 's/^backend: "
           "host$/backend: host\\ntarget: { flags: \"-O2 -DKL_X=1\" }/' "
           "%s/case.yaml",
           dir, dir);
  assert_int_equal(system(cmd), 0);
  kl_case *c;
  if (kl_case_load(&c, dir, NULL)) fail_msg("%s", kl_error_last()->message);
  kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
  kl_buf b = KL_BUF_INIT;
  o.form = KL_HARNESS_STANDALONE;
  assert_int_equal(kl_harness_generate(&b, c, NULL, &o), 0);
  assert_non_null(strstr(b.ptr, " * Build and run: cc -O2 -DKL_X=1 harness.c"));
  kl_buf_dispose(&b);
  o.form = KL_HARNESS_PLUGIN;
  assert_int_equal(kl_harness_generate(&b, c, NULL, &o), 0);
  assert_non_null(strstr(b.ptr, " * Build: cc -O2 -DKL_X=1 -shared"));
  kl_buf_dispose(&b);
  kl_case_free(c);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static void test_harness__cuda_plugin_compiles_with_nvcc(void **state) {
  (void)state;
  /* Generating and compiling CUDA harnesses needs the toolkit, not a GPU. */
  if (system("command -v nvcc >/dev/null 2>&1") != 0) skip();
  kl_case *c;
  assert_int_equal(kl_case_load(&c, SRC "/cases/rmsnorm_bf16", NULL), 0);
  char cache[] = "/tmp/kl-nvcc-XXXXXX";
  assert_non_null(mkdtemp(cache));
  kl_compile_options o = KL_COMPILE_OPTIONS_INIT;
  o.cache_dir = cache;
  kl_artifact *a;
  if (kl_compile_plugin(&a, c, NULL, &o))
    fail_msg("%s", kl_error_last()->message);
  if (!kl_artifact_ok(a)) fail_msg("nvcc failed: %s", kl_artifact_log(a));
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "nm -D %s | grep -q ' T kl_plugin_v1'",
           kl_artifact_path(a));
  assert_int_equal(system(cmd), 0);
  kl_artifact_free(a);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
  assert_int_equal(system(cmd), 0);
  kl_case_free(c);
}

/* vary() on a generated host plugin: a few elements of the inputs drawn at
 * random change, in the pristine copy too (restore() puts an inout back to
 * its varied values, input_intact() holds); a constant and an arange do not
 * change; the same seed gives the same values, 0 and prepare() put back
 * what prepare wrote, and the oracle reads the varied inputs. */
#define VARY_N 100000
static const char vary_case[] =
    "kernlab: 1\n"
    "name: vary_probe\n"
    "backend: host\n"
    "kernel: { source: kernel.c, entry: axpw }\n"
    "params:\n"
    "  - { name: y, type: f32*, role: inout, count: n, init: normal }\n"
    "  - { name: x, type: f32*, role: input, count: n }\n"
    "  - { name: w, type: f32*, role: input, count: n, init: constant(2) }\n"
    "  - { name: k, type: i32*, role: input, count: n, init: arange }\n"
    "  - { name: n, type: i32 }\n"
    "shapes:\n"
    "  - { name: s, n: 100000 }\n"
    "reference: { kind: host, source: reference.c, function: axpw_ref, "
    "atol: 0, rtol: 0 }\n";

static void read_all(const kl_plugin *pl, void *inst, float *y, float *x,
                     float *w, int32_t *k) {
  assert_int_equal(pl->read(inst, 0, y, VARY_N * 4), 0);
  assert_int_equal(pl->read(inst, 1, x, VARY_N * 4), 0);
  assert_int_equal(pl->read(inst, 2, w, VARY_N * 4), 0);
  assert_int_equal(pl->read(inst, 3, k, VARY_N * 4), 0);
}

static int differ(const void *a, const void *b, size_t n) {
  int d = 0;
  for (size_t i = 0; i < n; i++)
    d += memcmp((const char *)a + 4 * i, (const char *)b + 4 * i, 4) != 0;
  return d;
}

/* Each {name, text} of files written into dir. */
static void write_files(const char *dir, const char *const (*files)[2],
                        size_t n) {
  for (size_t i = 0; i < n; i++) {
    char path[300];
    snprintf(path, sizeof(path), "%s/%s", dir, files[i][0]);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(files[i][1], f);
    fclose(f);
  }
}

/* The host plugin of a case written into dir (case.yaml, kernel.c and
 * reference.c from the texts given), built and loaded. Not closed: the
 * plugin's fill cache (klh_fill_cached) lives as long as the plugin is
 * loaded, as in the worker, and closing it makes that a leak to ASan. */
static const kl_plugin *host_plugin(const char *dir, const char *yaml,
                                    const char *kernel, const char *ref) {
  char path[256], cmd[1024];
  const char *const texts[][2] = {
      {"case.yaml", yaml}, {"kernel.c", kernel}, {"reference.c", ref}};
  write_files(dir, texts, 3);
  kl_case *c;
  if (kl_case_load(&c, dir, NULL)) fail_msg("%s", kl_error_last()->message);
  kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
  o.form = KL_HARNESS_PLUGIN;
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl_harness_generate(&b, c, NULL, &o), 0);
  kl_case_free(c);
  snprintf(path, sizeof(path), "%s/plugin.c", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fwrite(b.ptr, 1, b.size, f);
  fclose(f);
  kl_buf_dispose(&b);
  snprintf(cmd, sizeof(cmd),
           "cc -std=c11 -O1 -fPIC -shared -I%s -o %s/plugin.so %s -lm", dir,
           dir, path);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof(path), "%s/plugin.so", dir);
  void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!so) fail_msg("%s", dlerror());
  kl_plugin_entry_fn entry;
  *(void **)&entry = dlsym(so, KL_PLUGIN_SYMBOL);
  assert_non_null(entry);
  return entry();
}

static void test_harness__vary_changes_inputs_reproducibly(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-harness-XXXXXX", cmd[1024];
  assert_non_null(mkdtemp(dir));
  static const char body[] =
      "(float *y, const float *x, const float *w, const int *k, int n) {\n"
      "  for (int i = 0; i < n; i++) y[i] += x[i] * w[i] + (float)k[i];\n"
      "}\n";
  char kernel[256], ref[256];
  snprintf(kernel, sizeof(kernel), "void axpw%s", body);
  snprintf(ref, sizeof(ref), "void axpw_ref%s", body);
  const kl_plugin *pl = host_plugin(dir, vary_case, kernel, ref);
  assert_true(pl->struct_size >= offsetof(kl_plugin, vary) + sizeof(pl->vary));
  assert_non_null(pl->vary);
  void *inst;
  assert_int_equal(pl->create(&inst, 0), 0);
  assert_int_equal(pl->prepare(inst, 7, 0), 0);
  size_t n = VARY_N;
  float *y0 = malloc(n * 4), *x0 = malloc(n * 4), *w0 = malloc(n * 4);
  float *y1 = malloc(n * 4), *x1 = malloc(n * 4), *w1 = malloc(n * 4);
  float *y2 = malloc(n * 4), *x2 = malloc(n * 4), *w2 = malloc(n * 4);
  float *want0 = malloc(n * 4), *want1 = malloc(n * 4);
  int32_t *k0 = malloc(n * 4), *k1 = malloc(n * 4), *k2 = malloc(n * 4);
  read_all(pl, inst, y0, x0, w0, k0);
  void *want[5] = {want0, NULL, NULL, NULL, NULL};
  assert_int_equal(pl->reference(inst, want), 0);

  assert_int_equal(pl->vary(inst, 11), 0);
  read_all(pl, inst, y1, x1, w1, k1);
  /* 1/256 of 100000 elements: 390 draws, a few of them the same place */
  int dy = differ(y0, y1, n), dx = differ(x0, x1, n);
  assert_in_range(dy, 350, 390);
  assert_in_range(dx, 350, 390);
  assert_int_equal(differ(w0, w1, n), 0);
  assert_int_equal(differ(k0, k1, n), 0);
  for (size_t i = 0; i < n; i++) /* new draws of the same distribution */
    assert_true(x1[i] >= -1.0f && x1[i] < 1.0f);
  assert_int_equal(pl->input_intact(inst, 1), 1);
  /* the inout as varied is what restore() puts back after a launch */
  assert_int_equal(pl->launch(inst), 0);
  assert_int_equal(pl->restore(inst), 0);
  read_all(pl, inst, y2, x2, w2, k2);
  assert_int_equal(differ(y1, y2, n), 0);
  /* the oracle reads the varied inputs: its output changes where they did */
  want[0] = want1;
  assert_int_equal(pl->reference(inst, want), 0);
  assert_true(differ(want0, want1, n) >= dx);

  /* another seed elsewhere, then the first again: the same values */
  assert_int_equal(pl->vary(inst, 12), 0);
  read_all(pl, inst, y2, x2, w2, k2);
  assert_true(differ(x1, x2, n) > 0);
  assert_in_range(differ(x0, x2, n), 350, 390);
  assert_int_equal(pl->vary(inst, 11), 0);
  read_all(pl, inst, y2, x2, w2, k2);
  assert_int_equal(differ(y1, y2, n), 0);
  assert_int_equal(differ(x1, x2, n), 0);
  /* 0 puts back what prepare wrote; so does prepare after a vary */
  assert_int_equal(pl->vary(inst, 0), 0);
  read_all(pl, inst, y2, x2, w2, k2);
  assert_int_equal(differ(y0, y2, n) + differ(x0, x2, n), 0);
  assert_int_equal(pl->vary(inst, 13), 0);
  assert_int_equal(pl->prepare(inst, 7, 0), 0);
  read_all(pl, inst, y2, x2, w2, k2);
  assert_int_equal(differ(y0, y2, n) + differ(x0, x2, n), 0);
  assert_int_equal(pl->vary(inst, 0), 0); /* nothing to undo */
  read_all(pl, inst, y2, x2, w2, k2);
  assert_int_equal(differ(x0, x2, n), 0);

  pl->destroy(inst);
  void *bufs[] = {y0, x0, w0, y1, x1, w1, y2, x2, w2, want0, want1, k0, k1, k2};
  for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
    free(bufs[i]);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* A kernel's quoted #include is wrapped in guard lines (c_includes.c);
 * a diagnostic in the header still names the #include's own line. */
static void test_harness__included_from_its_own_line(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-harness-XXXXXX", path[300], cmd[1024];
  assert_non_null(mkdtemp(dir));
  static const char *const files[][2] = {
      {"case.yaml", "kernlab: 1\nname: inc_line\nbackend: host\n"
                    "kernel: { source: kernel.c, entry: k }\n"
                    "params:\n"
                    "  - { name: y, type: f32*, role: output, count: n }\n"
                    "  - { name: n, type: i32 }\n"
                    "shapes:\n  - { name: s, n: 8 }\n"},
      {"warns.h", "#warning \"from warns.h\"\n"},
      {"kernel.c", "/* line 1 */\n"
                   "#include \"warns.h\"\n"
                   "void k(float *y, int n) {\n"
                   "  for (int i = 0; i < n; i++) y[i] = 1.0f;\n"
                   "}\n"}};
  write_files(dir, files, 3);
  kl_case *c;
  if (kl_case_load(&c, dir, NULL)) fail_msg("%s", kl_error_last()->message);
  kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl_harness_generate(&b, c, NULL, &o), 0);
  kl_case_free(c);
  snprintf(path, sizeof(path), "%s/h.c", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fwrite(b.ptr, 1, b.size, f);
  fclose(f);
  kl_buf_dispose(&b);
  snprintf(cmd, sizeof(cmd), "cc -c -I%s -o %s/h.o %s 2>%s/log", dir, dir, path,
           dir);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof(path), "%s/log", dir);
  char *log = kl_test_slurp(path);
  assert_non_null(log);
  if (!strstr(log, "In file included from kernel.c:2"))
    fail_msg("the header's warning is not from kernel.c:2: %s", log);
  free(log);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* A workspace (role scratch) through the host plugin's ABI: poisoned at
 * prepare, written by a launch, poisoned again by every restore (a launch
 * never finds what the last one left), untouched by the reference, which
 * has one of its own; check() refuses it. */
static void test_harness__scratch_is_poisoned_before_each_launch(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-harness-XXXXXX", cmd[1024];
  assert_non_null(mkdtemp(dir));
  static const char yaml[] =
      "kernlab: 1\nname: scratch_probe\nbackend: host\n"
      "kernel: { source: kernel.c, entry: twice }\n"
      "params:\n"
      "  - { name: y, type: f32*, role: output, count: n }\n"
      "  - { name: tmp, type: f32*, role: scratch, count: n }\n"
      "  - { name: x, type: f32*, role: input, count: n }\n"
      "  - { name: n, type: i32 }\n"
      "shapes:\n  - { name: s, n: 1000 }\n"
      "reference: { kind: host, source: reference.c, function: twice_ref }\n";
  static const char body[] =
      "(float *y, float *tmp, const float *x, int n) {\n"
      "  for (int i = 0; i < n; i++) tmp[i] = 2.0f * x[i];\n"
      "  for (int i = 0; i < n; i++) y[i] = tmp[i] + 1.0f;\n"
      "}\n";
  char kernel[256], ref[256];
  snprintf(kernel, sizeof(kernel), "void twice%s", body);
  snprintf(ref, sizeof(ref), "void twice_ref%s", body);
  const kl_plugin *pl = host_plugin(dir, yaml, kernel, ref);
  assert_int_equal(pl->param_roles[1], KL_PLUGIN_ROLE_SCRATCH);
  enum { N = 1000 };
  float tmp[N], x[N], want[N];
  size_t nan;
  void *inst;
  assert_int_equal(pl->create(&inst, 0), 0);
  assert_int_equal(pl->prepare(inst, 5, 0), 0);
  assert_int_equal(pl->buffer_bytes(inst, 1), N * 4);
  assert_int_equal(pl->read(inst, 1, tmp, N * 4), 0);
  nan = 0;
  for (int i = 0; i < N; i++)
    nan += isnan(tmp[i]);
  assert_int_equal(nan, N); /* poisoned by prepare */
  assert_int_equal(pl->launch(inst), 0);
  assert_int_equal(pl->read(inst, 1, tmp, N * 4), 0);
  assert_int_equal(pl->read(inst, 2, x, N * 4), 0);
  for (int i = 0; i < N; i++)
    assert_true(tmp[i] == 2.0f * x[i]);
  assert_int_equal(pl->restore(inst), 0);
  assert_int_equal(pl->read(inst, 1, tmp, N * 4), 0);
  nan = 0;
  for (int i = 0; i < N; i++)
    nan += isnan(tmp[i]);
  assert_int_equal(nan, N); /* poisoned again by restore */
  void *wants[4] = {want, NULL, NULL, NULL};
  assert_int_equal(pl->reference(inst, wants), 0);
  assert_true(want[7] == 2.0f * x[7] + 1.0f);
  assert_int_equal(pl->read(inst, 1, tmp, N * 4), 0);
  assert_true(isnan(tmp[7])); /* the reference's workspace was its own */
  kl_plugin_check r;
  assert_int_not_equal(pl->check(inst, 1, want, &r), 0);
  pl->destroy(inst);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* A case whose source is a whole program in PolyBench's style: a kernel
 * taking variable-length arrays (double A[n][n], and one declared through
 * a macro as PolyBench's POLYBENCH_2D(B, ...) is), M_PI (not ISO C: llm.c
 * uses it, and -std=c11 hides it unless a feature macro shows it), and its
 * own main. Both
 * forms build where GCC 14's rule holds (-Werror=incompatible-pointer-types:
 * a cast to double * for a double (*)[n] parameter was an error there), the
 * source's main is renamed in the baseline's and the kernel's sections, and
 * the standalone program checks the kernel against the embedded baseline. */
static void test_harness__whole_program_with_vla_params(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-harness-XXXXXX", path[256], cmd[1024];
  assert_non_null(mkdtemp(dir));
  static const char *const files[][2] = {
      {"case.yaml", "kernlab: 1\n"
                    "name: vla_program\n"
                    "backend: host\n"
                    "kernel: { source: kernel.c, entry: scale2 }\n"
                    "params:\n"
                    "  - { name: n, type: i32 }\n"
                    "  - { name: A, type: f64*, role: input, count: n*n }\n"
                    "  - { name: B, type: f64*, role: output, count: n*n }\n"
                    "shapes:\n"
                    "  - { name: n64, n: 64 }\n"
                    "reference: { kind: baseline, atol: 0, rtol: 0 }\n"},
      {"kernel.c", "#include <math.h>\n"
                   "#include <stdio.h>\n"
                   "#define ARRAY_2D(v, d1, d2) v[d1][d2]\n"
                   "void scale2(int n, double A[n][n],\n"
                   "            double ARRAY_2D(B, n, n)) {\n"
                   "  for (int i = 0; i < n; i++)\n"
                   "    for (int j = 0; j < n; j++)\n"
                   "      B[i][j] = 2.0 * A[i][j] * (M_PI / M_PI);\n"
                   "}\n"
                   "int main(void) {\n"
                   "  double a[2][2] = {{1, 2}, {3, 4}}, b[2][2];\n"
                   "  scale2(2, a, b);\n"
                   "  printf(\"%g\\n\", b[1][1]);\n"
                   "  return 0;\n"
                   "}\n"}};
  write_files(dir, files, 2);
  kl_case *c;
  if (kl_case_load(&c, dir, NULL)) fail_msg("%s", kl_error_last()->message);
  /* a candidate in the same style, with a main of its own too */
  static const char cand[] =
      "void scale2(int n, double A[n][n], double B[n][n]) {\n"
      "  for (int j = 0; j < n; j++)\n"
      "    for (int i = 0; i < n; i++)\n"
      "      B[i][j] = A[i][j] + A[i][j];\n"
      "}\n"
      "int main(void) { return 0; }\n";
  const kl_harness_form forms[2] = {KL_HARNESS_STANDALONE, KL_HARNESS_PLUGIN};
  for (int k = 0; k < 2; k++) {
    kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
    o.form = forms[k];
    o.candidate_name = "candidate.c";
    kl_buf b = KL_BUF_INIT;
    assert_int_equal(kl_harness_generate(&b, c, cand, &o), 0);
    /* the baseline's main and the candidate's, each renamed */
    const char *first = strstr(b.ptr, "#define main klh_section");
    assert_non_null(first);
    /* the arrays take void *; nothing else loses its cast */
    assert_non_null(strstr(b.ptr, "(int32_t)klh_scalar_i[s][0],\n"
                                  "      (void *)b[1],\n"
                                  "      (void *)b[2]);"));
    if (k == 0) assert_non_null(strstr(first + 1, "#define main klh_section"));
    snprintf(path, sizeof(path), "%s/h%d.c", dir, k);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(b.ptr, 1, b.size, f);
    fclose(f);
    kl_buf_dispose(&b);
    snprintf(cmd, sizeof(cmd),
             "cc -std=c11 -O1 -Wall -Werror=incompatible-pointer-types "
             "-I%s %s %s -lm -o %s/h%d",
             dir, k ? "-fPIC -shared" : "", path, dir, k);
    assert_int_equal(system(cmd), 0);
  }
  kl_case_free(c);
  snprintf(cmd, sizeof(cmd), "%s/h0 > %s/out.txt", dir, dir);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof(path), "%s/out.txt", dir);
  char *text = kl_test_slurp(path);
  assert_non_null(text);
  assert_non_null(strstr(text, "\"checked\":true,\"correct\":true"));
  free(text);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* Fail each allocation of a generation in turn: every failure must be
 * KL_ENOMEM with nothing handed out (ASan runs show nothing leaks). */
static void test_harness__out_of_memory_sweep(void **state) {
  (void)state;
  const char *cases[] = {SRC "/cases/host_matmul", SRC "/cases/rmsnorm_bf16"};
  for (size_t k = 0; k < 2; k++) {
    kl_case *c;
    assert_int_equal(kl_case_load(&c, cases[k], NULL), 0);
    int failures = 0;
    for (long nth = 1; nth < 100000; nth++) {
      kl_buf b = KL_BUF_INIT;
      kl_harness_options o = KL_HARNESS_OPTIONS_INIT;
      o.form = KL_HARNESS_PLUGIN;
      kl__alloc_fail_after(nth);
      int rc = kl_harness_generate(&b, c, NULL, &o);
      kl__alloc_fail_after(0);
      if (rc == 0) {
        assert_non_null(b.ptr);
        kl_buf_dispose(&b);
        break;
      }
      if (rc != KL_ENOMEM) fail_msg("allocation %ld: rc %d", nth, rc);
      assert_null(b.ptr);
      failures++;
    }
    assert_true(failures > 3);
    kl_case_free(c);
  }
  /* and the statistics */
  double x[64];
  for (int i = 0; i < 64; i++)
    x[i] = 10 + i % 7;
  for (long nth = 1; nth < 64; nth++) {
    kl_speedup sp;
    kl__alloc_fail_after(nth);
    int rc = kl_stats_speedup_blocked(&sp, x, x, 64, 8, 0, 2.0);
    kl__alloc_fail_after(0);
    if (rc == 0) break;
    assert_int_equal(rc, KL_ENOMEM);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_harness__golden_files),
      cmocka_unit_test(test_harness__deterministic),
      cmocka_unit_test(test_harness__standalone_runs_with_only_cc),
      cmocka_unit_test(test_harness__build_line_says_the_case_flags),
      cmocka_unit_test(test_harness__cuda_plugin_compiles_with_nvcc),
      cmocka_unit_test(test_harness__vary_changes_inputs_reproducibly),
      cmocka_unit_test(test_harness__whole_program_with_vla_params),
      cmocka_unit_test(test_harness__scratch_is_poisoned_before_each_launch),
      cmocka_unit_test(test_harness__included_from_its_own_line),
      cmocka_unit_test(test_harness__out_of_memory_sweep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
