/* The device's timer: CUPTI activity records.
 *
 * Device samples without a host round trip per sample: each round queues
 * new values in a few places of every plugin's inputs (the sampler's vary,
 * where the request varies them: klh_restore_vary, left out of the samples
 * as the restores are), then per plugin [restore][flush + marker][kernel
 * ...] (cold; a plugin without flush_mark: [restore][flush][marker]) or
 * [restore][marker][kernel ...] (hot) on one shared stream; blocks rotate
 * through a pool of instance sets (the placements: up to six fresh sets beside
 * the request's own, each made, prepared once and warmed up before the first
 * window that uses it, so nothing is allocated or copied while a window runs);
 * the device is synchronised once per window of about 128 rounds, and the
 * kernel records are cut into samples at the markers in launch (correlation)
 * order. A sample's time is the span from its first kernel's start to its last
 * kernel's end, on any stream: work a candidate hides on another stream is
 * counted, and so are the copies and memsets a launch queues. The SM clock is
 * measured before every cold sample (over the flush, or by a probe kernel), and
 * before one round in eight when hot. The reply's device_timeline says where
 * the device's time went: busy by role, idle by what ended the gap.
 *
 * The records are CUPTI's KERNEL kind, which serialises kernels but leaves
 * their code alone, unless the warm-up's last round saw the baseline's
 * launch run work on two streams or a launch KERNEL records cannot time (a
 * chain of kernels in a graph): then, for that request, CONCURRENT_KERNEL
 * records, which let the streams overlap but instrument every kernel (a
 * many-block kernel that reads memory runs measurably slower under them).
 * A candidate's own two streams are serialised instead (dev_warmup says
 * why). Both sides of a comparison are one request, so they are always
 * timed alike; the reply names the kind ("tracing"). On KERNEL records a
 * request that brings the probe kernel's true duration (the parent's
 * calibration of this device) has every sample less the records' fixed
 * part, measured in the request (dev_calibrate; the reply's
 * "calibration").
 *
 * With "launch":"graph" each instance's launch is captured once in a CUDA
 * graph (graph_launch.c), after its first launch (never judged) and before
 * any sample: in the warm-up for the request's own set, in dev_ready for
 * the others; every timed launch then replays it, so what is timed has no
 * host launch overhead in it, as under a program's graphs. The capture is
 * the launch the gates judge (launch contract, timed_work): a replay runs
 * no launch callbacks and queues exactly what was captured. */
#ifdef KL_HAVE_CUPTI
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_timer.h"
#include "kernlab/stats.h"
#include "worker_internal.h"

typedef struct dev_sample_ref {
  int plugin;
  size_t index; /* sample index within the plugin */
} dev_sample_ref;

/* What a record was for, on the device's timeline. */
enum { ROLE_WORK, ROLE_FLUSH, ROLE_PROBE, ROLE_RESTORE, ROLES };
static const char *const role_names[ROLES] = {"work", "flush", "probe",
                                              "restore"};

typedef struct dev_state {
  void **pool; /* npool sets of np instances; set 0 is inst[] */
  size_t npool;
  size_t base, ntimed; /* the sets timed: base .. base + ntimed - 1 */
  size_t window, throttle_probe;
  dev_sample_ref *refs;
  size_t nrefs;
  size_t flush_count; /* flushes sampled, for the mean in the reply */
  /* the device's timeline while sampling, summed over windows (us): from
   * a window's first record to its last, the records' durations by role,
   * the device's idle time by the role of what ended it, and the samples'
   * spans */
  double span_us, busy_us[ROLES], idle_us[ROLES], timed_us;
  size_t windows;
  /* graph mode: each instance's captured launch (at most a pool's) */
  struct {
    void *inst;
    klw_graph *graph;
  } graphs[2 * 7 + 2];
  size_t ngraphs;
  int trace;       /* KLW_TRACE_*: the kernel records' kind while sampling */
  bool serialised; /* the candidate's two streams timed on KERNEL records */
  /* the calibration (dev_calibrate): subtracted from every sample */
  double offset_us, probe_records_us;
} dev_state;

