/* Rules and skills: the language from data files (language.txt,
 * templates.txt), every default rule firing on a fixture built for it and
 * silent on a healthy one, exact error locations (the files in bad/ carry
 * expected diagnostics), the recorded H200 profiles of the bundled cases,
 * skills, user rules replacing defaults, the recorded-metrics forms, and
 * out-of-memory at every allocation. */
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/internal.h"
#include "kernlab/kernlab.h"
#include "support/slurp.h"

#define DIR KL_SOURCE_DIR "/tests/rules/"

static char *slurp(const char *path) {
  char *s = kl_test_slurp(path);
  if (!s) fail_msg("cannot read %s", path);
  return s;
}

static kl_rules *defaults(void) {
  kl_rules *rs;
  assert_int_equal(kl_rules_create(&rs, NULL), 0);
  assert_int_equal(kl_rules_add_defaults(rs), 0);
  return rs;
}

/* A flat profile from "a=1, b__c=2". */
static kl_profile *flat_profile(const char *metrics) {
  kl_buf json = KL_BUF_INIT;
  kl__buf_putc(&json, '{');
  char *copy = strdup(metrics), *save = NULL;
  int n = 0;
  for (char *kv = strtok_r(copy, ",", &save); kv;
       kv = strtok_r(NULL, ",", &save)) {
    while (*kv == ' ')
      kv++;
    char *eq = strchr(kv, '=');
    assert_non_null(eq);
    *eq = '\0';
    kl__buf_printf(&json, "%s\"%s\":%s", n++ ? "," : "", kv, eq + 1);
  }
  kl__buf_putc(&json, '}');
  free(copy);
  kl_profile_list *l;
  if (kl_profile_list_from_json(&l, json.ptr, "<test>") != 0)
    fail_msg("%s: %s", json.ptr, kl_error_last()->message);
  kl_buf_dispose(&json);
  /* keep the profile: rebuild it standalone from its JSON */
  kl_buf out = KL_BUF_INIT;
  assert_int_equal(kl_profile_json(&out, kl_profile_list_get(l, 0), 0), 0);
  kl_profile *p;
  assert_int_equal(kl_profile_from_json(&p, out.ptr, "<test>"), 0);
  kl_buf_dispose(&out);
  kl_profile_list_free(l);
  return p;
}

static char *trim(char *s) {
  while (*s == ' ')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\n'))
    s[--n] = '\0';
  return s;
}

/* Split "a | b | c" into three trimmed fields. */
static int fields(char *line, char **f) {
  int n = 0;
  for (char *p = line; n < 3;) {
    char *bar = n < 2 ? strstr(p, " | ") : NULL;
    if (bar) *bar = '\0';
    f[n++] = trim(p);
    if (!bar) break;
    p = bar + 3;
  }
  return n;
}

static const kl_finding *find(const kl_diagnosis *d, const char *id,
                              kl_finding *f) {
  for (size_t i = 0; i < kl_diagnosis_fired_count(d); i++) {
    kl_diagnosis_fired(f, d, i);
    if (strcmp(f->id, id) == 0) return f;
  }
  return NULL;
}

static const kl_unevaluated *
find_unevaluated(const kl_diagnosis *d, const char *id, kl_unevaluated *u) {
  for (size_t i = 0; i < kl_diagnosis_unevaluated_count(d); i++) {
    kl_diagnosis_unevaluated(u, d, i);
    if (strcmp(u->id, id) == 0) return u;
  }
  return NULL;
}

/* ---- the language, from data ----------------------------------------------
 */

/* Run every "a | b | c" line of a data file; `yaml` makes the rule file
 * from the first field. A "load: text" expectation wants that error. */
