/* A timed launch must do the checked launches' work (docs/integrity.md,
 * gate timed_work).
 *
 * A candidate can tell a check from a sample only by what it sees: the
 * same inputs again (a sampling loop launches one instance set many times),
 * the same addresses, the same tensor objects. One that remembers what it
 * returned and hands it back, or skips its work once it has seen the
 * inputs, launches fewer kernels while timed than while checked. So every
 * launch a check makes notes the kernels it ran (by name, from CUPTI's
 * launch callbacks: launch_guard.c), and the kernels every checked launch
 * of that plugin at that shape ran make its reference (the intersection;
 * an instance's first launch counts only until a later one is seen, since
 * it may run one-time setup kernels). Each timed launch must run every
 * kernel of the reference; one that does not is the timed code's fault.
 * Running more kernels than checked is allowed (it is only slower).
 *
 * Kept per (plugin, shape) in a small table, for the worker's life: a
 * plugin checked in one request and timed in the next is held to the
 * check it passed. */
#include <stdio.h>
#include <string.h>

#include "worker_internal.h"

#define WORK_SLOTS 64

typedef struct work_ref {
  const kl_plugin *pl;
  int shape;
  bool from_first; /* only first launches seen so far */
  klw_launch_kernels k;
} work_ref;

static work_ref refs[WORK_SLOTS];
static int nrefs, next_evict;

static work_ref *find(const kl_plugin *pl, int shape) {
  for (int i = 0; i < nrefs; i++)
    if (refs[i].pl == pl && refs[i].shape == shape) return &refs[i];
  return NULL;
}

static bool has(const klw_launch_kernels *k, uint64_t h) {
  for (int i = 0; i < k->n; i++)
    if (k->hash[i] == h) return true;
  return false;
}

void klw_work_checked(const kl_plugin *pl, int shape, bool first) {
  const klw_launch_kernels *now = klw_last_launch_kernels();
  if (!now || now->n == 0 || now->n >= KLW_LAUNCH_KERNELS)
    return; /* nothing known, or more kernels than a set holds */
  work_ref *r = find(pl, shape);
  if (!r) {
    r = nrefs < WORK_SLOTS ? &refs[nrefs++] : &refs[next_evict++ % WORK_SLOTS];
    r->pl = pl;
    r->shape = shape;
    r->from_first = first;
    r->k = *now;
    return;
  }
  if (first && !r->from_first) return; /* setup kernels say nothing */
  if (!first && r->from_first) {       /* the first real reference */
    r->from_first = false;
    r->k = *now;
    return;
  }
  int kept = 0; /* the intersection */
  for (int i = 0; i < r->k.n; i++)
    if (has(now, r->k.hash[i])) {
      r->k.hash[kept] = r->k.hash[i];
      memmove(r->k.name[kept], r->k.name[i], sizeof(r->k.name[0]));
      kept++;
    }
  r->k.n = kept;
}

bool klw_work_expected(const kl_plugin *pl, int shape) {
  const work_ref *r = find(pl, shape);
  return r && r->k.n > 0;
}

const char *klw_work_timed(const kl_plugin *pl, int shape) {
  static char why[400];
  const klw_launch_kernels *now = klw_last_launch_kernels();
  const work_ref *r = find(pl, shape);
  if (!now || !r || r->from_first || klw_gate_off("timed_work")) return NULL;
  for (int i = 0; i < r->k.n; i++) {
    if (has(now, r->k.hash[i])) continue;
    snprintf(why, sizeof(why),
             "a timed launch ran %llu kernel%s and skipped %s, which every "
             "checked launch ran: the timed call must do the checked call's "
             "work (results remembered from an earlier call, or work skipped "
             "once the inputs were seen)",
             (unsigned long long)now->total, now->total == 1 ? "" : "s",
             r->k.name[i]);
    return why;
  }
  return NULL;
}
