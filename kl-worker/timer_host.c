/* The host's timer: clock_gettime around each launch and its sync.
 *
 * A cold sample starts after reading a buffer twice the size of the last
 * level cache: reads evict without leaving dirty lines behind (a writing
 * flush would make the kernel pay for write-backs). Every placement block
 * gets fresh instances (new buffers, fresh inputs), made in alternating
 * order so neither side always allocates first; the sampler then varies
 * the set's inputs every round (sampler.c). */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MADV_POPULATE_WRITE */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "worker_internal.h"

static unsigned char *flush_buf;
static size_t flush_size;
static volatile uint64_t flush_sink;

/* The last-level cache one core sees: sysfs gives the size of the cache
 * instance (e.g. 32 MiB of one CCX); sysconf can report the whole socket's
 * (384 MiB on a VM slice of an EPYC), which would make every flush read
 * gigabytes for nothing. */
static size_t llc_bytes(void) {
  size_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; i++) {
    char path[96], text[32];
    snprintf(path, sizeof(path),
             "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    int level = fgets(text, sizeof(text), f) ? (int)strtol(text, NULL, 10) : 0;
    fclose(f);
    snprintf(path, sizeof(path),
             "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!(f = fopen(path, "r"))) continue;
    size_t size = 0;
    if (fgets(text, sizeof(text), f)) {
      char *end;
      size = strtoul(text, &end, 10);
      if (*end == 'K')
        size <<= 10;
      else if (*end == 'M')
        size <<= 20;
    }
    fclose(f);
    if (level >= best_level && size > 0) {
      best_level = level;
      best = size;
    }
  }
  if (best == 0) {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    best = l3 > 0 ? (size_t)l3 : l2 > 0 ? (size_t)l2 : (size_t)32 << 20;
  }
  return best > ((size_t)256 << 20) ? (size_t)256 << 20 : best;
}

/* The buffer is a mapping of its own whose every page is backed by memory
 * of its own (a page never written reads the one shared zero page, which
 * evicts nothing): the kernel fills the page tables in one call
 * (MADV_POPULATE_WRITE), 140 ms for 512 MiB on a Xeon VM against 230-315
 * ms for a memset that faults each 4 KiB page in turn, once per worker
 * that samples cold (bench/README.md, issue 46, part 4). Then one byte a
 * page is written (5-8 ms), so that no page stays all zeros: splitting an
 * underused huge page maps its all-zero pages back to the zero page
 * (Linux 6.12 on). A kernel without the call (before 5.14) gets the
 * memset. */
int klw_flush_host_caches(void) {
  if (!flush_buf) {
    flush_size = 2 * llc_bytes();
    if (flush_size < (8u << 20)) flush_size = 8u << 20;
    unsigned char *m = mmap(NULL, flush_size, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return -1;
    bool populated = false;
#ifdef MADV_POPULATE_WRITE
    populated = madvise(m, flush_size, MADV_POPULATE_WRITE) == 0;
#endif
    if (populated)
      for (size_t i = 0; i < flush_size; i += 4096)
        m[i] = 1;
    else
      memset(m, 1, flush_size); /* fault the pages in once */
    flush_buf = m;
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < flush_size; i += 64)
    sum += flush_buf[i];
  flush_sink += sum;
  return 0;
}

size_t klw_flush_host_bytes(void) {
  return flush_size;
}

static int host_start(klw_sampling *s) {
  if (s->tr->cold && klw_flush_host_caches() < 0) {
    snprintf(s->err, sizeof(s->err),
             "out of memory for the cache flush buffer");
    return -1;
  }
  return 0;
}

/* Each plugin warmed up in turn; the last round of each timed (flushes
 * included) sizes the blocks. */
static int host_warmup(klw_sampling *s, double *round_us) {
  int warm = s->tr->warmup > 0 ? s->tr->warmup : 1;
  *round_us = 0;
  for (int k = 0; k < s->np; k++)
    for (int i = 0; i < warm; i++) {
      s->pl[k]->restore(s->inst[k]);
      double t0 = klw_now_us();
      if (s->tr->cold) klw_flush_host_caches();
      s->pl[k]->launch(s->inst[k]);
      s->pl[k]->sync(s->inst[k]);
      if (i == warm - 1) *round_us += klw_now_us() - t0;
    }
  return 0;
}

static int host_place(klw_sampling *s, size_t *window) {
  s->placements = 0; /* a fresh placement every block */
  *window = 1;
  return 0;
}

/* A new block: fresh instances on fresh inputs (block_seed), touched by a
 * launch before they are timed. Both sides' instances go before either is
 * made again, and the order they are made in alternates by block: made one
 * at a time, each side took back the addresses it had just freed, so one
 * placement was measured throughout and an A/A comparison of host_saxpy
 * leaned 3% toward the second side (bench/README.md, "A/A on the host").
 * The first block is made so too: the request's instances (one kept from
 * the checks, one new) were not alike either (+7% on the first side). */
static void **host_set(klw_sampling *s, size_t round) {
  size_t br = s->block_rounds;
  if (round % br == 0) {
    uint64_t seed = klw_block_seed(s->tr->seed, round / br);
    for (int k = 0; k < s->np; k++) {
      klw_destroy(s->pl[k], s->inst[k]);
      s->inst[k] = NULL;
    }
    for (int j = 0; j < s->np; j++) {
      int k = (round / br) % 2 && s->np == 2 ? 1 - j : j;
      if (s->pl[k]->create(&s->inst[k], s->tr->shape) ||
          s->pl[k]->prepare(s->inst[k], seed, 0)) {
        snprintf(s->err, sizeof(s->err), "create: %s",
                 s->pl[k]->last_error(s->inst[k]));
        return NULL;
      }
      s->pl[k]->restore(s->inst[k]);
      /* touch the new pages before timing */
      if (s->pl[k]->launch(s->inst[k]) || s->pl[k]->sync(s->inst[k])) {
        snprintf(s->err, sizeof(s->err), "launch: %s",
                 s->pl[k]->last_error(s->inst[k]));
        klw_blame_launch(s, k);
        return NULL;
      }
    }
  }
  return s->inst;
}

static int host_mark(klw_sampling *s, int k, void *inst) {
  s->pl[k]->restore(inst);
  if (s->tr->cold) klw_flush_host_caches();
  return 0;
}

static int host_launch(klw_sampling *s, int k, void *inst, size_t index) {
  double t0 = klw_now_us();
  if (s->pl[k]->launch(inst) || s->pl[k]->sync(inst)) {
    snprintf(s->err, sizeof(s->err), "launch: %s", s->pl[k]->last_error(inst));
    klw_blame_launch(s, k);
    return -1;
  }
  s->us[k][index] = klw_now_us() - t0;
  return 0;
}

static int host_collect(klw_sampling *s) {
  (void)s;
  return 0;
}

static void host_last(klw_sampling *s, void **inst, size_t *block) {
  *inst = s->inst[s->np - 1];
  *block = s->n > s->block_rounds ? (s->n - 1) / s->block_rounds : 0;
}

static void host_reply(klw_sampling *s, json_object *o) {
  json_object_object_add(
      o, "flush_bytes",
      json_object_new_double(s->tr->cold ? (double)klw_flush_host_bytes() : 0));
}

static void host_stop(klw_sampling *s) {
  (void)s;
}

const klw_timer klw_timer_host = {
    "clock_gettime", host_start, host_warmup, host_place,   NULL,
    host_set,        host_mark,  host_launch, host_collect, host_last,
    host_reply,      host_stop,  NULL};
