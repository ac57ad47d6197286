/* Nsight Compute's exports as recorded metrics (issue 28), on exports
 * recorded on an H100 (tests/profile/fixtures/ncu_h100, bench/record_ncu.sh,
 * raw pages trimmed by trim_ncu.py to the columns kernlab reads, checked to
 * read the same): the CSV reader's edge cases and located errors; a raw
 * page in ncu's own units reads as in base units; each bundled kernel's
 * ncu export, given the case's roofline, has the verdict and fires the
 * default rules kernlab's own profile of the same kernel (same machine,
 * same run) does; a details page never contradicts it, what it cannot
 * evaluate ncu's own advice names, and that advice comes ranked with the
 * agreements marked; several kernels in one export
 * are each a profile; the quick set's verdict is the standard set's. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/csv.h"
#include "core/internal.h"
#include "kernlab/kernlab.h"
#include "profile/profile_internal.h"

#define FIX KL_SOURCE_DIR "/tests/profile/fixtures/ncu_h100/"

static kl_profile_list *read_list(const char *file) {
  char path[512];
  snprintf(path, sizeof(path), FIX "%s", file);
  kl_profile_list *l = NULL;
  if (kl_profile_list_read(&l, path) != 0)
    fail_msg("%s: %s", file, kl_error_last()->text);
  return l;
}

static double value(const kl_profile *p, const char *name) {
  double v = NAN;
  kl_profile_value(&v, p, name);
  return v;
}

/* ---- the CSV reader */

static void test_csv_reader(void **state) {
  (void)state;
  const char *text = "a,\"b,c\",\"say \"\"hi\"\"\"\r\n"
                     ",\"two\nlines\",x\n"
                     "last";
  kl_csv_reader r;
  kl_csv_record rec = {0};
  kl__csv_init(&r, text, strlen(text));
  assert_int_equal(kl__csv_next(&r, &rec, "t.csv"), 1);
  assert_int_equal(rec.count, 3);
  assert_string_equal(rec.fields[1].text, "b,c");
  assert_string_equal(rec.fields[2].text, "say \"hi\"");
  assert_int_equal(rec.fields[2].column, 9);
  assert_int_equal(kl__csv_next(&r, &rec, "t.csv"), 1);
  assert_int_equal(rec.line, 2);
  assert_string_equal(rec.fields[0].text, "");
  assert_string_equal(rec.fields[1].text, "two\nlines");
  assert_string_equal(rec.fields[2].text, "x");
  assert_int_equal(rec.fields[2].line, 3);
  assert_int_equal(kl__csv_next(&r, &rec, "t.csv"), 1);
  assert_string_equal(rec.fields[0].text, "last");
  assert_int_equal(rec.fields[0].line, 4);
  assert_int_equal(kl__csv_next(&r, &rec, "t.csv"), 0);

  const char *open_quote = "x,y\n1,\"never closed\n";
  kl__csv_init(&r, open_quote, strlen(open_quote));
  assert_int_equal(kl__csv_next(&r, &rec, "o.csv"), 1);
  assert_int_equal(kl__csv_next(&r, &rec, "o.csv"), KL_EINVALID);
  assert_string_equal(kl_error_last()->path, "o.csv");
  assert_int_equal(kl_error_last()->line, 2);
  assert_int_equal(kl_error_last()->column, 3);

  const char *after = "\"a\"b,c\n";
  kl__csv_init(&r, after, strlen(after));
  assert_int_equal(kl__csv_next(&r, &rec, "a.csv"), KL_EINVALID);
  assert_int_equal(kl_error_last()->column, 4);
  assert_non_null(strstr(kl_error_last()->message, "closing quote"));
  kl__csv_record_free(&rec);
}

/* ---- bad exports: one located error each, nothing read */