static int run_table(const char *path, const char *yaml_fmt,
                     void (*check)(kl_diagnosis *d, char **f)) {
  char *text = slurp(path), *save = NULL;
  int cases = 0;
  for (char *line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    if (line[0] == '#' || !line[0]) continue;
    char *f[3];
    assert_int_equal(fields(line, f), 3);
    kl_rules *rs;
    assert_int_equal(kl_rules_create(&rs, NULL), 0);
    kl_buf yaml = KL_BUF_INIT;
    kl__buf_printf(&yaml, yaml_fmt, f[0]);
    int rc = kl_rules_add_string(rs, yaml.ptr, "t.yaml");
    kl_buf_dispose(&yaml);
    cases++;
    if (strncmp(f[2], "load: ", 6) == 0) {
      if (rc != KL_EINVALID || !strstr(kl_error_last()->message, f[2] + 6))
        fail_msg("'%s': wanted load error '%s', got %d %s", f[0], f[2] + 6, rc,
                 rc ? kl_error_last()->message : "");
    } else if (rc != 0) {
      fail_msg("'%s': %s", f[0], kl_error_last()->message);
    } else {
      kl_profile *p = flat_profile(f[1]);
      kl_diagnosis *d;
      assert_int_equal(kl_rules_evaluate(&d, rs, p), 0);
      check(d, f);
      kl_diagnosis_free(d);
      kl_profile_free(p);
    }
    kl_rules_free(rs);
  }
  free(text);
  return cases;
}

/* when | metrics | fires, fires without: a, silent, missing: a, b,
 * eval: error */
static void check_when(kl_diagnosis *d, char **f) {
  const char *when = f[0], *metrics = f[1], *want = f[2];
  kl_finding fi = KL_FINDING_INIT;
  kl_unevaluated u = KL_UNEVALUATED_INIT;
  bool fired = find(d, "t", &fi) != NULL;
  bool uneval = find_unevaluated(d, "t", &u) != NULL;
  if (strcmp(want, "fires") == 0 && (!fired || fi.without))
    fail_msg("'%s' over %s: did not fire on every value", when, metrics);
  if (strncmp(want, "fires without: ", 15) == 0 &&
      (!fired || !fi.without || strcmp(fi.without, want + 15) != 0))
    fail_msg("'%s' over %s: wanted it fired without %s, got %s", when, metrics,
             want + 15,
             fired ? (fi.without ? fi.without : "every value") : "silence");
  if (strcmp(want, "silent") == 0 &&
      (fired || uneval || kl_diagnosis_passed_count(d) != 1))
    fail_msg("'%s' over %s: not silent", when, metrics);
  if (strncmp(want, "missing: ", 9) == 0 &&
      (!uneval || !u.missing || strcmp(u.missing, want + 9) != 0))
    fail_msg("'%s' over %s: wanted missing %s, got %s", when, metrics, want + 9,
             uneval ? u.reason : "evaluated");
  if (strncmp(want, "eval: ", 6) == 0 &&
      (!uneval || u.missing || !strstr(u.reason, want + 6)))
    fail_msg("'%s' over %s: wanted '%s', got %s", when, metrics, want + 6,
             uneval ? u.reason : "evaluated");
}

/* template | metrics | the finding as printed */
static void check_template(kl_diagnosis *d, char **f) {
  kl_finding fi = KL_FINDING_INIT;
  if (!find(d, "t", &fi)) fail_msg("'%s': did not fire", f[0]);
  if (strcmp(fi.finding, f[2]) != 0)
    fail_msg("'%s' over %s: wanted '%s', got '%s'", f[0], f[1], f[2],
             fi.finding);
}

static void test_language_table(void **state) {
  (void)state;
  int cases = run_table(DIR "language.txt",
                        "- id: t\n  severity: low\n  when: \"%s\"\n"
                        "  finding: f\n  action: a\n",
                        check_when);
  assert_true(cases >= 25);
}

static void test_template_table(void **state) {
  (void)state;
  int cases = run_table(DIR "templates.txt",
                        "- id: t\n  severity: low\n  when: a__x > -1e9\n"
                        "  finding: '%s'\n  action: a\n",
                        check_template);
  assert_true(cases >= 15);
}

/* ---- default rules on built fixtures
 * ------------------------------------------ */

static void merge_into(json_object *dst, json_object *patch) {
  json_object_object_foreach(patch, key, val) {
    json_object *cur;
    if (json_object_is_type(val, json_type_object) &&
        json_object_object_get_ex(dst, key, &cur) &&
        json_object_is_type(cur, json_type_object))
      merge_into(cur, val);
    else
      json_object_object_add(dst, key, json_object_get(val));
  }
}

static kl_profile *patched(const char *base, json_object *patch) {
  json_object *o = json_tokener_parse(base);
  assert_non_null(o);
  if (patch) merge_into(o, patch);
  kl_profile *p;
  if (kl_profile_from_json(&p, json_object_to_json_string(o), "built") != 0)
    fail_msg("%s", kl_error_last()->message);
  json_object_put(o);
  return p;
}

