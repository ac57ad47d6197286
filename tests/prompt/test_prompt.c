/* Reply parsing over a corpus (tests/prompt/replies): each file says what
 * it expects ("EXPECT ok" or "EXPECT reject: <reason>"), names the case its
 * code is for ("CASE name"), then "---" and the reply as a model would
 * send it. Prompt assembly for every bundled case, with recorded H200
 * profiles, and under budgets too small to hold it. Out-of-memory at every
 * allocation of both. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/internal.h"
#include "prompt/prompt_internal.h"
#include "kernlab/plugin.h"
#include "kernlab/kernlab.h"
#include "support/slurp.h"

#define REPLIES KL_SOURCE_DIR "/tests/prompt/replies/"

static char *slurp(const char *path) {
  char *s = kl_test_slurp(path);
  if (!s) fail_msg("cannot read %s", path);
  return s;
}

static kl_case *load_case(const char *name) {
  char path[512];
  snprintf(path, sizeof(path), KL_SOURCE_DIR "/cases/%.*s",
           (int)strcspn(name, "\n"), name);
  kl_case *c;
  if (kl_case_load(&c, path, NULL) != 0)
    fail_msg("%s", kl_error_last()->message);
  return c;
}

static void test_reply_corpus(void **state) {
  (void)state;
  DIR *d = opendir(REPLIES);
  assert_non_null(d);
  int files = 0, ok = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!strstr(e->d_name, ".txt")) continue;
    char path[600];
    snprintf(path, sizeof(path), REPLIES "%s", e->d_name);
    char *text = slurp(path);
    char *expect = strstr(text, "EXPECT "), *cas = strstr(text, "\nCASE ");
    char *body = strstr(text, "\n---\n");
    if (!expect || !cas || !body)
      fail_msg("%s: needs EXPECT, CASE and ---", path);
    expect += 7;
    expect[strcspn(expect, "\n")] = '\0';
    kl_case *c = load_case(cas + 6);
    kl_reply *r;
    if (kl_reply_parse(&r, body + 5, c) != 0)
      fail_msg("%s: %s", path, kl_error_last()->message);
    if (strcmp(expect, "ok") == 0) {
      if (!kl_reply_ok(r))
        fail_msg("%s: rejected: %s", path, kl_reply_reason(r));
      assert_non_null(kl_reply_code(r));
      /* the entry's own name: "scale" of "ns::scale<128, float>" */
      const char *entry = kl_case_entry(c), *colons;
      while ((colons = strstr(entry, "::")))
        entry = colons + 2;
      char name[128];
      snprintf(name, sizeof name, "%.*s", (int)strcspn(entry, "<"), entry);
      if (!strstr(kl_reply_code(r), name) &&
          !strstr(kl_reply_code(r), KL_LAUNCHER_NAME))
        fail_msg("%s: the code has neither the entry nor a launcher", path);
      assert_null(strstr(kl_reply_code(r), "```"));
      assert_non_null(kl_reply_memo(r));
      assert_true(strlen(kl_reply_memo(r)) > 3);
      ok++;
    } else {
      if (strncmp(expect, "reject: ", 8) != 0)
        fail_msg("%s: bad EXPECT line", path);
      if (kl_reply_ok(r) || !strstr(kl_reply_reason(r), expect + 8))
        fail_msg("%s: wanted a rejection with '%s', got %s", path, expect + 8,
                 kl_reply_ok(r) ? "ok" : kl_reply_reason(r));
    }
    kl_reply_free(r);
    kl_case_free(c);
    free(text);
    files++;
  }
  closedir(d);
  assert_true(files >= 14 && ok >= 5);
}

/* The memo comes out whole; a bare MEMO line leaves the code. */
static void test_memo_and_code(void **state) {
  (void)state;
  kl_case *c = load_case("vector_add");
  kl_reply *r;
  const char *reply =
      "Vectorize.\n```cuda\nMEMO: float4 loads */\n"
      "extern \"C\" __global__ void vector_add(float *c, const float *a,\n"
      "    const float *b, int n) {\n  int i = blockIdx.x * blockDim.x + "
      "threadIdx.x;\n  if (i < n) c[i] = a[i] + b[i];\n}\n```\n";
  assert_int_equal(kl_reply_parse(&r, reply, c), 0);
  assert_true(kl_reply_ok(r));
  assert_string_equal(kl_reply_memo(r), "float4 loads");
  assert_null(strstr(kl_reply_code(r), "MEMO"));
  assert_ptr_equal(strstr(kl_reply_code(r), "extern"), kl_reply_code(r));
  kl_reply_free(r);
  assert_int_equal(kl_reply_parse(&r, "", c), 0);
  assert_false(kl_reply_ok(r));
  assert_null(kl_reply_code(r));
  kl_reply_free(r);
  kl_case_free(c);
}