static void test_bad_exports(void **state) {
  (void)state;
  static const struct {
    const char *text, *message;
    int line;
  } bad[] = {
      {"\"ID\",\"Process ID\",\"Kernel Name\"\n", "row of units", 2},
      {"\"ID\",\"Process ID\",\"Kernel Name\",\"a__b\"\n\"\",\"\",\"\",\"\"\n",
       "holds no kernel", 1},
      {"==PROF== noise\n\"ID\",\"Process ID\",\"Kernel Name\",\"a__b\"\n"
       "\"\",\"\",\"\",\"ns\"\n\"0\",\"1\",\"k\",\"1\"x\n",
       "closing quote", 4},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    kl_profile_list *l = (kl_profile_list *)1;
    assert_int_equal(kl_profile_list_from_text(&l, bad[i].text, "bad.csv"),
                     KL_EINVALID);
    assert_null(l);
    const kl_error *e = kl_error_last();
    if (!strstr(e->message, bad[i].message) || e->line != bad[i].line)
      fail_msg("case %zu: %s", i, e->text);
    assert_string_equal(e->path, "bad.csv");
  }
  /* a file that is neither: JSON's own located error */
  kl_profile_list *l;
  assert_int_equal(kl_profile_list_from_text(&l, "ID;Kernel\n", "x.csv"),
                   KL_EINVALID);
  assert_string_equal(kl_error_last()->path, "x.csv");
}

/* ---- units: ncu's own units read as its base units */

static void test_units(void **state) {
  (void)state;
  kl_profile_list *base = read_list("transpose_f32.square4k.raw.csv");
  kl_profile_list *units = read_list("transpose_f32.square4k.raw-units.csv");
  const kl_profile *b = kl_profile_list_get(base, 0),
                   *u = kl_profile_list_get(units, 0);
  size_t compared = 0;
  static const char *const names[] = {"duration_ns",
                                      "sm_clock",
                                      "dram_clock",
                                      "dram_bytes_read",
                                      "dram_bandwidth",
                                      "dram_throughput_pct",
                                      "l2_throughput_pct",
                                      "static_smem_per_block",
                                      "theoretical_occupancy_pct",
                                      "stall_drain_pct",
                                      "ipc",
                                      "global_store_sectors"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    double x = value(b, names[i]), y = value(u, names[i]);
    if (isnan(x) && isnan(y)) continue;
    /* ncu rounds what it prints in its units: 3 significant digits */
    if (!(fabs(x - y) <= 0.006 * fmax(fabs(x), fabs(y)) + 1e-9))
      fail_msg("%s: %g in base units, %g in ncu's", names[i], x, y);
    compared++;
  }
  assert_true(compared >= 10);
  /* 293.86 us, Ghz clocks, Mbyte: in ns, Hz and bytes */
  assert_true(fabs(value(b, "duration_ns") - 293856) < 1);
  assert_true(value(u, "sm_clock") > 1e9 && value(u, "sm_clock") < 3e9);
  assert_true(value(u, "dram_bytes_read") > 7e7);
  kl_profile_list_free(base);
  kl_profile_list_free(units);
}

/* ---- against kernlab's own profile of the same kernel */

typedef struct kernel_case {
  const char *tag, *case_dir, *shape;
} kernel_case;

static const kernel_case kernels[] = {
    {"vector_add.64M", "vector_add", "64M"},
    {"transpose_f32.square4k", "transpose_f32", "square4k"},
    {"transpose_f32.square4ktiled", "transpose_f32", "square4k"},
    {"softmax_f32.r16k_c1k", "softmax_f32", "r16k_c1k"},
    {"reduce_sum_f32.64Mblock_reduce", "reduce_sum_f32", "64M"},
    {"gemm_f32.s1024", "gemm_f32", "s1024"},
};

static kl_rules *default_rules(void) {
  kl_rules *rs;
  assert_int_equal(kl_rules_create(&rs, NULL), 0);
  assert_int_equal(kl_rules_add_defaults(rs), 0);
  return rs;
}

static bool fired(const kl_diagnosis *d, const char *id) {
  for (size_t i = 0; i < kl_diagnosis_fired_count(d); i++) {
    kl_finding f = KL_FINDING_INIT;
    kl_diagnosis_fired(&f, d, i);
    if (strcmp(f.id, id) == 0) return true;
  }
  return false;
}

static bool unevaluated(const kl_diagnosis *d, const char *id) {
  for (size_t i = 0; i < kl_diagnosis_unevaluated_count(d); i++) {
    kl_unevaluated u = KL_UNEVALUATED_INIT;
    kl_diagnosis_unevaluated(&u, d, i);
    if (strcmp(u.id, id) == 0) return true;
  }
  return false;
}