static void test_defaults_fire_and_stay_silent(void **state) {
  (void)state;
  kl_rules *rs = defaults();
  char *healthy = slurp(DIR "fixtures/healthy.json");
  char *fire_text = slurp(DIR "fixtures/fire.json");
  json_object *fire = json_tokener_parse(fire_text);
  assert_non_null(fire);
  /* healthy: every rule evaluated, none fired */
  kl_profile *p = patched(healthy, NULL);
  kl_diagnosis *d;
  assert_int_equal(kl_rules_evaluate(&d, rs, p), 0);
  for (size_t i = 0; i < kl_diagnosis_fired_count(d); i++) {
    kl_finding f = KL_FINDING_INIT;
    kl_diagnosis_fired(&f, d, i);
    fail_msg("healthy fixture: %s fired: %s", f.id, f.finding);
  }
  for (size_t i = 0; i < kl_diagnosis_unevaluated_count(d); i++) {
    kl_unevaluated u = KL_UNEVALUATED_INIT;
    kl_diagnosis_unevaluated(&u, d, i);
    fail_msg("healthy fixture: %s not evaluated (%s)", u.id, u.reason);
  }
  assert_int_equal(kl_diagnosis_passed_count(d), kl_rules_count(rs));
  kl_diagnosis_free(d);
  kl_profile_free(p);
  /* each default rule fires on the fixture built for it */
  for (size_t i = 0; i < kl_rules_count(rs); i++) {
    kl_rule_info r = KL_RULE_INFO_INIT;
    kl_rules_get(&r, rs, i);
    json_object *patch;
    if (!json_object_object_get_ex(fire, r.id, &patch))
      fail_msg("fire.json has no fixture for default rule %s", r.id);
    p = patched(healthy, patch);
    assert_int_equal(kl_rules_evaluate(&d, rs, p), 0);
    kl_finding f = KL_FINDING_INIT;
    if (!find(d, r.id, &f)) fail_msg("%s did not fire on its fixture", r.id);
    assert_true(f.margin > 0 && f.margin <= 1);
    assert_null(strstr(f.finding, "n/a"));
    assert_null(strstr(f.action, "n/a"));
    kl_diagnosis_free(d);
    kl_profile_free(p);
  }
  json_object_put(fire);
  free(fire_text);
  free(healthy);
  kl_rules_free(rs);
}

/* The ids shared by tools of this family, and the extras the issue asks
 * for, are all in the default set with a skill that exists. */
static void test_default_set(void **state) {
  (void)state;
  static const char *const ids[] = {"severe_memory_bound",
                                    "near_peak_compute",
                                    "huge_dram_traffic",
                                    "low_occupancy",
                                    "register_limited",
                                    "low_waves_per_sm",
                                    "high_waves_per_sm",
                                    "poor_coalescing",
                                    "low_l1_hit",
                                    "low_l2_hit",
                                    "smem_bank_conflicts",
                                    "stall_long_scoreboard",
                                    "stall_short_scoreboard",
                                    "stall_mio_throttle",
                                    "stall_math_pipe",
                                    "stall_barrier",
                                    "stall_wait",
                                    "stall_membar",
                                    "low_ipc",
                                    "tail_effect",
                                    "local_memory_spills",
                                    "uncoalesced_stores",
                                    "far_from_roofline",
                                    "launch_overhead",
                                    "stall_drain",
                                    "stall_lg_throttle"};
  kl_rules *rs = defaults();
  for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) {
    bool found = false;
    for (size_t i = 0; i < kl_rules_count(rs); i++) {
      kl_rule_info r = KL_RULE_INFO_INIT;
      kl_rules_get(&r, rs, i);
      if (strcmp(r.id, ids[k]) != 0) continue;
      found = true;
      assert_non_null(r.skill);
    }
    if (!found) fail_msg("default rule %s is missing", ids[k]);
  }
  /* every skill: a signal line, short, in the catalog */
  kl_buf cat = KL_BUF_INIT;
  assert_int_equal(kl_rules_skill_catalog(&cat, rs), 0);
  assert_true(kl_rules_skill_count(rs) >= 23);
  for (size_t i = 0; i < kl_rules_skill_count(rs); i++) {
    kl_skill_info s = KL_SKILL_INFO_INIT;
    kl_rules_skill(&s, rs, i);
    if (strlen(s.text) > 2000)
      fail_msg("%s is %zu characters (2,000 at most)", s.path, strlen(s.text));
    assert_true(strlen(s.signal) > 20);
    char line[512];
    snprintf(line, sizeof(line), "- %s: %s\n", s.id, s.signal);
    assert_non_null(strstr(cat.ptr, line));
  }
  kl_buf_dispose(&cat);
  kl_rules_free(rs);
}