static void test_out_of_memory(void **state) {
  (void)state;
  kl_case *c = load_case("transpose_f32");
  char *text = slurp(REPLIES "fenced.txt");
  const char *body = strstr(text, "\n---\n") + 5;
  int failures = 0;
  for (long n = 1;; n++) {
    kl__alloc_fail_after(n);
    kl_reply *r = NULL;
    int rc = kl_reply_parse(&r, body, c);
    long ran = kl__alloc_fail_after(0);
    kl_reply_free(r);
    if (rc == 0 && ran < n) break;
    assert_int_equal(rc, rc == 0 ? 0 : KL_ENOMEM);
    failures += rc != 0;
  }
  assert_true(failures > 5);
  free(text);
  kl_case_free(c);
}

/* ---- prompts
 * ------------------------------------------------------------------- */

static kl_rules *default_rules(void) {
  kl_rules *rs;
  assert_int_equal(kl_rules_create(&rs, NULL), 0);
  assert_int_equal(kl_rules_add_defaults(rs), 0);
  return rs;
}

static void test_prompt_every_case(void **state) {
  (void)state;
  static const char *const cases[] = {
      "host_saxpy",    "host_matmul", "vector_add",     "rmsnorm_bf16",
      "transpose_f32", "softmax_f32", "reduce_sum_f32", "gemm_f32"};
  kl_rules *rs = default_rules();
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kl_case *c = load_case(cases[i]);
    kl_prompt_inputs in = KL_PROMPT_INPUTS_INIT;
    in.c = c;
    in.rules = rs;
    kl_prompt *p;
    if (kl_prompt_build(&p, &in) != 0)
      fail_msg("%s: %s", cases[i], kl_error_last()->message);
    const char *sys = kl_prompt_system(p), *user = kl_prompt_user(p);
    /* the signature, the reply rules and the catalog are in the system
     * block; the kernel and the case brief in the user block */
    assert_non_null(strstr(sys, kl_case_entry(c)));
    assert_non_null(strstr(sys, "MEMO:"));
    assert_non_null(strstr(sys, "- uncoalesced_stores: "));
    assert_non_null(strstr(user, "## Current best kernel"));
    assert_non_null(strstr(user, "No profile yet"));
    if (kl_case_program_path(c))
      assert_null(strstr(user, "(the case has no program.md)"));
    size_t total = 0;
    for (size_t k = 0; k < kl_prompt_section_count(p); k++) {
      kl_prompt_section_info s = KL_PROMPT_SECTION_INFO_INIT;
      kl_prompt_section(&s, p, k);
      assert_true(s.tokens <= s.budget);
      assert_int_equal(s.cut_chars, 0);
      total += s.tokens;
    }
    assert_true(total > 1000 && total < 20000);
    kl_buf json = KL_BUF_INIT;
    assert_int_equal(kl_prompt_json(&json, p), 0);
    assert_non_null(strstr(json.ptr, "\"name\":\"best_kernel\""));
    kl_buf_dispose(&json);
    kl_prompt_free(p);
    kl_case_free(c);
  }
  kl_rules_free(rs);
}

/* The naive transpose's profiles recorded on the H200. */
static kl_profile_list *transpose_profiles(void) {
  char *text =
      slurp(KL_SOURCE_DIR "/tests/rules/fixtures/h200/transpose_f32.json");
  kl_profile_list *l;
  assert_int_equal(kl_profile_list_from_json(&l, text, "t.json"), 0);
  free(text);
  return l;
}

/* With the naive transpose's recorded profiles: the finding, its skill's
 * full text, the metric table, per-shape times. */
/* A launch of several kernels (a candidate's own launcher): the prompt
 * lists each with its share, verdict and the rules that fired on it. */