/* Does ncu's advice name rule `id` (agreeing, or covering it)? */
static bool named_by_ncu(const kl_diagnosis *d, const char *id) {
  for (size_t i = 0; i < kl_diagnosis_advice_count(d); i++) {
    const char *agrees, *covers;
    kl_diagnosis_advice(d, i, &agrees, &covers);
    if ((agrees && strcmp(agrees, id) == 0) ||
        (covers && strcmp(covers, id) == 0))
      return true;
  }
  return false;
}

/* The export of k with the case's roofline for its shape. */
static kl_profile_list *export_with_roofline(const kernel_case *k,
                                             const char *page) {
  char file[160], dir[512];
  snprintf(file, sizeof(file), "%s.%s", k->tag, page);
  kl_profile_list *l = read_list(file);
  snprintf(dir, sizeof(dir), KL_SOURCE_DIR "/cases/%s", k->case_dir);
  kl_case *c;
  assert_int_equal(kl_case_load(&c, dir, NULL), 0);
  int at = kl_case_shape_find(c, k->shape);
  assert_true(at >= 0);
  double bytes, flops;
  assert_int_equal(kl_case_roofline(&bytes, &flops, c, (size_t)at), 0);
  assert_int_equal(kl_profile_list_set_roofline(l, 0, bytes, flops), 0);
  kl_case_free(c);
  return l;
}

static kl_diagnosis *own_diagnosis(const kl_rules *rs, const kernel_case *k,
                                   const char *set, kl_profile_list **keep) {
  char file[160];
  snprintf(file, sizeof(file), "%s.kl-%s.json", k->tag, set);
  *keep = read_list(file);
  kl_diagnosis *d;
  assert_int_equal(kl_rules_evaluate(&d, rs, kl_profile_list_get(*keep, 0)), 0);
  return d;
}

static void test_raw_page_names_the_same_problems(void **state) {
  (void)state;
  kl_rules *rs = default_rules();
  for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++) {
    kl_profile_list *own_l, *l = export_with_roofline(&kernels[i], "raw.csv");
    kl_diagnosis *own = own_diagnosis(rs, &kernels[i], "standard", &own_l), *d;
    assert_int_equal(kl_rules_evaluate(&d, rs, kl_profile_list_get(l, 0)), 0);
    if (kl_diagnosis_bottleneck(d) != kl_diagnosis_bottleneck(own))
      fail_msg("%s: ncu %s, kernlab %s", kernels[i].tag,
               kl_diagnosis_verdict(d), kl_diagnosis_verdict(own));
    for (int side = 0; side < 2; side++) {
      const kl_diagnosis *a = side ? d : own, *b = side ? own : d;
      for (size_t f = 0; f < kl_diagnosis_fired_count(a); f++) {
        kl_finding x = KL_FINDING_INIT;
        kl_diagnosis_fired(&x, a, f);
        if (!fired(b, x.id))
          fail_msg("%s: %s fired on %s only", kernels[i].tag, x.id,
                   side ? "ncu's export" : "kernlab's profile");
      }
    }
    /* nothing the export lacks that kernlab's own profile has */
    for (size_t u = 0; u < kl_diagnosis_unevaluated_count(d); u++) {
      kl_unevaluated x = KL_UNEVALUATED_INIT;
      kl_diagnosis_unevaluated(&x, d, u);
      if (!unevaluated(own, x.id))
        fail_msg("%s: %s not evaluated on ncu's export (%s)", kernels[i].tag,
                 x.id, x.reason);
    }
    kl_diagnosis_free(d);
    kl_diagnosis_free(own);
    kl_profile_list_free(l);
    kl_profile_list_free(own_l);
  }
  kl_rules_free(rs);
}

/* A details page has fewer values: what it fires kernlab's profile fires,
 * what kernlab's fires it fires or cannot evaluate (never passes), and
 * ncu's own advice comes ranked with its agreements. */