/* ---- the recorded H200 profiles of the bundled cases
 * ---------------------------- */

static kl_diagnosis *recorded(const kl_rules *rs, const char *file,
                              const char *shape, kl_profile_list **keep) {
  char path[512];
  snprintf(path, sizeof(path), DIR "fixtures/h200/%s.json", file);
  char *text = slurp(path);
  kl_profile_list *l;
  if (kl_profile_list_from_json(&l, text, path) != 0)
    fail_msg("%s", kl_error_last()->message);
  free(text);
  for (size_t i = 0; i < kl_profile_list_count(l); i++)
    if (strcmp(kl_profile_list_name(l, i), shape) == 0) {
      kl_diagnosis *d;
      assert_int_equal(kl_rules_evaluate(&d, rs, kl_profile_list_get(l, i)), 0);
      /* the standard set collects every metric the defaults read */
      for (size_t k = 0; k < kl_diagnosis_unevaluated_count(d); k++) {
        kl_unevaluated u = KL_UNEVALUATED_INIT;
        kl_diagnosis_unevaluated(&u, d, k);
        fail_msg("%s %s: %s not evaluated (%s)", file, shape, u.id, u.reason);
      }
      *keep = l;
      return d;
    }
  fail_msg("%s has no shape %s", file, shape);
  return NULL;
}

static void expect(const kl_rules *rs, const char *file, const char *shape,
                   kl_bottleneck b, const char *const *fired,
                   const char *const *silent) {
  kl_profile_list *l;
  kl_diagnosis *d = recorded(rs, file, shape, &l);
  if (kl_diagnosis_bottleneck(d) != b)
    fail_msg("%s %s: %s, wanted %s", file, shape, kl_diagnosis_verdict(d),
             kl_bottleneck_name(b));
  kl_finding f = KL_FINDING_INIT;
  for (size_t i = 0; fired && fired[i]; i++)
    if (!find(d, fired[i], &f))
      fail_msg("%s %s: %s did not fire", file, shape, fired[i]);
  for (size_t i = 0; silent && silent[i]; i++)
    if (find(d, silent[i], &f))
      fail_msg("%s %s: %s fired: %s", file, shape, silent[i], f.finding);
  kl_diagnosis_free(d);
  kl_profile_list_free(l);
}

