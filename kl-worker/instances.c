/* Instances that outlive a request, and the oracle's outputs kept for a
 * run.
 *
 * The pool: a request that says "pool":1 takes its instances from here
 * (an idle one of the same plugin and shape) and gives them back when it
 * ends, so the instance a shape's check made is the one its profile and
 * its timing use, and the oracle's is the one the stale-outputs gate
 * uses; nothing is allocated twice in one evaluation. {"op":"release"}
 * (the client sends it when an evaluation ends) destroys them: a placement
 * seen by one evaluation is not carried into the next, so that two
 * evaluations' timings do not share where their buffers lie.
 *
 * The kept outputs: a check that says "keep_oracle":K keeps the oracle's
 * outputs of each (shape, seed) under K, and a later check of any
 * candidate on the same seeds compares with them instead of running the
 * oracle again (a run checks every candidate on its own seeds). They stay
 * for the worker's life, within a byte budget (least recently used go
 * first). A candidate runs in this process, so before each use they are
 * proved unchanged: on the device against a snapshot the plugin made when
 * they were computed (changed_bytes), on the host by a hash; changed
 * outputs are dropped and computed again, and the worker's log says so.
 *
 * When creating an instance fails while the pool or the kept outputs hold
 * some, they are let go and creating is tried once more: what is kept is
 * an economy, never a reason for a request to fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_internal.h"

#define POOL_MAX 16
#define POOL_BYTES (4ull << 30)
#define KEPT_BYTES (2ull << 30)

typedef struct pooled {
  const kl_plugin *pl;
  int shape;
  void *inst;
  uint64_t bytes;
} pooled;

static pooled pool[POOL_MAX];
static size_t npool;
static uint64_t pool_bytes;

struct klw_kept {
  int key, shape;
  uint64_t seed;
  const kl_plugin *orc; /* device: the instance holding them */
  void *oinst;
  void **host; /* host: copies, and their hashes */
  uint64_t *hash;
  int nparams;
  uint64_t bytes, used;
};
typedef struct klw_kept kept;

static kept *kept_list;
static size_t nkept, capkept;
static uint64_t kept_bytes, use_clock;

static uint64_t instance_bytes(const kl_plugin *pl, void *inst) {
  uint64_t b = 0;
  for (int p = 0; p < pl->nparams; p++)
    b += pl->buffer_bytes(inst, p);
  return b;
}

static void kept_drop(size_t i) {
  kept *e = &kept_list[i];
  if (e->oinst) klw_destroy(e->orc, e->oinst);
  for (int p = 0; e->host && p < e->nparams; p++)
    free(e->host[p]);
  free(e->host);
  free(e->hash);
  kept_bytes -= e->bytes;
  kept_list[i] = kept_list[--nkept];
}

size_t klw_instances_release(void) {
  size_t n = npool;
  while (npool) {
    pooled *e = &pool[--npool];
    klw_destroy(e->pl, e->inst);
  }
  pool_bytes = 0;
  return n;
}

int klw_instance_take(const kl_plugin *pl, int shape, bool use_pool,
                      void **inst, bool *made) {
  *inst = NULL;
  if (made) *made = false;
  for (size_t i = npool; use_pool && i-- > 0;)
    if (pool[i].pl == pl && pool[i].shape == shape) {
      *inst = pool[i].inst;
      pool_bytes -= pool[i].bytes;
      pool[i] = pool[--npool];
      return 0;
    }
  if (made) *made = true;
  int rc = pl->create(inst, shape);
  if (rc && (npool || nkept)) {
    /* memory held for later may be what this one lacks */
    klw_instances_release();
    while (nkept)
      kept_drop(nkept - 1);
    *inst = NULL;
    rc = pl->create(inst, shape);
  }
  return rc;
}

void klw_instance_give(const kl_plugin *pl, int shape, void *inst,
                       bool use_pool) {
  if (!inst) return;
  uint64_t bytes = use_pool ? instance_bytes(pl, inst) : 0;
  if (!use_pool || npool == POOL_MAX || pool_bytes + bytes > POOL_BYTES) {
    klw_destroy(pl, inst);
    return;
  }
  pool[npool++] = (pooled){pl, shape, inst, bytes};
  pool_bytes += bytes;
}

void klw_op_release(json_object *req) {
  (void)req;
  size_t n = klw_instances_release();
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  json_object_object_add(o, "released", json_object_new_int64((int64_t)n));
  klw_reply(o);
}

/* ---- the kept outputs ------------------------------------------------------
 */

/* FNV-1a over 64-bit words (the tail bytewise): a corruption detector, not
 * a cryptographic hash; about 1 ns a word. */