static int cmp_correlation(const void *a, const void *b) {
  const klw_kernel *x = a, *y = b;
  if (x->correlation != y->correlation)
    return x->correlation < y->correlation ? -1 : 1;
  return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_start(const void *a, const void *b) {
  const klw_kernel *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* A copy or memset is work when a launch queued it; otherwise it is the
 * harness's (a restore between samples). */
static bool copy_in_launch(const klw_kernel *r) {
  return klw_copy_in_launch(r->correlation) ||
         (r->runtime_correlation && klw_copy_in_launch(r->runtime_correlation));
}

static int role(const klw_kernel *r) {
  switch (r->kind) {
  case KLW_FLUSH:
  case KLW_FLUSH_MARK:
    return ROLE_FLUSH;
  case KLW_PROBE:
    return ROLE_PROBE;
  case KLW_RESTORE:
    return ROLE_RESTORE;
  case KLW_COPY:
    return copy_in_launch(r) ? ROLE_WORK : ROLE_RESTORE;
  default:
    return ROLE_WORK;
  }
}

/* A window's timeline: its span, the records' time by role, and the idle
 * gaps (from the latest end so far to the next start, records in start
 * order) by the role of the record that ended them. */
static void timeline(dev_state *d, const klw_kernel *k, size_t nk) {
  klw_kernel *c = malloc(nk * sizeof(*c));
  if (!c) return;
  memcpy(c, k, nk * sizeof(*c));
  qsort(c, nk, sizeof(*c), cmp_start);
  uint64_t first = 0, reach = 0;
  for (size_t i = 0; i < nk; i++) {
    if (c[i].end <= c[i].start) continue;
    int r = role(&c[i]);
    d->busy_us[r] += (double)(c[i].end - c[i].start) / 1000.0;
    if (r == ROLE_FLUSH) d->flush_count++;
    if (!reach)
      first = c[i].start;
    else if (c[i].start > reach)
      d->idle_us[r] += (double)(c[i].start - reach) / 1000.0;
    if (c[i].end > reach) reach = c[i].end;
  }
  if (reach > first) {
    d->span_us += (double)(reach - first) / 1000.0;
    d->windows++;
  }
  free(c);
}

/* Cut this window's records into samples; 0 or -1 with a message. */
static int attribute(dev_state *d, klw_kernel *k, size_t nk,
                     const dev_sample_ref *refs, size_t nrefs, double **us,
                     int *culprit, char *err, size_t errlen) {
  timeline(d, k, nk);
  /* the harness's restores are dropped, a launch's copies are work, a
   * flush that marks is a marker */
  size_t kept = 0;
  for (size_t i = 0; i < nk; i++) {
    int r = role(&k[i]);
    if (r == ROLE_RESTORE || k[i].kind == KLW_FLUSH) continue;
    if (r == ROLE_WORK) k[i].kind = KLW_WORK;
    if (k[i].kind == KLW_FLUSH_MARK) k[i].kind = KLW_PROBE;
    k[kept++] = k[i];
  }
  nk = kept;
  klw_copies_forget();
  bool by_corr = true;
  for (size_t i = 0; i < nk; i++)
    if (k[i].correlation == 0) by_corr = false;
  if (by_corr) qsort(k, nk, sizeof(*k), cmp_correlation);
  size_t s = 0;
  long cur = -1;
  uint64_t lo = 0, hi = 0;
  for (size_t i = 0; i <= nk; i++) {
    bool end = i == nk;
    if (end || k[i].kind == KLW_PROBE) {
      if (cur >= 0) {
        if (hi <= lo) {
          /* checked launches ran kernels; this timed one ran none */
          snprintf(err, errlen,
                   "sample %ld launched no kernel while timed (its checked "
                   "launches did work): the timed call must do the checked "
                   "call's work",
                   cur);
          *culprit = refs[cur].plugin;
          return -2;
        }
        /* less the records' fixed part (dev_calibrate); a span is never
         * shorter than it on a device the calibration holds for, and a
         * sample is kept positive whatever the device does */
        double span = (double)(hi - lo) / 1000.0, v = span - d->offset_us;
        us[refs[cur].plugin][refs[cur].index] = v > 0.001 ? v : 0.001;
        d->timed_us += span;
      }
      if (end) break;
      if (s >= nrefs) {
        snprintf(err, errlen, "more sample markers (%zu) than samples (%zu)",
                 s + 1, nrefs);
        return -1;
      }
      cur = (long)s++;
      lo = UINT64_MAX;
      hi = 0;
    } else if (k[i].kind == KLW_WORK && cur >= 0) {
      if (k[i].start == 0 && k[i].end == 0) {
        snprintf(err, errlen, "a kernel record has no timestamps");
        return -1;
      }
      if (k[i].start < lo) lo = k[i].start;
      if (k[i].end > hi) hi = k[i].end;
    }
  }
  if (s != nrefs) {
    snprintf(err, errlen, "found %zu sample markers for %zu samples%s", s,
             nrefs, by_corr ? "" : " (records without correlation ids)");
    return -1;
  }
  return 0;
}

/* A timed launch that skipped a kernel its checked launches ran. */
static int short_of_checked(klw_sampling *s, int k) {
  const char *why = klw_work_timed(s->pl[k], s->tr->shape);
  if (!why) return 0;
  snprintf(s->err, sizeof(s->err), "%s", why);
  s->gate = "timed_work";
  s->culprit = k;
  return -1;
}

static klw_graph *graph_of(const dev_state *d, const void *inst) {
  for (size_t i = 0; i < d->ngraphs; i++)
    if (d->graphs[i].inst == inst) return d->graphs[i].graph;
  return NULL;
}

/* A timed launch of plugin k's instance: the plugin's own launch, or in
 * graph mode the instance's graph replayed, captured first if it has none
 * (the capture is then the launch the timed_work gate judges). A failure
 * says `what` failed ("launch", "warm-up"). */
static int timed_launch(klw_sampling *s, int k, void *inst, const char *what) {
  dev_state *d = s->state;
  if (!s->tr->graph) {
    if (klw_launch(s->pl[k], inst)) {
      snprintf(s->err, sizeof(s->err), "%s: %s", what,
               klw_launch_error(s->pl[k], inst));
      klw_blame_launch(s, k);
      return -1;
    }
    return short_of_checked(s, k);
  }
  char why[sizeof(s->err) - 32]; /* room for `what` */
  klw_graph *g = graph_of(d, inst);
  if (!g) {
    if (d->ngraphs == sizeof(d->graphs) / sizeof(d->graphs[0])) {
      snprintf(s->err, sizeof(s->err), "%s: more instances than graphs", what);
      return -1;
    }
    int rc = klw_graph_capture(s->pl[k], inst, &g, why, sizeof(why));
    if (rc) {
      snprintf(s->err, sizeof(s->err), "%s: %s", what, why);
      if (rc == KLW_GRAPH_ENV) return -1; /* the driver's, not the launch's */
      /* a capture that skipped checked work is the timed_work gate's */
      if (!strstr(why, "the launch called") && short_of_checked(s, k))
        return -1;
      klw_blame_launch(s, k);
      if (!s->gate) { /* not the contract: a launch graphs cannot hold */
        s->gate = "graph_launch";
        s->culprit = k;
      }
      return -1;
    }
    d->graphs[d->ngraphs].inst = inst;
    d->graphs[d->ngraphs++].graph = g;
    if (short_of_checked(s, k)) return -1;
  }
  if (klw_graph_replay(g, s->pl[0]->stream(s->inst[0]), why, sizeof(why))) {
    snprintf(s->err, sizeof(s->err), "%s: %s", what, why);
    return -1;
  }
  return 0;
}

static int share_stream(const kl_plugin **pl, void **inst, int np) {
  for (int k = 1; k < np; k++)
    if (pl[k]->set_stream(inst[k], pl[0]->stream(inst[0]))) return k;
  return 0;
}

/* Drop the kernel records so far. */
static void drop_records(void) {
  klw_kernel *recs = NULL;
  size_t nrecs = 0, dropped = 0;
  klw_cupti_take(&recs, &nrecs, &dropped);
  free(recs);
}

/* Discard what the warm-up and the placement sets left: clock readings
 * and kernel records. */
static void discard(klw_sampling *s) {
  /* read into a buffer of their own: the samples' readings so far stay */
  double junk[4096];
  for (int k = 0; k < s->np; k++) {
    uint64_t got;
    if (k == 0 || s->pl[k] != s->pl[0])
      s->pl[k]->clock_read(s->inst[k], junk, sizeof(junk) / sizeof(junk[0]),
                           &got);
  }
  drop_records();
  klw_copies_forget();
}

static int dev_start(klw_sampling *s) {
  dev_state *d = calloc(1, sizeof(*d));
  s->state = d;
  if (!d) {
    snprintf(s->err, sizeof(s->err), "out of memory");
    return -1;
  }
  if (klw_cupti_start(s->err, sizeof(s->err)) < 0) return -1;
  /* every request starts on KERNEL records (dev_warmup may switch) */
  if ((d->trace = klw_cupti_trace(KLW_TRACE_KERNEL, s->err, sizeof(s->err))) <
      0)
    return -1;
  for (int k = 0; s->tr->graph && k < s->np; k++)
    if (strcmp(s->pl[k]->backend, "cuda") != 0) {
      snprintf(s->err, sizeof(s->err),
               "--launch graph times CUDA-C plugins; a %s plugin's launch is "
               "not captured (use --launch stream)",
               s->pl[k]->backend);
      return -1;
    }
  int bad = share_stream(s->pl, s->inst, s->np);
  if (bad) {
    snprintf(s->err, sizeof(s->err), "set_stream: %s",
             s->pl[bad]->last_error(s->inst[bad]));
    return -1;
  }
  return 0;
}

/* What comes before a sample: the restore, then in cold mode the flush,
 * and the marker (measuring the SM clock when spin_ns > 0). A cold sample's
 * flush is its marker where the plugin can (flush_mark: one launch, the
 * clock measured over the flush), a launch fewer. */
static int prelude(klw_sampling *s, int k, void *inst, int spin_ns) {
  const kl_plugin *pl = s->pl[k];
  int (*flush_mark)(void *) = KLW_ENTRY(pl, flush_mark);
  if (pl->restore(inst)) return -1;
  if (s->tr->cold && flush_mark) return flush_mark(inst) ? -1 : 0;
  if (s->tr->cold && pl->flush(inst)) return -1;
  return pl->clock_mark(inst, spin_ns) ? -1 : 0;
}

/* Warm-up rounds first..first+n-1 (round 0 in graph mode: each
 * instance's first launch); the last, timed on the host, sizes the
 * placement blocks. */
static int warm_rounds(klw_sampling *s, int first, int n, double *round_us) {
  for (int i = first; i < first + n; i++) {
    double t0 = klw_now_us();
    for (int k = 0; k < s->np; k++) {
      if (prelude(s, k, s->inst[k], 2000)) {
        snprintf(s->err, sizeof(s->err), "warm-up: %s",
                 s->pl[k]->last_error(s->inst[k]));
        return -1;
      }
      /* graph mode: the first round is each instance's first launch */
      if (s->tr->graph && i == 0) {
        if (klw_launch(s->pl[k], s->inst[k])) {
          snprintf(s->err, sizeof(s->err), "warm-up: %s",
                   klw_launch_error(s->pl[k], s->inst[k]));
          klw_blame_launch(s, k);
          return -1;
        }
        if (short_of_checked(s, k)) return -1;
      } else if (timed_launch(s, k, s->inst[k], "warm-up")) {
        return -1;
      }
    }
    if (s->pl[0]->sync(s->inst[0])) {
      snprintf(s->err, sizeof(s->err), "warm-up: %s",
               s->pl[0]->last_error(s->inst[0]));
      return -1;
    }
    *round_us = klw_now_us() - t0;
  }
  return 0;
}

/* What one round of the warm-up's launches ran, plugin by plugin: the
 * streams its work ran on (kernels, and the copies and memsets a launch
 * queued; counted up to four) and whether a work record came without
 * timestamps (KERNEL records give none to the kernels of a graph of
 * several). The records, in launch order, are cut at the markers that come
 * before each plugin's launch, as the samples are (attribute). */
typedef struct warm_usage {
  size_t streams[2];
  bool untimed[2];
} warm_usage;

static void warm_usage_of(warm_usage *u, klw_kernel *k, size_t nk, int np) {
  uint32_t seen[2][4];
  memset(u, 0, sizeof(*u));
  qsort(k, nk, sizeof(*k), cmp_correlation);
  int p = 0;
  bool first = true;
  for (size_t i = 0; i < nk; i++) {
    if (k[i].kind == KLW_FLUSH_MARK || k[i].kind == KLW_PROBE) {
      p = first ? 0 : (p + 1) % np;
      first = false;
      continue;
    }
    if (role(&k[i]) != ROLE_WORK) continue;
    if (k[i].start == 0 && k[i].end == 0) u->untimed[p] = true;
    size_t j = 0;
    while (j < u->streams[p] && seen[p][j] != k[i].stream)
      j++;
    if (j == u->streams[p] && j < 4) seen[p][u->streams[p]++] = k[i].stream;
  }
}

/* The calibration: KERNEL records take a kernel's start and end from
 * timestamps the front end writes around its launch, so each reads a
 * fixed part longer than the kernel ran (op_calibrate.c). That part
 * depends on what ran just before: on an H200 probes back to back read
 * 2.0-2.1 us each (0.7 us over their true 1.34 us), the empty case's
 * kernel after the flush 2.43 us (1.2 us over its 1.25 us), as a copy's
 * and a fill's samples do (1.0-1.2 us over ncu). So the probe is timed
 * where a sample's work is: 32 times the sample's own prelude (restore,
 * then the flush that marks, or a marker when hot), then the probe in
 * place of the launch. The median of those probes' records, less the
 * probe's true duration the request brings, is what every sample's span
 * carries beyond its kernels. Only on KERNEL records: CONCURRENT_KERNEL
 * records time from inside the kernel, and their error depends on the
 * kernel.
 * Why 32: the records are bimodal (an H200, 768 probes after a cold
 * prelude: a third at 2.1-2.2 us, the rest at 2.5-2.9 us), so a median
 * of 16 fell into the lower mode in one request in twelve, and the 5 us
 * copy's calibrated median spread 8.45-8.75 us over 8 processes where
 * its records as read spread 9.70-9.79 us. Pooling 32 of those probes
 * gave 8.46-8.59 (bench/README.md, issue 46, part 2). */
#define CALIBRATION_PROBES 32
static int dev_calibrate(klw_sampling *s) {
  dev_state *d = s->state;
  for (int i = 0; i < CALIBRATION_PROBES; i++)
    if (prelude(s, 0, s->inst[0], 0) || s->pl[0]->clock_mark(s->inst[0], 0)) {
      snprintf(s->err, sizeof(s->err), "calibration: %s",
               s->pl[0]->last_error(s->inst[0]));
      return -1;
    }
  if (s->pl[0]->sync(s->inst[0])) {
    snprintf(s->err, sizeof(s->err), "calibration: %s",
             s->pl[0]->last_error(s->inst[0]));
    return -1;
  }
  klw_kernel *recs = NULL;
  size_t nrecs = 0, dropped = 0, n = 0, kept = 0;
  klw_cupti_take(&recs, &nrecs, &dropped);
  /* the markers and the probes, in the order they ran (KERNEL records
   * serialise them): marker, probe, marker, probe, ... */
  for (size_t i = 0; i < nrecs; i++)
    if ((recs[i].kind == KLW_PROBE || recs[i].kind == KLW_FLUSH_MARK) &&
        recs[i].end > recs[i].start)
      recs[kept++] = recs[i];
  qsort(recs, kept, sizeof(*recs), cmp_start);
  double us[CALIBRATION_PROBES];
  for (size_t i = 1; i < kept && n < CALIBRATION_PROBES; i += 2)
    us[n++] = (double)(recs[i].end - recs[i].start) / 1000.0;
  free(recs);
  discard(s); /* the probes' clock readings */
  if (kept != 2 * CALIBRATION_PROBES)
    return 0; /* not what was launched: the samples stay uncalibrated */
  kl_summary sum;
  if (kl_stats_summarize(&sum, us, n)) {
    snprintf(s->err, sizeof(s->err), "calibration: out of memory");
    return -1;
  }
  d->probe_records_us = sum.median;
  /* Subtracted from both sides, a larger offset reads a faster
   * candidate's gain larger: one far beyond the front end's part (an
   * H200's records read the probe 1.8 times its true duration after the
   * flush) is not taken, whatever made the probes slow */
  double off = d->probe_records_us - s->tr->probe_true_us;
  d->offset_us = off > 0 && off <= 3 * s->tr->probe_true_us ? off : 0;
  return 0;
}

/* Warm up round by round, on KERNEL records, and choose the samples'
 * records from what the last round's launches ran: CONCURRENT_KERNEL
 * records, which instrument every kernel, when KERNEL records cannot time
 * a launch (a chain of kernels in a graph) or when the baseline (a bench's
 * only kernel) ran work on two streams, which KERNEL records would
 * serialise. A candidate's two streams alone do not switch: a candidate
 * could fork a trivial kernel only to have the baseline's many blocks
 * instrumented (they cost it more than a candidate's few), so its streams
 * are serialised instead ("serialised"), which errs against it. After a
 * switch the warm-up runs once more under the new records.
 * In graph mode the first round launches as the plugin does, the second
 * captures each instance's graph and replays it, and the later ones (one
 * at least) replay them. */
static int dev_warmup(klw_sampling *s, double *round_us) {
  dev_state *d = s->state;
  int warm = s->tr->warmup > 0 ? s->tr->warmup : 1;
  if (s->tr->graph && warm < 3)
    warm = 3; /* the last round, which sizes the
                blocks, a replay's only */
  /* the records from before (the shape's checks) and those of the rounds
   * before the last (an instance's first launch may set up on streams of
   * its own) are not what the samples will run */
  drop_records();
  if (warm > 1 && warm_rounds(s, 0, warm - 1, round_us)) return -1;
  drop_records();
  if (warm_rounds(s, warm - 1, 1, round_us)) return -1;
  klw_kernel *recs = NULL;
  size_t nrecs = 0, dropped = 0;
  klw_cupti_take(&recs, &nrecs, &dropped);
  warm_usage u;
  warm_usage_of(&u, recs, nrecs, s->np);
  free(recs);
  discard(s);
  bool untimed = u.untimed[0] || (s->np > 1 && u.untimed[1]);
  if (d->trace != KLW_TRACE_KERNEL) return 0; /* pinned to concurrent */
  if (untimed && klw_cupti_trace_pinned()) {
    snprintf(s->err, sizeof(s->err),
             "KERNLAB_TRACE=kernel: KERNEL records carry no times for the "
             "kernels of this graph; unset it to time this launch");
    return -1;
  }
  if ((untimed || u.streams[0] >= 2) && !klw_cupti_trace_pinned()) {
    if ((d->trace =
             klw_cupti_trace(KLW_TRACE_CONCURRENT, s->err, sizeof(s->err))) < 0)
      return -1;
    if (warm_rounds(s, warm, 1, round_us)) return -1;
    discard(s);
  } else if (s->np > 1 && u.streams[1] >= 2) {
    d->serialised = true;
  }
  if (d->trace == KLW_TRACE_KERNEL && s->tr->probe_true_us > 0)
    return dev_calibrate(s);
  return 0;
}

/* The pool: the request's own set (set 0: made, checked and warmed up
 * in the checks' order) and up to six fresh sets, as memory allows (8 GiB
 * of buffers at most), made as the rounds reach them (dev_ready): a
 * measurement whose blocks are few (long blocks, a short time cap) makes
 * only those it uses. Where four sets fit, only the fresh ones are timed
 * (set 0 only warms up): set 0's block read about 1% toward the baseline
 * in A/A comparisons of a 64M vector_add on an H200 (0.989 over 16 runs,
 * the fresh sets 0.999-1.003: bench/README.md, "the A/A bias"), where its
 * instances came from the worker's pool in the checks' order. Fewer than
 * four, and set 0 is timed too: a comparison's interval counts placements
 * once there are three (kl_stats_speedup_blocked), and fewer would leave
 * it counting samples. A window holds whole blocks, about 128 rounds. */
static int dev_place(klw_sampling *s, size_t *window) {
  dev_state *d = s->state;
  size_t br = s->block_rounds;
  d->window = br * (128 / br > 1 ? 128 / br : 1);
  *window = d->window;
  if (!(d->refs = calloc((size_t)s->np * (d->window + 1), sizeof(*d->refs)))) {
    snprintf(s->err, sizeof(s->err), "out of memory");
    return -1;
  }
  uint64_t set_bytes = 0;
  for (int k = 0; k < s->np; k++)
    for (int q = 0; q < s->pl[k]->nparams; q++)
      set_bytes += s->pl[k]->buffer_bytes(s->inst[k], q);
  uint64_t fit = set_bytes ? (8ull << 30) / set_bytes : 7;
  d->npool = fit > 7 ? 7 : fit < 1 ? 1 : (size_t)fit;
  d->base = d->npool >= 4 ? 1 : 0;
  d->ntimed = d->npool - d->base;
  s->placements = d->ntimed;
  if (!(d->pool = calloc(d->npool * (size_t)s->np, sizeof(void *)))) {
    snprintf(s->err, sizeof(s->err), "out of memory");
    return -1;
  }
  for (int k = 0; k < s->np; k++)
    d->pool[k] = s->inst[k];
  return 0;
}

/* The pool index of the set round r is timed on. */
static size_t set_of(const klw_sampling *s, size_t round) {
  const dev_state *d = s->state;
  return d->base + (round / s->block_rounds) % d->ntimed;
}

/* Before a window is queued: the sets its rounds use that do not exist
 * yet, each prepared on its block's inputs and warmed up on the shared
 * stream; then the device is synchronised and what they left (kernel
 * records, clock readings) discarded, so the window's records are its
 * own. Which plugin's instance a set makes first is drawn from the
 * request's seed, set by set: where a buffer lands depends on what was
 * allocated before it, and made baseline first every time, the same
 * layout fell to the same side in every run (on an H200, an A/A
 * comparison of a 16M vector_add leaned 0.3-0.7% toward the candidate in
 * 12 runs of 12; made in alternating order, 0.1-0.9% the other way in 12
 * of 12; drawn, 0.994-1.006 in 16 runs, mean 0.9996: bench/README.md,
 * "the A/A bias"). */
static int dev_ready(klw_sampling *s, size_t first, size_t rounds) {
  dev_state *d = s->state;
  bool made = false;
  for (size_t r = first; r < first + rounds; r++) {
    size_t b = set_of(s, r);
    bool flip =
        klw_block_seed(s->tr->seed ^ 0x6a09e667f3bcc909ull, b) >> 40 & 1;
    for (int j = 0; j < s->np; j++) {
      int k = flip ? s->np - 1 - j : j;
      void **slot = &d->pool[b * (size_t)s->np + (size_t)k];
      if (*slot) continue;
      const kl_plugin *pl = s->pl[k];
      made = true;
      if (pl->create(slot, s->tr->shape) ||
          pl->prepare(*slot, klw_block_seed(s->tr->seed, b), 0) ||
          pl->set_stream(*slot, s->pl[0]->stream(s->inst[0])) ||
          pl->restore(*slot) || pl->clock_mark(*slot, 0) ||
          klw_launch(pl, *slot)) {
        snprintf(s->err, sizeof(s->err), "placement pool: %s",
                 klw_launch_error(pl, *slot));
        klw_blame_launch(s, k); /* a contract its checked launches kept */
        return -1;
      }
      if (s->tr->graph && timed_launch(s, k, *slot, "placement pool"))
        return -1; /* its graph */
    }
  }
  if (!made) return 0;
  if (s->pl[0]->sync(s->inst[0])) {
    snprintf(s->err, sizeof(s->err), "%s", s->pl[0]->last_error(s->inst[0]));
    return -1;
  }
  discard(s);
  return 0;
}

static void **dev_set(klw_sampling *s, size_t round) {
  dev_state *d = s->state;
  return d->pool + set_of(s, round) * (size_t)s->np;
}

/* The clock is measured before every cold sample; in hot mode before one
 * sample in eight (each probe costs ~2 us of device time), and a bare
 * marker before the others. */
static int dev_mark(klw_sampling *s, int k, void *inst) {
  dev_state *d = s->state;
  int spin = s->tr->cold || d->throttle_probe++ % 8 == 0 ? 2000 : 0;
  if (prelude(s, k, inst, spin)) {
    snprintf(s->err, sizeof(s->err), "launch: %s", s->pl[k]->last_error(inst));
    return -1;
  }
  return 0;
}

static int dev_launch(klw_sampling *s, int k, void *inst, size_t index) {
  dev_state *d = s->state;
  if (timed_launch(s, k, inst, "launch")) return -1;
  d->refs[d->nrefs].plugin = k;
  d->refs[d->nrefs].index = index;
  d->nrefs++;
  return 0;
}

static int dev_collect(klw_sampling *s) {
  dev_state *d = s->state;
  const kl_plugin **pl = s->pl;
  double t0 = klw_now_us();
  if (pl[0]->sync(s->inst[0])) { /* every set shares inst[0]'s stream */
    snprintf(s->err, sizeof(s->err), "%s", pl[0]->last_error(s->inst[0]));
    return -1;
  }
  s->wait_us += klw_now_us() - t0;
  /* Clock readings live in the plugin's shared object: two plugins may
   * be one object (an A/A comparison compiles to one cache entry), so
   * read each object once and hand its readings out in launch order. */
  for (int k = 0; k < s->np; k++) {
    if (k > 0 && pl[k] == pl[0]) continue;
    double got_mhz[2 * 4096];
    uint64_t got = 0, want = 0, at = 0;
    for (size_t i = 0; i < d->nrefs; i++)
      want += pl[d->refs[i].plugin] == pl[k];
    if (pl[k]->clock_read(s->inst[k], got_mhz,
                          sizeof(got_mhz) / sizeof(got_mhz[0]), &got) ||
        got != want) {
      snprintf(s->err, sizeof(s->err), "%llu clock readings for %llu samples",
               (unsigned long long)got, (unsigned long long)want);
      return -1;
    }
    for (size_t i = 0; i < d->nrefs; i++)
      if (pl[d->refs[i].plugin] == pl[k])
        s->mhz[d->refs[i].plugin][d->refs[i].index] = got_mhz[at++];
  }
  klw_kernel *recs = NULL;
  size_t nrecs = 0, dropped = 0;
  klw_cupti_take(&recs, &nrecs, &dropped);
  int rc = 0;
  if (dropped) {
    snprintf(s->err, sizeof(s->err), "CUPTI dropped %zu records", dropped);
    rc = -1;
  } else if ((rc = attribute(d, recs, nrecs, d->refs, d->nrefs, s->us,
                             &s->culprit, s->err, sizeof(s->err))) < 0) {
    /* no kernel in a sample: the timed code's doing where its checked
     * launches ran one (a result handed back from memory), else a kernel
     * that does no device work at all, which nothing can time */
    if (rc == -2 && klw_work_expected(s->pl[s->culprit], s->tr->shape))
      s->gate = "timed_work";
    else if (rc == -2)
      snprintf(s->err, sizeof(s->err),
               "the launch runs no kernel, so there is nothing to time (its "
               "checked launches ran none either)");
    rc = -1;
  }
  free(recs);
  d->nrefs = 0;
  return rc;
}

/* The candidate's last placement set holds its last timed outputs. */
static void dev_last(klw_sampling *s, void **inst, size_t *block) {
  dev_state *d = s->state;
  size_t last = s->n > 0 ? set_of(s, s->n - 1) : 0;
  *inst = d->pool[last * (size_t)s->np + (size_t)(s->np - 1)];
  *block = last;
}

static void dev_reply(klw_sampling *s, json_object *o) {
  dev_state *d = s->state;
  /* hot mode measures the clock every eighth round: carry it forward */
  for (int k = 0; k < s->np; k++)
    for (size_t i = 1; i < s->n; i++)
      if (s->mhz[k][i] == 0) s->mhz[k][i] = s->mhz[k][i - 1];
  json_object *clocks = json_object_new_array();
  for (int k = 0; k < s->np; k++) {
    json_object *carr = json_object_new_array();
    for (size_t i = 0; i < s->n; i++)
      json_object_array_add(carr, json_object_new_double(s->mhz[k][i]));
    json_object_array_add(clocks, carr);
  }
  json_object_object_add(o, "sm_clock_mhz", clocks);
  json_object_object_add(o, "timer", json_object_new_string("cupti"));
  json_object_object_add(
      o, "tracing",
      json_object_new_string(d->serialised ? "serialised"
                                           : klw_cupti_trace_name(d->trace)));
  json_object_object_add(
      o, "launch", json_object_new_string(s->tr->graph ? "graph" : "stream"));
  if (s->tr->probe_true_us > 0) { /* offset 0: not calibrated (concurrent) */
    json_object *cal = json_object_new_object();
    json_object_object_add(cal, "offset_us",
                           json_object_new_double(d->offset_us));
    json_object_object_add(cal, "probe_records_us",
                           json_object_new_double(d->probe_records_us));
    json_object_object_add(cal, "probe_true_us",
                           json_object_new_double(s->tr->probe_true_us));
    json_object_object_add(o, "calibration", cal);
  }
  json_object_object_add(
      o, "flush_us",
      json_object_new_double(
          d->flush_count ? d->busy_us[ROLE_FLUSH] / d->flush_count : 0));
  json_object_object_add(o, "flush_bytes", json_object_new_double(0));
  json_object_object_add(o, "placements",
                         json_object_new_int64((int64_t)d->ntimed));
  json_object *tl = json_object_new_object();
  json_object_object_add(tl, "windows",
                         json_object_new_int64((int64_t)d->windows));
  json_object_object_add(tl, "span_us", json_object_new_double(d->span_us));
  json_object *busy = json_object_new_object(),
              *idle = json_object_new_object();
  for (int r = 0; r < ROLES; r++) {
    json_object_object_add(busy, role_names[r],
                           json_object_new_double(d->busy_us[r]));
    json_object_object_add(idle, role_names[r],
                           json_object_new_double(d->idle_us[r]));
  }
  json_object_object_add(tl, "busy_us", busy);
  json_object_object_add(tl, "idle_before_us", idle);
  json_object_object_add(tl, "timed_us", json_object_new_double(d->timed_us));
  json_object_object_add(o, "device_timeline", tl);
}

static void dev_stop(klw_sampling *s) {
  dev_state *d = s->state;
  if (!d) return;
  for (size_t i = 0; i < d->ngraphs; i++) /* before the buffers they name */
    klw_graph_free(d->graphs[i].graph);
  for (size_t b = 1; d->pool && b < d->npool; b++)
    for (int k = 0; k < s->np; k++)
      if (d->pool[b * (size_t)s->np + (size_t)k])
        klw_destroy(s->pl[k], d->pool[b * (size_t)s->np + (size_t)k]);
  free(d->pool);
  free(d->refs);
  free(d);
  s->state = NULL;
}

/* The stale-outputs gate's launches: as the samples launched (a replay of
 * the instance's graph in graph mode). */
static int dev_relaunch(klw_sampling *s, int k, void *inst) {
  if (s->tr->graph) return timed_launch(s, k, inst, "verify");
  if (!klw_launch(s->pl[k], inst)) return 0;
  snprintf(s->err, sizeof(s->err), "%s", klw_launch_error(s->pl[k], inst));
  return -1;
}

const klw_timer klw_timer_cupti = {
    "cupti",   dev_start, dev_warmup,  dev_place,   dev_ready,
    dev_set,   dev_mark,  dev_launch,  dev_collect, dev_last,
    dev_reply, dev_stop,  dev_relaunch};
#endif /* KL_HAVE_CUPTI */