static void test_recorded_h200(void **state) {
  (void)state;
  kl_rules *rs = defaults();
  /* the naive transpose: uncoalesced stores, L2-bound, first in rank */
  static const char *const shapes[] = {"square1k", "square4k", "wide", "odd"};
  for (int i = 0; i < 4; i++) {
    expect(rs, "transpose_f32", shapes[i], KL_BOTTLENECK_MEMORY,
           (const char *[]){"uncoalesced_stores", "severe_memory_bound", NULL},
           NULL);
    kl_profile_list *l;
    kl_diagnosis *d = recorded(rs, "transpose_f32", shapes[i], &l);
    kl_finding f = KL_FINDING_INIT;
    kl_diagnosis_fired(&f, d, 0);
    assert_string_equal(f.id, "uncoalesced_stores");
    kl_diagnosis_free(d);
    kl_profile_list_free(l);
  }
  /* the tiled transpose fixed it */
  expect(rs, "transpose_f32.tiled", "square4k", KL_BOTTLENECK_LATENCY, NULL,
         (const char *[]){"uncoalesced_stores", "poor_coalescing", NULL});
  /* vector add: memory bound at real sizes, coalesced */
  expect(rs, "vector_add", "16M", KL_BOTTLENECK_MEMORY,
         (const char *[]){"severe_memory_bound", NULL},
         (const char *[]){"poor_coalescing", "uncoalesced_stores",
                          "huge_dram_traffic", "far_from_roofline", NULL});
  expect(rs, "vector_add", "64M", KL_BOTTLENECK_MEMORY,
         (const char *[]){"severe_memory_bound", NULL}, NULL);
  /* small shapes: latency (a grid that fills 2% of one wave) or launch */
  expect(rs, "softmax_f32.warp_per_row", "r4k_c1k", KL_BOTTLENECK_LATENCY,
         (const char *[]){"low_waves_per_sm", "low_occupancy", "low_ipc", NULL},
         (const char *[]){"severe_memory_bound", "near_peak_compute", NULL});
  expect(rs, "vector_add", "1M", KL_BOTTLENECK_LAUNCH,
         (const char *[]){"launch_overhead", "low_ipc", NULL},
         (const char *[]){"severe_memory_bound", NULL});
  /* a thread per row: uncoalesced both ways */
  expect(rs, "softmax_f32", "r16k_c1k", KL_BOTTLENECK_COMPUTE,
         (const char *[]){"poor_coalescing", "uncoalesced_stores",
                          "low_waves_per_sm", NULL},
         NULL);
  /* a sum by one atomic per element: the atomics drain; per block, not */
  expect(rs, "reduce_sum_f32", "16M", KL_BOTTLENECK_LATENCY,
         (const char *[]){"stall_drain", "low_ipc", NULL}, NULL);
  expect(rs, "reduce_sum_f32.block_reduce", "16M", KL_BOTTLENECK_LATENCY, NULL,
         (const char *[]){"stall_drain", NULL});
  /* naive GEMM: L1-bound, A loads waste sectors; tiling fixes that */
  expect(rs, "gemm_f32", "s1024", KL_BOTTLENECK_COMPUTE,
         (const char *[]){"near_peak_compute", "poor_coalescing", NULL}, NULL);
  expect(rs, "gemm_f32.smem_tiled", "s1024", KL_BOTTLENECK_COMPUTE, NULL,
         (const char *[]){"poor_coalescing", NULL});
  kl_rules_free(rs);
}

/* ---- errors
 * -------------------------------------------------------------------- */

typedef struct collected {
  char text[8192];
  int count;
} collected;

static int collect(const kl_error *e, void *payload) {
  collected *c = payload;
  size_t n = strlen(c->text);
  snprintf(c->text + n, sizeof(c->text) - n, "%d:%d: %s\n", e->line, e->column,
           e->text);
  c->count++;
  return 0;
}

static void test_bad_files_exact(void **state) {
  (void)state;
  static const char *const files[] = {"names", "syntax", "duplicate",
                                      "yaml_syntax", "not_a_list"};
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    char path[512];
    snprintf(path, sizeof(path), DIR "bad/%s.yaml", files[i]);
    char *text = slurp(path);
    char want[8192] = "";
    size_t used = 0;
    for (char *p = strstr(text, "# expect: "); p;
         p = strstr(p + 1, "# expect: ")) {
      int n = (int)strcspn(p + 10, "\n");
      used += (size_t)snprintf(want + used, sizeof(want) - used, "%.*s\n", n,
                               p + 10);
      assert_true(used < sizeof(want));
    }
    collected got = {"", 0};
    kl_rules_options opts = KL_RULES_OPTIONS_INIT;
    opts.on_diag = collect;
    opts.payload = &got;
    kl_rules *rs;
    assert_int_equal(kl_rules_create(&rs, &opts), 0);
    assert_int_equal(kl_rules_add_defaults(rs), 0);
    size_t before = kl_rules_count(rs);
    assert_int_equal(kl_rules_add_file(rs, path), KL_EINVALID);
    if (strcmp(got.text, want) != 0)
      fail_msg("%s\nwanted:\n%sgot:\n%s", path, want, got.text);
    /* the first error is the last error, located in the file */
    const kl_error *e = kl_error_last();
    assert_string_equal(e->path, path);
    assert_true(e->line > 0 && e->column > 0);
    assert_non_null(e->snippet);
    assert_non_null(strchr(e->snippet, '^'));
    /* nothing of a bad file is kept */
    assert_int_equal(kl_rules_count(rs), before);
    kl_rules_free(rs);
    free(text);
  }
}

