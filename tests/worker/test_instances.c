/* kl-worker/instances.c on a plugin made here: the pool gives back what it
 * was given, only to the same plugin and shape, within its bounds, and
 * lets it go on release and when creating fails; kept outputs are served
 * while unchanged and dropped, with `changed` set, once a byte of them
 * moved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../kl-worker/worker_internal.h"

static int created, destroyed, fail_creates;

typedef struct fake_inst {
  int shape;
} fake_inst;

static int fake_create(void **inst, int32_t shape) {
  if (fail_creates > 0) {
    fail_creates--;
    return 1;
  }
  fake_inst *f = malloc(sizeof(*f));
  if (!f) return 1;
  f->shape = shape;
  *inst = f;
  created++;
  return 0;
}

static void fake_destroy(void *inst) {
  free(inst);
  destroyed++;
}

static uint64_t fake_bytes(void *inst, int32_t p) {
  (void)inst;
  return p == 1 ? 64 : 32;
}

static const int32_t roles[2] = {KL_PLUGIN_ROLE_INPUT, KL_PLUGIN_ROLE_OUTPUT};

static kl_plugin fake(void) {
  kl_plugin pl;
  memset(&pl, 0, sizeof(pl));
  pl.struct_size = sizeof(pl);
  pl.nparams = 2;
  pl.param_roles = roles;
  pl.create = fake_create;
  pl.destroy = fake_destroy;
  pl.buffer_bytes = fake_bytes;
  return pl;
}

static void test_instances__pool(void **state) {
  (void)state;
  kl_plugin a = fake(), b = fake();
  created = destroyed = 0;
  void *x, *y, *z;
  assert_int_equal(klw_instance_take(&a, 0, true, &x, NULL), 0);
  klw_instance_give(&a, 0, x, true);
  assert_int_equal(destroyed, 0);
  /* another shape, another plugin: made anew */
  assert_int_equal(klw_instance_take(&a, 1, true, &y, NULL), 0);
  assert_int_equal(klw_instance_take(&b, 0, true, &z, NULL), 0);
  assert_ptr_not_equal(y, x);
  assert_ptr_not_equal(z, x);
  assert_int_equal(created, 3);
  /* the same plugin and shape: the one given back, not made */
  void *again;
  bool made = true;
  assert_int_equal(klw_instance_take(&a, 0, true, &again, &made), 0);
  assert_ptr_equal(again, x);
  assert_false(made);
  assert_int_equal(created, 3);
  /* not pooled: destroyed at once, and never taken from the pool */
  klw_instance_give(&a, 0, again, false);
  assert_int_equal(destroyed, 1);
  klw_instance_give(&a, 1, y, true);
  void *fresh;
  assert_int_equal(klw_instance_take(&a, 1, false, &fresh, &made), 0);
  assert_ptr_not_equal(fresh, y);
  assert_true(made);
  klw_instance_give(&a, 1, fresh, false);
  klw_instance_give(&b, 0, z, true);
  /* release destroys what the pool holds */
  assert_int_equal(klw_instances_release(), 2);
  assert_int_equal(destroyed, 4);
  assert_int_equal(klw_instances_release(), 0);
  /* the pool's bound: past 16, instances are destroyed when given back */
  void *many[20];
  for (int i = 0; i < 20; i++)
    assert_int_equal(klw_instance_take(&a, 2, false, &many[i], NULL), 0);
  for (int i = 0; i < 20; i++)
    klw_instance_give(&a, 2, many[i], true);
  assert_int_equal(destroyed, 4 + 4);
  assert_int_equal(klw_instances_release(), 16);
}

static void test_instances__create_fails_once(void **state) {
  (void)state;
  kl_plugin a = fake();
  created = destroyed = 0;
  void *x, *y;
  assert_int_equal(klw_instance_take(&a, 0, true, &x, NULL), 0);
  klw_instance_give(&a, 0, x, true);
  /* the first try fails: what the pool held goes, and the second try
   * makes one */
  fail_creates = 1;
  assert_int_equal(klw_instance_take(&a, 1, true, &y, NULL), 0);
  assert_int_equal(destroyed, 1);
  assert_int_equal(klw_instances_release(), 0);
  klw_instance_give(&a, 1, y, false);
  /* with nothing held, a failure is the caller's */
  fail_creates = 1;
  assert_int_equal(klw_instance_take(&a, 1, true, &y, NULL), 1);
  assert_null(y);
  fail_creates = 0;
}

static void test_instances__kept_host_outputs(void **state) {
  (void)state;
  void *host[2] = {NULL, malloc(64)};
  uint64_t bytes[2] = {0, 64};
  assert_non_null(host[1]);
  memset(host[1], 0x3c, 64);
  unsigned char *out = host[1];
  const klw_kept *k = klw_kept_host(7, 0, 42, 2, host, bytes);
  assert_non_null(k);
  assert_false(klw_kept_on_device(k));
  assert_ptr_equal(klw_kept_output(k, 1), out);
  assert_null(klw_kept_output(k, 0));
  bool changed = true;
  /* found by key, shape and seed only */
  assert_ptr_equal(klw_kept_find(7, 0, 42, false, &changed), k);
  assert_false(changed);
  assert_null(klw_kept_find(8, 0, 42, false, &changed));
  assert_null(klw_kept_find(7, 1, 42, false, &changed));
  assert_null(klw_kept_find(7, 0, 43, false, &changed));
  assert_false(changed);
  /* one byte moved: not served, and gone */
  out[63] ^= 1;
  assert_null(klw_kept_find(7, 0, 42, false, &changed));
  assert_true(changed);
  assert_null(klw_kept_find(7, 0, 42, false, &changed));
  assert_false(changed);
  /* kept the host way, asked for the device way: made anew */
  void *again[2] = {NULL, calloc(1, 64)};
  assert_non_null(klw_kept_host(7, 0, 44, 2, again, bytes));
  assert_null(klw_kept_find(7, 0, 44, true, &changed));
  assert_false(changed);
  assert_null(klw_kept_find(7, 0, 44, false, &changed));
}

static void test_instances__kept_within_budget(void **state) {
  (void)state;
  /* past 2 GiB nothing is kept (and the caller keeps its buffers) */
  void *host[2] = {NULL, malloc(8)};
  uint64_t bytes[2] = {0, (3ull << 30)};
  assert_null(klw_kept_host(9, 0, 1, 2, host, bytes));
  free(host[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_instances__pool),
      cmocka_unit_test(test_instances__create_fails_once),
      cmocka_unit_test(test_instances__kept_host_outputs),
      cmocka_unit_test(test_instances__kept_within_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