static uint64_t hash_bytes(const void *data, uint64_t n) {
  const unsigned char *b = data;
  uint64_t h = 0xcbf29ce484222325ull, w;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* Whether e's outputs are as they were made. */
static bool kept_intact(const kept *e) {
  for (int p = 0; p < e->nparams; p++) {
    if (e->oinst) {
      uint64_t n = 0;
      if (klw_is_checked(e->orc, p) &&
          (e->orc->changed_bytes(e->oinst, p, &n) || n))
        return false;
    } else if (e->host[p] &&
               hash_bytes(e->host[p], e->hash[p + e->nparams]) != e->hash[p]) {
      return false;
    }
  }
  return true;
}

const void *klw_kept_output(const klw_kept *k, int p) {
  const kept *e = k;
  if (p < 0 || p >= e->nparams) return NULL;
  return e->oinst ? e->orc->device_buffer(e->oinst, p) : e->host[p];
}

bool klw_kept_on_device(const klw_kept *k) {
  return k->oinst != NULL;
}

const klw_kept *klw_kept_find(int key, int shape, uint64_t seed, bool device,
                              bool *changed) {
  *changed = false;
  for (size_t i = 0; i < nkept; i++) {
    kept *e = &kept_list[i];
    if (e->key != key || e->shape != shape || e->seed != seed) continue;
    if ((e->oinst != NULL) != device) { /* kept the other way: make anew */
      kept_drop(i);
      return NULL;
    }
    if (!kept_intact(e)) {
      *changed = true;
      fprintf(stderr,
              "kl-worker: the oracle's kept outputs for shape %d, seed %llu "
              "changed since they were made (a write outside some "
              "candidate's buffers?); computing them again\n",
              shape, (unsigned long long)seed);
      kept_drop(i);
      return NULL;
    }
    e->used = ++use_clock;
    return e;
  }
  return NULL;
}

/* Room for `bytes` more, the least recently used dropped first. */
static bool make_room(uint64_t bytes) {
  if (bytes > KEPT_BYTES) return false;
  while (kept_bytes + bytes > KEPT_BYTES && nkept) {
    size_t oldest = 0;
    for (size_t i = 1; i < nkept; i++)
      if (kept_list[i].used < kept_list[oldest].used) oldest = i;
    kept_drop(oldest);
  }
  return true;
}

static kept *kept_new(int key, int shape, uint64_t seed, int nparams,
                      uint64_t bytes) {
  if (!make_room(bytes)) return NULL;
  if (nkept == capkept) {
    size_t cap = capkept ? capkept * 2 : 16;
    kept *more = realloc(kept_list, cap * sizeof(*more));
    if (!more) return NULL;
    kept_list = more;
    capkept = cap;
  }
  kept *e = &kept_list[nkept];
  memset(e, 0, sizeof(*e));
  e->key = key;
  e->shape = shape;
  e->seed = seed;
  e->nparams = nparams;
  e->bytes = bytes;
  e->used = ++use_clock;
  return e;
}

const klw_kept *klw_kept_device(int key, int shape, uint64_t seed,
                                const kl_plugin *orc, void *oinst) {
  uint64_t bytes = instance_bytes(orc, oinst);
  for (int p = 0; p < orc->nparams; p++)
    if (klw_is_checked(orc, p)) bytes += orc->buffer_bytes(oinst, p);
  kept *e = kept_new(key, shape, seed, orc->nparams, bytes);
  if (!e) return NULL;
  for (int p = 0; p < orc->nparams; p++)
    if (klw_is_checked(orc, p) && orc->snapshot(oinst, p)) return NULL;
  e->orc = orc;
  e->oinst = oinst;
  nkept++;
  kept_bytes += bytes;
  return e;
}

const klw_kept *klw_kept_host(int key, int shape, uint64_t seed, int nparams,
                              void *const *host, const uint64_t *bytes) {
  uint64_t total = 0;
  for (int p = 0; p < nparams; p++)
    total += host[p] ? bytes[p] : 0;
  kept *e = kept_new(key, shape, seed, nparams, total);
  if (!e) return NULL;
  /* hash[p]: the hash, hash[nparams + p]: the length */
  e->host = calloc((size_t)nparams, sizeof(void *));
  e->hash = calloc(2 * (size_t)nparams, sizeof(uint64_t));
  if (!e->host || !e->hash) {
    free(e->host);
    free(e->hash);
    return NULL;
  }
  for (int p = 0; p < nparams; p++) {
    if (!host[p]) continue;
    e->host[p] = host[p];
    e->hash[p] = hash_bytes(host[p], bytes[p]);
    e->hash[nparams + p] = bytes[p];
  }
  nkept++;
  kept_bytes += total;
  return e;
}