static void test_user_rules_replace(void **state) {
  (void)state;
  kl_rules *rs = defaults();
  size_t n = kl_rules_count(rs);
  const char *mine =
      "- id: low_ipc\n  severity: high\n  when: ipc < 0.9\n"
      "  finding: 'my IPC {ipc:.2f}'\n  action: mine\n  group: mine\n"
      "- id: my_own\n  severity: low\n  when: dram_bytes > 0\n"
      "  finding: x\n  action: y\n";
  assert_int_equal(kl_rules_add_string(rs, mine, "mine.yaml"), 0);
  assert_int_equal(kl_rules_count(rs), n + 1);
  kl_rule_info r = KL_RULE_INFO_INIT;
  bool seen = false;
  for (size_t i = 0; i < kl_rules_count(rs); i++) {
    kl_rules_get(&r, rs, i);
    if (strcmp(r.id, "low_ipc") == 0) {
      seen = true;
      assert_int_equal(r.severity, KL_SEVERITY_HIGH);
      assert_string_equal(r.path, "mine.yaml");
      assert_int_equal(r.line, 1);
      assert_null(r.skill);
    }
  }
  assert_true(seen);
  /* the replacement is what evaluates */
  char *healthy = slurp(DIR "fixtures/healthy.json");
  kl_profile *p = patched(healthy, NULL);
  kl_diagnosis *d;
  kl_finding f = KL_FINDING_INIT;
  assert_int_equal(kl_rules_evaluate(&d, rs, p), 0);
  assert_non_null(find(d, "low_ipc", &f));
  assert_string_equal(f.finding, "my IPC 0.60");
  assert_non_null(find(d, "my_own", &f));
  kl_diagnosis_free(d);
  /* default files may not repeat an id */
  assert_int_equal(kl_rules_add_defaults(rs), KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message, "duplicate rule id"));
  kl_profile_free(p);
  free(healthy);
  kl_rules_free(rs);
}

/* The top skills: most severe first, then by margin; distinct. */
static void test_fired_skills(void **state) {
  (void)state;
  kl_rules *rs = defaults();
  kl_profile_list *l;
  kl_diagnosis *d = recorded(rs, "softmax_f32", "r4k_c1k", &l);
  assert_true(kl_diagnosis_fired_count(d) >= 6);
  kl_finding prev = KL_FINDING_INIT, f = KL_FINDING_INIT;
  kl_diagnosis_fired(&prev, d, 0);
  for (size_t i = 1; i < kl_diagnosis_fired_count(d); i++) {
    kl_diagnosis_fired(&f, d, i);
    assert_true(f.severity < prev.severity ||
                (f.severity == prev.severity && f.margin <= prev.margin));
    prev = f;
  }
  kl_buf text = KL_BUF_INIT;
  assert_int_equal(kl_diagnosis_skills(&text, d, rs, 5), 0);
  int signals = 0;
  for (const char *p = text.ptr; (p = strstr(p, "**Signal**:")); p++)
    signals++;
  assert_int_equal(signals, 5);
  kl_diagnosis_fired(&f, d, 0);
  kl_skill_info s = KL_SKILL_INFO_INIT;
  for (size_t i = 0; i < kl_rules_skill_count(rs); i++)
    if (kl_rules_skill(&s, rs, i) == 0 && strcmp(s.id, f.skill) == 0)
      assert_ptr_equal(strstr(text.ptr, s.text), text.ptr);
  assert_int_equal(kl_diagnosis_skills(&text, d, rs, 2), 0);
  signals = 0;
  for (const char *p = text.ptr; (p = strstr(p, "**Signal**:")); p++)
    signals++;
  assert_int_equal(signals, 2);
  /* and the JSON form */
  kl_buf json = KL_BUF_INIT;
  assert_int_equal(kl_diagnosis_json(&json, d), 0);
  json_object *o = json_tokener_parse(json.ptr);
  assert_non_null(o);
  json_object *v;
  assert_true(json_object_object_get_ex(o, "fired", &v));
  assert_int_equal(json_object_array_length(v), kl_diagnosis_fired_count(d));
  assert_true(json_object_object_get_ex(o, "not_evaluated", &v));
  assert_true(json_object_object_get_ex(o, "bottleneck", &v));
  assert_string_equal(json_object_get_string(v), "compute_bound");
  json_object_put(o);
  kl_buf_dispose(&json);
  kl_buf_dispose(&text);
  kl_diagnosis_free(d);
  kl_profile_list_free(l);
  kl_rules_free(rs);
}

