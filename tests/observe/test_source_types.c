/* The source walk of kl case from-observation (observe/source_types.c):
 * which #if branch counts under which defines, the C preprocessor's integer
 * expressions, typedef and using aliases, local headers found once, and the
 * errors: an #if it cannot evaluate and unbalanced directives, with the
 * file and line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "observe/observe_internal.h"

static char dir[] = "/tmp/kl-source-types-XXXXXX";

static void put(const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* The alias of T in a file holding `text`, under `defines`; NULL when
 * there is none; "!" when the walk failed. */
static const char *alias_of(const char *text, const char *const *defines,
                            char *buf, size_t n) {
  put("src.cu", text);
  char path[256];
  snprintf(path, sizeof path, "%s/src.cu", dir);
  kl__src_types *t = NULL;
  if (kl__src_types_read(&t, path, defines, NULL) < 0) {
    snprintf(buf, n, "!");
    return buf;
  }
  const char *a = kl__src_types_alias(t, "T");
  snprintf(buf, n, "%s", a ? a : "");
  kl__src_types_free(t);
  return buf;
}

static void test_source_types__conditions(void **state) {
  (void)state;
  static const struct {
    const char *cond, *defines[3];
    int taken;
  } cases[] = {
      {"defined(X)", {"X"}, 1},
      {"defined(X)", {NULL}, 0},
      {"defined X", {"X"}, 1},
      {"!defined(X)", {"X"}, 0},
      {"defined(X) && defined(Y)", {"X"}, 0},
      {"defined(X) || defined(Y)", {"Y"}, 1},
      {"X", {"X=0"}, 0},
      {"X", {"X=3"}, 1},
      {"X >= 3 && X < 5", {"X=4"}, 1},
      {"X >= 3 && X < 5", {"X=5"}, 0},
      {"(X << 2) == 12", {"X=3"}, 1},
      {"X % 2 == 1 || Y", {"X=2", "Y=1"}, 1},
      {"UNKNOWN_NAME", {NULL}, 0}, /* an unknown name is 0, as in C */
      {"X != 1", {"X=1"}, 0},
      {"~X & 1", {"X=2"}, 1},
      {"-X < 0", {"X=2"}, 1},
  };
  char buf[64], text[256];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(text, sizeof text,
             "#if %s\ntypedef double T;\n#else\ntypedef float T;\n#endif\n",
             cases[i].cond);
    const char *got = alias_of(text, cases[i].defines, buf, sizeof buf);
    if (strcmp(got, cases[i].taken ? "double" : "float") != 0)
      fail_msg("#if %s: got '%s'", cases[i].cond, got);
  }
}

static void test_source_types__branches_and_aliases(void **state) {
  (void)state;
  char buf[64];
  const char *chain = "#if defined(A)\ntypedef int T;\n#elif defined(B)\n"
                      "typedef long T;\n#elif 1\nusing T = unsigned short;\n"
                      "#else\ntypedef char T;\n#endif\n";
  const char *a[] = {"A", NULL}, *b[] = {"B", NULL}, *ab[] = {"A", "B", NULL};
  assert_string_equal(alias_of(chain, a, buf, sizeof buf), "int");
  assert_string_equal(alias_of(chain, b, buf, sizeof buf), "long");
  assert_string_equal(alias_of(chain, ab, buf, sizeof buf), "int");
  assert_string_equal(alias_of(chain, NULL, buf, sizeof buf), "unsigned short");
  /* nested: an inner branch never counts under an outer one that does not */
  assert_string_equal(
      alias_of("#ifdef A\n#if 1\ntypedef int T;\n#endif\n#else\n"
               "typedef float T;\n#endif\n",
               NULL, buf, sizeof buf),
      "float");
  /* #define and #undef along the way; comments are not code */
  assert_string_equal(
      alias_of("#define P 2\n#undef P\n#ifdef P\ntypedef int T;\n#endif\n"
               "/* typedef long T; */\n// typedef char T;\n",
               NULL, buf, sizeof buf),
      "");
  /* a struct typedef is not an alias of a number */
  assert_string_equal(
      alias_of("typedef struct { int a; } T;\n", NULL, buf, sizeof buf), "");
  /* errors: an #if it cannot evaluate, and unbalanced directives */
  assert_string_equal(
      alias_of("#define F(x) x\n#if F(1)\n#endif\n", NULL, buf, sizeof buf),
      "!");
  assert_string_equal(alias_of("#endif\n", NULL, buf, sizeof buf), "!");
  assert_string_equal(alias_of("#else\n", NULL, buf, sizeof buf), "!");
  assert_string_equal(alias_of("#elif 1\n", NULL, buf, sizeof buf), "!");
}

static void test_source_types__local_headers(void **state) {
  (void)state;
  char sub[300];
  snprintf(sub, sizeof sub, "%s/sub", dir);
  mkdir(sub, 0777);
  put("sub/a.h", "#pragma once\n#include \"b.h\"\n#include <stdio.h>\n"
                 "typedef T2 T;\n");
  put("sub/b.h", "#include \"a.h\"\ntypedef float T2;\n");
  put("src.cu", "#include \"sub/a.h\"\n#include \"sub/a.h\"\n"
                "#include \"missing.h\"\n");
  char path[300];
  snprintf(path, sizeof path, "%s/src.cu", dir);
  kl__src_types *t = NULL;
  assert_int_equal(kl__src_types_read(&t, path, NULL, NULL), 0);
  assert_int_equal(kl__src_types_include_count(t), 2);
  assert_string_equal(kl__src_types_include(t, 0), "sub/a.h");
  assert_string_equal(kl__src_types_include(t, 1), "sub/b.h");
  assert_string_equal(kl__src_types_alias(t, "T"), "T2");
  assert_string_equal(kl__src_types_alias(t, "T2"), "float");
  kl__src_types_free(t);
  /* a header outside the source's folder cannot be copied into a case */
  put("sub/c.cu", "#include \"../sub/b.h\"\n");
  snprintf(path, sizeof path, "%s/sub/c.cu", dir);
  assert_int_equal(kl__src_types_read(&t, path, NULL, NULL), KL_EINVALID);
  assert_null(t);
}

static int setup(void **state) {
  (void)state;
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_source_types__conditions),
      cmocka_unit_test(test_source_types__branches_and_aliases),
      cmocka_unit_test(test_source_types__local_headers),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