static void test_details_page(void **state) {
  (void)state;
  kl_rules *rs = default_rules();
  for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++) {
    kl_profile_list *own_l,
        *l = export_with_roofline(&kernels[i], "details.csv");
    kl_diagnosis *own = own_diagnosis(rs, &kernels[i], "standard", &own_l), *d;
    const kl_profile *p = kl_profile_list_get(l, 0);
    assert_int_equal(kl_rules_evaluate(&d, rs, p), 0);
    assert_int_equal(kl_diagnosis_bottleneck(d), kl_diagnosis_bottleneck(own));
    for (size_t f = 0; f < kl_diagnosis_fired_count(d); f++) {
      kl_finding x = KL_FINDING_INIT;
      kl_diagnosis_fired(&x, d, f);
      if (!fired(own, x.id))
        fail_msg("%s: %s fired on the details page only", kernels[i].tag, x.id);
    }
    for (size_t f = 0; f < kl_diagnosis_fired_count(own); f++) {
      kl_finding x = KL_FINDING_INIT;
      kl_diagnosis_fired(&x, own, f);
      if (!fired(d, x.id) && !unevaluated(d, x.id))
        fail_msg("%s: the details page passes %s, which kernlab fires",
                 kernels[i].tag, x.id);
      /* what it cannot evaluate, ncu's own advice names; only the roofline
       * needs the peak bandwidth a details page does not carry */
      if (!fired(d, x.id) && !named_by_ncu(d, x.id) &&
          strcmp(x.id, "far_from_roofline") != 0)
        fail_msg("%s: %s is named neither by the rules nor by ncu",
                 kernels[i].tag, x.id);
    }
    /* ranked by estimated speedup, those without one last */
    size_t n = kl_profile_advice_count(p);
    assert_true(n >= 3);
    assert_int_equal(kl_diagnosis_advice_count(d), n);
    for (size_t a = 1; a < n; a++) {
      double prev = kl_profile_advice(p, a - 1)->speedup_pct,
             cur = kl_profile_advice(p, a)->speedup_pct;
      assert_true(isnan(cur) || (!isnan(prev) && prev >= cur));
    }
    kl_diagnosis_free(d);
    kl_diagnosis_free(own);
    kl_profile_list_free(l);
    kl_profile_list_free(own_l);
  }
  kl_rules_free(rs);
}

/* The naive transpose: the details-all page adds the stall table; ncu's
 * CPIStall results about draining and L1TEX scoreboards agree with the
 * rules that fire; the values taken from ncu's nearest metric say so. */
static void test_advice_agrees(void **state) {
  (void)state;
  kl_rules *rs = default_rules();
  kl_profile_list *l = read_list("transpose_f32.square4k.details-all.csv");
  assert_int_equal(kl_profile_list_count(l), 1); /* the NUMA table skipped */
  assert_string_equal(kl_profile_list_name(l, 0), "transpose");
  assert_string_equal(kl_profile_list_launch(l, 0), "0");
  kl_diagnosis *d;
  assert_int_equal(kl_rules_evaluate(&d, rs, kl_profile_list_get(l, 0)), 0);
  assert_true(fired(d, "stall_drain") && fired(d, "stall_long_scoreboard"));
  size_t agree = 0;
  for (size_t i = 0; i < kl_diagnosis_advice_count(d); i++) {
    const char *with, *covers;
    const kl_ncu_advice *a = kl_diagnosis_advice(d, i, &with, &covers);
    if (strcmp(a->rule, "UncoalescedGlobalAccess") == 0)
      assert_string_equal(covers, "uncoalesced_stores"); /* no store ratio */
    if (with) {
      assert_string_equal(a->rule, "CPIStall");
      agree++;
    }
  }
  assert_int_equal(agree, 2);
  const kl_ncu_advice *top = kl_diagnosis_advice(d, 0, NULL, NULL);
  assert_string_equal(top->type, "OPT");
  assert_true(top->speedup_pct > 90);
  for (size_t i = 0; i < kl_diagnosis_fired_count(d); i++) {
    kl_finding f = KL_FINDING_INIT;
    kl_diagnosis_fired(&f, d, i);
    if (strcmp(f.id, "severe_memory_bound") == 0)
      assert_non_null(strstr(f.stand_ins, "gpu__dram_throughput"));
  }
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl_diagnosis_json(&b, d), 0);
  assert_non_null(strstr(b.ptr, "\"ncu_advice\":[{\"rule\":"));
  assert_non_null(strstr(b.ptr, "\"agrees\":\"stall_drain\""));
  kl_buf_dispose(&b);
  kl_diagnosis_free(d);
  kl_profile_list_free(l);
  kl_rules_free(rs);
}

