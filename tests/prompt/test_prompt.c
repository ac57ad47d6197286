/* Reply parsing over a corpus (tests/prompt/replies): each file says what
 * it expects ("EXPECT ok" or "EXPECT reject: <reason>"), names the case its
 * code is for ("CASE name"), then "---" and the reply as a model would
 * send it. Also: out-of-memory at every allocation. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/internal.h"
#include "kernlab/kernlab.h"

#define REPLIES KL_SOURCE_DIR "/tests/prompt/replies/"

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  fclose(f);
  return s;
}

static kl_case *load_case(const char *name) {
  char path[512];
  snprintf(path, sizeof(path), KL_SOURCE_DIR "/cases/%.*s", (int)strcspn(name, "\n"),
           name);
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
    if (!strstr(e->d_name, ".txt"))
      continue;
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
      assert_non_null(strstr(kl_reply_code(r), kl_case_entry(c)));
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
    if (rc == 0 && ran < n)
      break;
    assert_int_equal(rc, rc == 0 ? 0 : KL_ENOMEM);
    failures += rc != 0;
  }
  assert_true(failures > 5);
  free(text);
  kl_case_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reply_corpus),
      cmocka_unit_test(test_memo_and_code),
      cmocka_unit_test(test_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