static void test_prompt_kernels_of_a_launch(void **state) {
  (void)state;
  kl_rules *rs = default_rules();
  kl_case *c = load_case("reduce_sum_f32");
  kl_profile_list *l = transpose_profiles(); /* real counters, reused */
  kl_buf one = KL_BUF_INIT, two = KL_BUF_INIT;
  assert_int_equal(kl_profile_json(&one, kl_profile_list_get(l, 0), 0), 0);
  /* the same counters as two parts named like a split reduction's */
  kl__buf_put(&two, one.ptr, one.size - 1);
  kl__buf_puts(&two, ",\"parts\":[");
  kl__buf_put(&two, one.ptr, one.size - 1);
  kl__buf_puts(&two, ",\"name\":\"partial_sums\"},");
  kl__buf_put(&two, one.ptr, one.size - 1);
  kl__buf_puts(&two, ",\"name\":\"finish\"}]}");
  kl_profile *prof;
  if (kl_profile_from_json(&prof, two.ptr, "mem") != 0)
    fail_msg("%s", kl_error_last()->message);
  assert_int_equal(kl_profile_part_count(prof), 2);
  kl_prompt_shape shape = {"1M", prof};
  kl_prompt_inputs in = KL_PROMPT_INPUTS_INIT;
  in.c = c;
  in.rules = rs;
  in.shapes = &shape;
  in.nshapes = 1;
  kl_prompt *p;
  assert_int_equal(kl_prompt_build(&p, &in), 0);
  const char *user = kl_prompt_user(p), *sys = kl_prompt_system(p);
  assert_non_null(strstr(user, "2 kernels at shape 1M, in launch order:"));
  assert_non_null(strstr(user, "- partial_sums: "));
  assert_non_null(strstr(user, "- finish: "));
  assert_non_null(strstr(user, "(50%), memory_bound"));
  assert_non_null(strstr(user, "rules fired: "));
  /* the launch contract is stated */
  assert_non_null(strstr(sys, "void kernlab_launch(double *out, const float "
                              "*x, int n, const kl_launch_ctx *ctx)"));
  kl_prompt_free(p);
  kl_profile_free(prof);
  kl_buf_dispose(&one);
  kl_buf_dispose(&two);
  kl_profile_list_free(l);
  kl_case_free(c);
  kl_rules_free(rs);
}

static void test_prompt_with_profiles(void **state) {
  (void)state;
  kl_rules *rs = default_rules();
  kl_case *c = load_case("transpose_f32");
  kl_profile_list *l = transpose_profiles();
  kl_prompt_shape shapes[8];
  size_t n = kl_profile_list_count(l);
  for (size_t i = 0; i < n; i++) {
    shapes[i].name = kl_profile_list_name(l, i);
    shapes[i].profile = kl_profile_list_get(l, i);
  }
  kl_prompt_attempt tries[80];
  for (int i = 0; i < 80; i++) {
    tries[i].iteration = i + 1;
    tries[i].memo = i % 2 ? "uncoalesced_stores: shared tile 32x33, padded"
                          : "vector stores of float4 along the output rows";
    tries[i].verdict = i % 3 ? "slower" : "INCORRECT";
    tries[i].speedup = i % 3 ? 0.93 : 0;
    tries[i].reason = i % 3 ? NULL : "mismatch at out[1024] (odd shape tail)";
  }
  kl_prompt_inputs in = KL_PROMPT_INPUTS_INIT;
  in.c = c;
  in.rules = rs;
  in.shapes = shapes;
  in.nshapes = n;
  in.attempts = tries;
  in.nattempts = 80;
  in.iteration = 81;
  kl_prompt *p;
  assert_int_equal(kl_prompt_build(&p, &in), 0);
  const char *sys = kl_prompt_system(p), *user = kl_prompt_user(p);
  assert_non_null(strstr(sys, "# Uncoalesced stores\n\n**Signal**"));
  assert_non_null(strstr(user, "# Iteration 81"));
  /* the focus is the heaviest shape */
  assert_non_null(strstr(user, "At shape square4k: memory_bound"));
  assert_non_null(strstr(user, "- [high] uncoalesced_stores: "));
  assert_non_null(strstr(user, "store_sector_ratio"));
  assert_non_null(strstr(user, "- odd: 47.42 us"));
  /* 80 attempts do not fit 1,200 tokens: the oldest go, and it says so */
  assert_non_null(strstr(user, "[... the oldest entries cut here"));
  assert_null(strstr(user, "- #1 INCORRECT"));
  assert_non_null(strstr(user, "- #80 slower (0.930x): "));
  kl_prompt_free(p);
  /* a tiny budget cuts every text section but never the kernel */
  in.budget_scale = 0.05;
  assert_int_equal(kl_prompt_build(&p, &in), 0);
  for (size_t k = 0; k < kl_prompt_section_count(p); k++) {
    kl_prompt_section_info s = KL_PROMPT_SECTION_INFO_INIT;
    kl_prompt_section(&s, p, k);
    if (strcmp(s.name, "best_kernel") == 0 || strcmp(s.name, "rules") == 0)
      assert_int_equal(s.cut_chars, 0);
    else if (s.cut_chars)
      assert_true(s.tokens <= s.budget + 25); /* the cut note itself */
    if (strcmp(s.name, "skill_catalog") == 0 || strcmp(s.name, "findings") == 0)
      assert_true(s.cut_chars > 0);
  }
  assert_non_null(strstr(kl_prompt_user(p), "out[(size_t)c * rows + r]"));
  assert_non_null(strstr(kl_prompt_system(p), "[... the rest cut here"));
  kl_prompt_free(p);
  kl_profile_list_free(l);
  kl_case_free(c);
  kl_rules_free(rs);
}