/* Several kernels in one export: one profile each, named, with ncu's ID;
 * a live run's output (==PROF== lines, the program's own) is skipped. */
static void test_several_kernels(void **state) {
  (void)state;
  kl_profile_list *l = read_list("llmc_layernorm2.raw.csv");
  assert_int_equal(kl_profile_list_count(l), 3);
  static const char *const names[] = {"mean_kernel", "rstd_kernel",
                                      "normalization_kernel"};
  for (size_t i = 0; i < 3; i++) {
    char id[4];
    snprintf(id, sizeof(id), "%zu", i);
    assert_string_equal(kl_profile_list_name(l, i), names[i]);
    assert_string_equal(kl_profile_list_launch(l, i), id);
    assert_true(value(kl_profile_list_get(l, i), "duration_ns") > 0);
  }
  /* the first two are the same geometry with different work */
  assert_true(value(kl_profile_list_get(l, 2), "block_size") == 256);
  kl_profile_list_free(l);

  l = read_list("vector_add.two.raw.csv");
  assert_int_equal(kl_profile_list_count(l), 2);
  assert_true(value(kl_profile_list_get(l, 0), "grid_size") <
              value(kl_profile_list_get(l, 1), "grid_size"));
  kl_profile_list_free(l);

  l = read_list("vector_add.64M.basic.raw.csv"); /* ncu run live */
  assert_int_equal(kl_profile_list_count(l), 1);
  assert_int_equal(kl_profile_bottleneck(kl_profile_list_get(l, 0)),
                   KL_BOTTLENECK_MEMORY);
  kl_profile_list_free(l);
}

/* ---- the quick set decides as the standard set does */

static kl_bottleneck restricted(const kl_profile *full, const char *set) {
  char **names;
  size_t n;
  assert_int_equal(kl__profile_names(&names, &n, set), 0);
  kl_buf b = KL_BUF_INIT;
  kl__buf_putc(&b, '{');
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    double v;
    if (kl_profile_value(&v, full, names[i]) != 0) continue;
    kl__buf_printf(&b, "%s\"%s\":%.17g", kept++ ? "," : "", names[i], v);
  }
  kl__buf_putc(&b, '}');
  kl__profile_names_free(names, n);
  kl_profile_list *l;
  assert_int_equal(kl_profile_list_from_json(&l, b.ptr, "restricted.json"), 0);
  kl_bottleneck bn = kl_profile_bottleneck(kl_profile_list_get(l, 0));
  kl_profile_list_free(l);
  kl_buf_dispose(&b);
  return bn;
}

static void test_quick_verdict_is_standard(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++) {
    char file[160];
    snprintf(file, sizeof(file), "%s.raw.csv", kernels[i].tag);
    kl_profile_list *l = read_list(file);
    const kl_profile *p = kl_profile_list_get(l, 0);
    kl_bottleneck q = restricted(p, "quick"), s = restricted(p, "standard");
    if (q != s)
      fail_msg("%s: quick %s, standard %s", kernels[i].tag,
               kl_bottleneck_name(q), kl_bottleneck_name(s));
    assert_int_equal(s, kl_profile_bottleneck(p));
    kl_profile_list_free(l);
  }
}

/* An .ncu-rep needs ncu: without it on PATH, a one-line error that says
 * how to export one instead. */
static void test_report_without_ncu(void **state) {
  (void)state;
  const char *path = getenv("PATH");
  char *saved = path ? strdup(path) : NULL;
  setenv("PATH", "/nonexistent", 1);
  kl_profile_list *l;
  int rc = kl_profile_list_read(&l, FIX "missing.ncu-rep");
  if (saved) setenv("PATH", saved, 1);
  free(saved);
  assert_int_equal(rc, KL_ENOTFOUND);
  assert_non_null(strstr(kl_error_last()->message, "ncu --import"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_csv_reader),
      cmocka_unit_test(test_bad_exports),
      cmocka_unit_test(test_units),
      cmocka_unit_test(test_raw_page_names_the_same_problems),
      cmocka_unit_test(test_details_page),
      cmocka_unit_test(test_advice_agrees),
      cmocka_unit_test(test_several_kernels),
      cmocka_unit_test(test_quick_verdict_is_standard),
      cmocka_unit_test(test_report_without_ncu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