static void test_bad_skills(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-skills-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[600];
  snprintf(path, sizeof(path), "%s/no_signal.md", dir);
  FILE *f = fopen(path, "w");
  fputs("# Title\n\nJust prose.\n\n**Fixes**\n1. x\n", f);
  fclose(f);
  collected got = {"", 0};
  kl_rules_options opts = KL_RULES_OPTIONS_INIT;
  opts.on_diag = collect;
  opts.payload = &got;
  kl_rules *rs;
  assert_int_equal(kl_rules_create(&rs, &opts), 0);
  size_t before = kl_rules_skill_count(rs);
  assert_int_equal(kl_rules_add_skills(rs, dir), KL_EINVALID);
  assert_string_equal(got.text,
                      "3:1: a skill starts with a '**Signal**:' line (after "
                      "an optional # heading)\n"
                      "6:1: a skill needs a **Root causes** section (root "
                      "causes, fixes and anti-patterns, each in priority "
                      "order)\n"
                      "6:1: a skill needs a **Anti-patterns** section (root "
                      "causes, fixes and anti-patterns, each in priority "
                      "order)\n");
  assert_int_equal(kl_rules_skill_count(rs), before);
  remove(path);
  /* a good one is added, and rules may then name it */
  snprintf(path, sizeof(path), "%s/my_skill.md", dir);
  f = fopen(path, "w");
  fputs("**Signal**: something.\n**Root causes**\n**Fixes**\n"
        "**Anti-patterns**\n",
        f);
  fclose(f);
  assert_int_equal(kl_rules_add_skills(rs, dir), 0);
  assert_int_equal(kl_rules_skill_count(rs), before + 1);
  assert_int_equal(kl_rules_add_string(rs,
                                       "- {id: x, severity: low, when: 'ipc > "
                                       "0', finding: f, action: a, skill: "
                                       "my_skill}\n",
                                       "x.yaml"),
                   0);
  remove(path);
  rmdir(dir);
  kl_rules_free(rs);
}

/* ---- recorded-metrics forms
 * ------------------------------------------------------- */

static void test_metric_forms(void **state) {
  (void)state;
  kl_profile_list *l;
  /* a flat ncu-style export, numbers and numeric strings */
  assert_int_equal(kl_profile_list_from_json(
                       &l,
                       "{\"dram__throughput.avg.pct_of_peak_sustained_elapsed\""
                       ": \"85.5\", \"lts__throughput.avg.pct_of_peak_sustained"
                       "_elapsed\": 40, \"sm__throughput.avg.pct_of_peak_"
                       "sustained_elapsed\": 20}",
                       "flat.json"),
                   0);
  assert_int_equal(kl_profile_list_count(l), 1);
  assert_null(kl_profile_list_name(l, 0));
  double v;
  assert_int_equal(
      kl_profile_value(&v, kl_profile_list_get(l, 0), "dram_throughput_pct"),
      0);
  assert_true(v == 85.5);
  assert_int_equal(
      kl_profile_value(&v, kl_profile_list_get(l, 0), "sm_busy_pct"), 0);
  assert_true(v == 20);
  assert_int_equal(kl_profile_bottleneck(kl_profile_list_get(l, 0)),
                   KL_BOTTLENECK_MEMORY);
  kl_profile_list_free(l);
  /* a bad value is located at its key */
  assert_int_equal(kl_profile_list_from_json(&l,
                                             "{\"a__b\": 1,\n  \"c__d\": "
                                             "\"many\"}",
                                             "flat.json"),
                   KL_EINVALID);
  assert_string_equal(kl_error_last()->message,
                      "flat.json:2:3: metric 'c__d' is not a number (a flat "
                      "object maps metric names to values)");
  assert_int_equal(
      kl_profile_list_from_json(&l, "{\"a__b\": 1,\n ]", "bad.json"),
      KL_EINVALID);
  assert_int_equal(kl_error_last()->line, 2);
  assert_int_equal(kl_profile_list_from_json(&l, "{}", "empty.json"),
                   KL_EINVALID);
  assert_int_equal(kl_profile_list_from_json(&l, "[1]", "arr.json"),
                   KL_EINVALID);
  assert_int_equal(kl_profile_list_from_json(&l, "{\"shapes\": []}", "r.json"),
                   KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message, "no profiles"));
  /* a kl profile --json report: one profile per shape, named */
  char *text = slurp(DIR "fixtures/h200/vector_add.json");
  assert_int_equal(kl_profile_list_from_json(&l, text, "va.json"), 0);
  assert_int_equal(kl_profile_list_count(l), 3);
  assert_string_equal(kl_profile_list_name(l, 2), "64M");
  assert_null(kl_profile_list_get(l, 3));
  kl_profile_list_free(l);
  free(text);
  /* a single profile object (the older, 15-pass recording) */
  text = slurp(KL_SOURCE_DIR "/tests/profile/fixtures/vector_add.64M.json");
  assert_int_equal(kl_profile_list_from_json(&l, text, "p.json"), 0);
  assert_int_equal(kl_profile_list_count(l), 1);
  kl_profile_list_free(l);
  free(text);
}