static void test_prompt_out_of_memory(void **state) {
  (void)state;
  kl_rules *rs = default_rules();
  kl_case *c = load_case("transpose_f32");
  kl_profile_list *l = transpose_profiles();
  kl_prompt_shape shape = {kl_profile_list_name(l, 1),
                           kl_profile_list_get(l, 1)};
  kl_prompt_inputs in = KL_PROMPT_INPUTS_INIT;
  in.c = c;
  in.rules = rs;
  in.shapes = &shape;
  in.nshapes = 1;
  int failures = 0;
  for (long n = 1;; n++) {
    kl__alloc_fail_after(n);
    kl_prompt *p = NULL;
    kl_buf json = KL_BUF_INIT;
    int rc = kl_prompt_build(&p, &in);
    if (rc == 0) rc = kl_prompt_json(&json, p);
    long ran = kl__alloc_fail_after(0);
    kl_buf_dispose(&json);
    kl_prompt_free(p);
    if (rc == 0 && ran < n) break;
    assert_int_equal(rc, KL_ENOMEM);
    failures++;
  }
  assert_true(failures > 50);
  kl_profile_list_free(l);
  kl_case_free(c);
  kl_rules_free(rs);
}

/* Reading Python source: a top-level def's parameters (the last one
 * wins, methods and strings do not count), how many positional arguments
 * they take, a class at the top level, the languages imported. */
static void test_python_source(void **state) {
  (void)state;
  const char *src =
      "import torch\nimport triton.language as tl\nfrom cupy import "
      "RawKernel\n"
      "class Model:\n    def forward(self, a):\n        return a\n"
      "s = \"def forward(q)\"\n"
      "def forward(x, y):  # first\n    pass\n"
      "def forward(x,  # the input\n            y=2, *rest, k=1, **kw):\n"
      "    pass\n";
  char *params = NULL;
  assert_int_equal(kl__py_def_params(&params, src, "forward"), 0);
  assert_string_equal(params, "x, y=2, *rest, k=1, **kw");
  size_t req, most;
  kl__py_arity(params, &req, &most);
  assert_int_equal(req, 1);
  assert_true(most == SIZE_MAX);
  kl__free(params);
  kl__py_arity("self, a, b=(1, 2), *, c", &req, &most);
  assert_int_equal(req, 1);
  assert_int_equal(most, 2);
  kl__py_arity("a, /, b", &req, &most);
  assert_int_equal(req, 2);
  assert_int_equal(most, 2);
  assert_int_equal(kl__py_def_params(&params, src, "backward"), 0);
  assert_null(params);
  /* unclosed: the rest of the file, for the syntax check to report */
  assert_int_equal(kl__py_def_params(&params, "def forward(x:\n", "forward"),
                   0);
  assert_string_equal(params, "x:");
  kl__free(params);
  assert_true(kl__py_defines_class(src, "Model"));
  assert_false(kl__py_defines_class(src, "Mod"));
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl__py_dsls(&b, src), 0);
  assert_string_equal(b.ptr, "Triton, CuPy, PyTorch");
  kl_buf_dispose(&b);
  assert_int_equal(kl__py_dsls(&b, "x = 1\n"), 0);
  assert_string_equal(b.ptr, "plain Python");
  kl_buf_dispose(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reply_corpus),
      cmocka_unit_test(test_memo_and_code),
      cmocka_unit_test(test_out_of_memory),
      cmocka_unit_test(test_prompt_every_case),
      cmocka_unit_test(test_prompt_with_profiles),
      cmocka_unit_test(test_prompt_kernels_of_a_launch),
      cmocka_unit_test(test_prompt_out_of_memory),
      cmocka_unit_test(test_python_source),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