/* A rule file of the case (rules:) is loaded by path, checked to exist. */
static void test_case_rule_files(void **state) {
  (void)state;
  char dir[] = "/tmp/kl-case-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[600];
  snprintf(path, sizeof(path), "cp -r %s/cases/vector_add/. %s/", KL_SOURCE_DIR,
           dir);
  assert_int_equal(system(path), 0);
  snprintf(path, sizeof(path), "%s/case.yaml", dir);
  FILE *f = fopen(path, "a");
  fputs("rules: [my_rules.yaml]\n", f);
  fclose(f);
  kl_case *c;
  assert_int_equal(kl_case_load(&c, dir, NULL), KL_EINVALID);
  assert_non_null(strstr(kl_error_last()->message,
                         "rules 'my_rules.yaml' is not a file in the case "
                         "folder"));
  snprintf(path, sizeof(path), "%s/my_rules.yaml", dir);
  f = fopen(path, "w");
  fputs("- {id: mine, severity: low, when: 'ipc > 0', finding: f, "
        "action: a}\n",
        f);
  fclose(f);
  assert_int_equal(kl_case_load(&c, dir, NULL), 0);
  assert_int_equal(kl_case_rule_file_count(c), 1);
  assert_string_equal(kl_case_rule_file(c, 0), path);
  kl_rules *rs = defaults();
  assert_int_equal(kl_rules_add_file(rs, kl_case_rule_file(c, 0)), 0);
  kl_rules_free(rs);
  kl_case_free(c);
  snprintf(path, sizeof(path), "rm -rf %s", dir);
  assert_int_equal(system(path), 0);
}

/* Every allocation of loading and evaluating may fail: ENOMEM, no leak, no
 * crash (run under ASan in CI's sanitizer build). */
static void test_out_of_memory(void **state) {
  (void)state;
  char *healthy = slurp(DIR "fixtures/healthy.json");
  char *bad = slurp(DIR "bad/syntax.yaml");
  kl_profile *p = patched(healthy, NULL);
  int failures = 0;
  for (long n = 1;; n++) {
    kl__alloc_fail_after(n);
    kl_rules *rs = NULL;
    kl_diagnosis *d = NULL;
    kl_buf b = KL_BUF_INIT;
    int rc = kl_rules_create(&rs, NULL);
    if (rc == 0) rc = kl_rules_add_defaults(rs);
    if (rc == 0) {
      int r2 = kl_rules_add_string(rs, bad, "bad.yaml");
      assert_true(r2 == KL_EINVALID || r2 == KL_ENOMEM);
      rc = kl_rules_evaluate(&d, rs, p);
    }
    if (rc == 0) rc = kl_diagnosis_json(&b, d);
    if (rc == 0) rc = kl_diagnosis_skills(&b, d, rs, 5);
    long ran = kl__alloc_fail_after(0);
    kl_buf_dispose(&b);
    kl_diagnosis_free(d);
    kl_rules_free(rs);
    if (rc == 0 && ran < n)
      break; /* every allocation point has been failed once */
    assert_int_equal(rc, KL_ENOMEM);
    failures++;
  }
  assert_true(failures > 100);
  kl_profile_free(p);
  free(bad);
  free(healthy);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_language_table),
      cmocka_unit_test(test_template_table),
      cmocka_unit_test(test_defaults_fire_and_stay_silent),
      cmocka_unit_test(test_default_set),
      cmocka_unit_test(test_recorded_h200),
      cmocka_unit_test(test_bad_files_exact),
      cmocka_unit_test(test_user_rules_replace),
      cmocka_unit_test(test_fired_skills),
      cmocka_unit_test(test_bad_skills),
      cmocka_unit_test(test_metric_forms),
      cmocka_unit_test(test_case_rule_files),
      cmocka_unit_test(test_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
