/* A gathered run drawn as markdown or as one self-contained HTML page.
 *
 * The HTML page has no script and fetches nothing: its charts are inline
 * SVG, its style is inline, and its Content-Security-Policy forbids every
 * fetch, so a page that tried one would say so in the browser's console.
 * Every text that came from a record (memos and reasons may come from a
 * model) is escaped. Speedups are drawn on a log scale: x2 up and x0.5
 * down are the same distance. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

/* ---- shared figures
 * ----------------------------------------------------------- */

typedef struct totals {
  double wall_s, worker_s, usd, tokens_in, tokens_out;
  int candidates;
} totals;

static totals sum_costs(const rp_run *run) {
  totals t = {0};
  for (size_t i = 0; i < run->niters; i++) {
    const rp_iter *it = &run->iters[i];
    t.wall_s += it->wall_s;
    t.worker_s += it->worker_s;
    t.usd += it->usd;
    t.tokens_in += it->tokens_in;
    t.tokens_out += it->tokens_out;
    t.candidates += it->iteration > 0;
  }
  return t;
}

static const rp_iter *best_of(const rp_run *run) {
  return run->best >= 0 ? &run->iters[run->best] : NULL;
}

/* The estimate against the baseline of a timed candidate. */
static bool estimate(const rp_iter *it, double *out) {
  if (it->has_vs_base) {
    *out = it->vs_base;
    return true;
  }
  if (it->has_log) {
    *out = exp(it->log_vs_base);
    return true;
  }
  return false;
}

static const char *verdict_color(const char *v) {
  static const struct {
    const char *v, *color;
  } colors[] = {{"BASELINE", "#57606a"},      {"ACCEPTED", "#1a7f37"},
                {"REJECTED", "#bf8700"},      {"INCORRECT", "#cf222e"},
                {"CRASHED", "#8250df"},       {"TIMEOUT", "#bc4c00"},
                {"COMPILE_ERROR", "#6e7781"}, {"INVALID_REPLY", "#d4a72c"},
                {"CHEAT", "#000000"}};
  for (size_t i = 0; v && i < KL_ARRAY_SIZE(colors); i++)
    if (strcmp(v, colors[i].v) == 0) return colors[i].color;
  return "#6e7781";
}

/* The achieved rate of a shape's best, and its share of the roofline. */
static void shape_rates(const rp_shape *s, char *rate, size_t nrate, char *roof,
                        size_t nroof) {
  snprintf(rate, nrate, "-");
  snprintf(roof, nroof, "-");
  double us = s->has_best ? s->best_us : s->has_base ? s->base_us : 0;
  if (us <= 0) return;
  int n = 0;
  if (s->bytes > 0) n = snprintf(rate, nrate, "%.1f GB/s", s->bytes / us / 1e3);
  if (s->flops > 0 && n >= 0 && (size_t)n < nrate)
    snprintf(rate + n, nrate - (size_t)n, "%s%.1f GFLOP/s", n ? ", " : "",
             s->flops / us / 1e3);
  double t_roof = 0;
  if (s->peak_gbs > 0 && s->bytes > 0) t_roof = s->bytes / (s->peak_gbs * 1e3);
  if (s->peak_gflops > 0 && s->flops > 0 &&
      s->flops / (s->peak_gflops * 1e3) > t_roof)
    t_roof = s->flops / (s->peak_gflops * 1e3);
  if (t_roof > 0) snprintf(roof, nroof, "%.1f%%", 100 * t_roof / us);
}

static void speedup_text(char *out, size_t n, double s, double lo, double hi) {
  snprintf(out, n, "x%.3f [%.3f, %.3f]", s, lo, hi);
}

/* A shape's row of the per-shape table, as text, for either format. */
typedef struct shape_cells {
  char base[32], best[32], speedup[96], rate[96], roof[32];
} shape_cells;

static void shape_row(shape_cells *cl, const rp_shape *s) {
  snprintf(cl->base, sizeof(cl->base), s->has_base ? "%.2f" : "-", s->base_us);
  snprintf(cl->best, sizeof(cl->best), s->has_best ? "%.2f" : "-", s->best_us);
  if (s->has_speedup)
    speedup_text(cl->speedup, sizeof(cl->speedup), s->speedup, s->lo, s->hi);
  else
    snprintf(cl->speedup, sizeof(cl->speedup), "-");
  shape_rates(s, cl->rate, sizeof(cl->rate), cl->roof, sizeof(cl->roof));
}

/* What the run spent per accepted 1% of speedup. */
static void per_percent(char *out, size_t n, const rp_iter *best,
                        const totals *t) {
  snprintf(out, n, "- (no gain)");
  if (best && best->iteration > 0 && best->vs_base > 1) {
    double pct = (best->vs_base - 1) * 100;
    snprintf(out, n, "%.3g worker s, $%.4f", t->worker_s / pct, t->usd / pct);
  }
}

/* ---- markdown
 * ------------------------------------------------------------------ */

/* Text for a table cell: no newline, no bar. */
static int md_cell(kl_buf *b, const char *s) {
  for (; s && *s; s++)
    if (*s == '|')
      kl__buf_puts(b, "\\|");
    else
      *s == '\n' ? kl__buf_putc(b, ' ') : kl__buf_putc(b, *s);
  if (!s) kl__buf_putc(b, '-');
  return kl__buf_status(b);
}

static int md_findings(kl_buf *b, const rp_finding *f, size_t n,
                       const rp_finding *other, size_t nother, bool before) {
  if (n == 0)
    return kl__buf_puts(b, before ? "- (no diagnosis recorded)\n"
                                  : "- (none fired, or no profile recorded)\n");
  for (size_t i = 0; i < n; i++) {
    bool still = false;
    for (size_t j = 0; j < nother; j++)
      still |= strcmp(other[j].id, f[i].id) == 0;
    kl__buf_printf(b, "- **%s** (%s; %s)%s: ", f[i].id,
                   f[i].severity ? f[i].severity : "-", f[i].shapes,
                   before && nother && !still ? " — gone after" : "");
    md_cell(b, f[i].finding);
    kl__buf_putc(b, '\n');
  }
  return kl__buf_status(b);
}

/* Whether some shape's baseline or best ran several kernels per launch. */
static bool any_parts(const rp_run *run) {
  for (size_t k = 0; k < run->nshapes; k++)
    if (run->shapes[k].kernels_before || run->shapes[k].kernels_after)
      return true;
  return false;
}

int kl__rp_render_md(kl_buf *out, const rp_run *run) {
  kl_buf *b = out;
  const rp_iter *best = best_of(run);
  totals t = sum_costs(run);
  char sp[96];
  kl__buf_printf(b, "# kernlab run %s — %s\n\n", run->id, run->case_name);
  kl__buf_printf(b,
                 "Started %s on %s; proposer %s%s%s; %d candidates; "
                 "stopped: %s.\n\n",
                 run->started_text, run->device ? run->device : "-",
                 run->proposer ? run->proposer : "-", run->strategy ? "/" : "",
                 run->strategy ? run->strategy : "", t.candidates,
                 run->stop_reason   ? run->stop_reason
                 : run->has_summary ? "-"
                                    : "not recorded (killed?)");
  if (best && best->iteration > 0 && best->has_vs_base) {
    speedup_text(sp, sizeof(sp), best->vs_base, best->vb_lo, best->vb_hi);
    kl__buf_printf(b,
                   "**Best: %s against the baseline** (iteration "
                   "%d, %s",
                   sp, best->iteration,
                   best->vb_method ? best->vb_method : "-");
    kl__buf_puts(b, "; ");
    md_cell(b, best->memo);
    kl__buf_puts(b, ").\n\n");
  } else {
    kl__buf_puts(b, "**Nothing was accepted: the baseline stands.**\n\n");
  }
  kl__buf_puts(b, "## Best so far\n\n| iteration | best vs baseline "
                  "| 95% interval |\n|---:|---:|---|\n");
  for (size_t i = 0; i < run->niters; i++) {
    const rp_iter *it = &run->iters[i];
    if (!it->has_vs_base) continue;
    kl__buf_printf(b, "| %d | x%.3f | [%.3f, %.3f] |\n", it->iteration,
                   it->vs_base, it->vb_lo, it->vb_hi);
  }
  /* a command case: its metrics, in their own units; else the shapes */
  bool metrics = run->nshapes && run->shapes[0].better;
  kl__buf_puts(b, metrics ? "\n## Per metric\n\n| metric | better | "
                            "baseline | best | improvement [95%] |\n"
                            "|---|---|---:|---:|---|\n"
                          : "\n## Per shape\n\n| shape | baseline µs | "
                            "best µs | speedup [95%] | achieved | of "
                            "roofline | bottleneck before → after |\n"
                            "|---|---:|---:|---|---|---:|---|\n");
  for (size_t k = 0; k < run->nshapes; k++) {
    const rp_shape *s = &run->shapes[k];
    shape_cells cl;
    shape_row(&cl, s);
    if (metrics)
      kl__buf_printf(b, "| %s | %s | %s | %s | %s |\n", s->name, s->better,
                     cl.base, cl.best, cl.speedup);
    else
      kl__buf_printf(b, "| %s | %s | %s | %s | %s | %s | %s → %s |\n", s->name,
                     cl.base, cl.best, cl.speedup, cl.rate, cl.roof,
                     s->bottleneck_before ? s->bottleneck_before : "-",
                     s->bottleneck_after ? s->bottleneck_after : "-");
  }
  if (any_parts(run)) {
    kl__buf_puts(b, "\n## Kernels of a launch\n\nA launch that runs "
                    "several kernels (a launcher's), each profiled: name, "
                    "time, bottleneck.\n\n| shape | baseline | best |\n"
                    "|---|---|---|\n");
    for (size_t k = 0; k < run->nshapes; k++) {
      const rp_shape *s = &run->shapes[k];
      kl__buf_printf(b, "| %s | ", s->name);
      md_cell(b, s->kernels_before ? s->kernels_before : "one kernel");
      kl__buf_puts(b, " | ");
      md_cell(b, s->kernels_after ? s->kernels_after : "one kernel");
      kl__buf_puts(b, " |\n");
    }
  }
  kl__buf_puts(b, "\n## How each number was obtained\n\n");
  for (size_t i = 0; i < run->niters; i++) {
    const rp_iter *it = &run->iters[i];
    if (!it->how) continue;
    kl__buf_printf(b, "- iteration %d (%s): ", it->iteration,
                   it->verdict ? it->verdict : "-");
    md_cell(b, it->how);
    kl__buf_putc(b, '\n');
  }
  kl__buf_puts(b, "\n## Findings before (baseline)\n\n");
  md_findings(b, run->before, run->nbefore, run->after, run->nafter, true);
  kl__buf_puts(b, "\n## Findings after (best)\n\n");
  if (best && best->iteration > 0)
    md_findings(b, run->after, run->nafter, NULL, 0, false);
  else
    kl__buf_puts(b, "- (nothing accepted)\n");
  kl__buf_printf(b,
                 "\n## Budget\n\n| iterations | wall s | worker s "
                 "(%s) | tokens in / out | dollars | per accepted "
                 "1%% |\n|---:|---:|---:|---|---:|---|\n",
                 strcmp(run->backend, "cuda") == 0 ? "GPU" : "CPU");
  char per[96];
  per_percent(per, sizeof(per), best, &t);
  kl__buf_printf(b, "| %d | %.1f | %.1f | %.0f / %.0f | %.4f | %s |\n",
                 t.candidates, t.wall_s, t.worker_s, t.tokens_in, t.tokens_out,
                 t.usd, per);
  kl__rp_lineage_md(b, run);
  kl__buf_puts(b, "\n## Every candidate\n\n| # | proposer | verdict | "
                  "vs parent | vs baseline | what | why | folder |\n"
                  "|---:|---|---|---|---:|---|---|---|\n");
  for (size_t i = 0; i < run->niters; i++) {
    const rp_iter *it = &run->iters[i];
    double est;
    if (it->timed)
      speedup_text(sp, sizeof(sp), it->speedup, it->lo, it->hi);
    else
      snprintf(sp, sizeof(sp), "-");
    kl__buf_printf(b, "| %d | %s | %s%s%s | %s | ", it->iteration,
                   it->proposer ? it->proposer : "-",
                   it->verdict ? it->verdict : "-", it->gate ? " " : "",
                   it->gate ? it->gate : "", sp);
    if (estimate(it, &est))
      kl__buf_printf(b, "x%.3f", est);
    else
      kl__buf_puts(b, "-");
    kl__buf_puts(b, " | ");
    md_cell(b, it->memo ? it->memo : it->config);
    kl__buf_puts(b, " | ");
    md_cell(b, it->reason);
    kl__buf_printf(b, " | [%s](%s%s/) |\n", it->dir ? it->dir : "-", run->links,
                   it->dir ? it->dir : "");
  }
  return kl__buf_status(b);
}

/* ---- HTML
 * ----------------------------------------------------------------------- */

static int esc(kl_buf *b, const char *s) {
  if (!s) return kl__buf_putc(b, '-');
  for (; *s; s++)
    switch (*s) {
    case '&':
      kl__buf_puts(b, "&amp;");
      break;
    case '<':
      kl__buf_puts(b, "&lt;");
      break;
    case '>':
      kl__buf_puts(b, "&gt;");
      break;
    case '"':
      kl__buf_puts(b, "&quot;");
      break;
    case '\'':
      kl__buf_puts(b, "&#39;");
      break;
    default:
      kl__buf_putc(b, *s);
    }
  return kl__buf_status(b);
}

/* A chart's frame: iterations across, speedup (log scale) up. */
typedef struct frame {
  double w, h, left, right, top, bottom;
  int max_iter;
  double ymin, ymax; /* log10 of the speedups at the bottom and top */
} frame;

static double fx(const frame *f, double iter) {
  double span = f->max_iter > 0 ? f->max_iter : 1;
  return f->left + (f->w - f->left - f->right) * iter / span;
}

static double fy(const frame *f, double speedup) {
  double l = log10(speedup > 1e-9 ? speedup : 1e-9);
  if (l < f->ymin) l = f->ymin;
  if (l > f->ymax) l = f->ymax;
  return f->top +
         (f->h - f->top - f->bottom) * (f->ymax - l) / (f->ymax - f->ymin);
}

static frame make_frame(const rp_run *run, bool with_failed_strip) {
  frame f = {720, 300, 64, 20, 16, with_failed_strip ? 76 : 40, 1, 0, 0};
  double lo = 1, hi = 1;
  for (size_t i = 0; i < run->niters; i++) {
    const rp_iter *it = &run->iters[i];
    double e;
    if (it->iteration > f.max_iter) f.max_iter = it->iteration;
    if (it->has_vs_base) {
      lo = fmin(lo, it->vb_lo);
      hi = fmax(hi, it->vb_hi);
    }
    if (with_failed_strip && estimate(it, &e)) {
      lo = fmin(lo, e);
      hi = fmax(hi, e);
    }
  }
  f.ymin = log10(lo > 1e-6 ? lo : 1e-6) - 0.05;
  f.ymax = log10(hi) + 0.05;
  if (f.ymax - f.ymin < 0.3) {
    double mid = (f.ymax + f.ymin) / 2;
    f.ymin = mid - 0.15;
    f.ymax = mid + 0.15;
  }
  return f;
}

/* Axes, ticks at 1-2-5 steps of the log scale, and the x1 line. */
static int axes(kl_buf *b, const frame *f, const char *ylabel) {
  double x0 = f->left, x1 = f->w - f->right;
  kl__buf_printf(b,
                 "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                 "height=\"%.1f\" fill=\"#ffffff\" stroke=\"#d0d7de\"/>\n",
                 x0, f->top, x1 - x0, f->h - f->top - f->bottom);
  /* ticks at 1-2-5 steps; over a narrow range, linear steps instead */
  double ticks[16];
  int nticks = 0;
  static const double steps[] = {1, 2, 5};
  for (int e = -6; e <= 6; e++)
    for (int k = 0; k < 3 && nticks < 16; k++) {
      double v = steps[k] * pow(10, e), l = log10(v);
      if (l >= f->ymin && l <= f->ymax) ticks[nticks++] = v;
    }
  if (nticks < 3) {
    static const double linear[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1};
    double lo = pow(10, f->ymin), hi = pow(10, f->ymax);
    for (size_t k = 0; k < KL_ARRAY_SIZE(linear); k++) {
      double step = linear[k];
      if ((hi - lo) / step > 8) continue;
      nticks = 0;
      for (double v = ceil(lo / step) * step; v <= hi && nticks < 16; v += step)
        ticks[nticks++] = round(v / step) * step;
      break;
    }
  }
  for (int t = 0; t < nticks; t++) {
    double v = ticks[t], y = fy(f, v);
    bool one = fabs(v - 1) < 1e-9;
    kl__buf_printf(b,
                   "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                   "stroke=\"%s\"%s/>\n<text x=\"%.1f\" y=\"%.1f\" "
                   "class=\"tick\" text-anchor=\"end\">x%g</text>\n",
                   x0, y, x1, y, one ? "#8c959f" : "#eaeef2",
                   one ? " stroke-dasharray=\"4 3\"" : "", x0 - 6, y + 4, v);
  }
  int every = f->max_iter > 20 ? (f->max_iter + 9) / 10 : 1;
  for (int i = 0; i <= f->max_iter; i += every)
    kl__buf_printf(b,
                   "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" "
                   "text-anchor=\"middle\">%d</text>\n",
                   fx(f, i), f->h - f->bottom + 16, i);
  kl__buf_printf(b,
                 "<text x=\"%.1f\" y=\"%.1f\" class=\"label\" "
                 "text-anchor=\"middle\">iteration</text>\n"
                 "<text x=\"14\" y=\"%.1f\" class=\"label\" "
                 "transform=\"rotate(-90 14 %.1f)\" "
                 "text-anchor=\"middle\">%s</text>\n",
                 (x0 + x1) / 2, f->h - f->bottom + 32,
                 (f->top + f->h - f->bottom) / 2,
                 (f->top + f->h - f->bottom) / 2, ylabel);
  return kl__buf_status(b);
}

/* The best so far: a step line with its 95% band. Each acceptance holds
 * from its iteration to the next acceptance (the last to the end). */
static int curve_svg(kl_buf *b, const rp_run *run) {
  frame f = make_frame(run, false);
  kl__buf_printf(b,
                 "<svg id=\"curve\" xmlns=\"http://www.w3.org/2000/svg\" "
                 "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f "
                 "%.0f\" role=\"img\" aria-label=\"best speedup so "
                 "far against the baseline\">\n",
                 f.w, f.h, f.w, f.h);
  axes(b, &f, "best vs baseline");
  const rp_iter **steps = kl__calloc(run->niters + 1, sizeof(*steps));
  if (!steps) return kl__error_oom();
  size_t n = 0;
  for (size_t i = 0; i < run->niters; i++)
    if (run->iters[i].has_vs_base) steps[n++] = &run->iters[i];
  /* x from and to of step k; a last step at the last iteration gets a
   * sliver so it shows */
  double *x0 = kl__calloc(2 * n + 1, sizeof(double)), *x1 = x0 ? x0 + n : NULL;
  if (!x0) {
    kl__free(steps);
    return kl__error_oom();
  }
  for (size_t k = 0; k < n; k++) {
    x0[k] = fx(&f, steps[k]->iteration);
    x1[k] = k + 1 < n ? fx(&f, steps[k + 1]->iteration) : fx(&f, f.max_iter);
    if (x1[k] - x0[k] < 6) x1[k] = x0[k] + 6;
  }
  kl__buf_puts(b, "<path class=\"band\" d=\"");
  for (size_t k = 0; k < n; k++)
    kl__buf_printf(b, "%s%.1f,%.1f L%.1f,%.1f", k ? " L" : "M", x0[k],
                   fy(&f, steps[k]->vb_hi), x1[k], fy(&f, steps[k]->vb_hi));
  for (size_t k = n; k-- > 0;)
    kl__buf_printf(b, " L%.1f,%.1f L%.1f,%.1f", x1[k], fy(&f, steps[k]->vb_lo),
                   x0[k], fy(&f, steps[k]->vb_lo));
  kl__buf_puts(b, n ? " Z\" fill=\"#0969da\" fill-opacity=\"0.18\" "
                      "stroke=\"none\"/>\n<path class=\"best\" d=\""
                    : "\" fill=\"none\"/>\n<path class=\"best\" d=\"");
  for (size_t k = 0; k < n; k++)
    kl__buf_printf(b, "%s%.1f,%.1f L%.1f,%.1f", k ? " L" : "M", x0[k],
                   fy(&f, steps[k]->vs_base), x1[k], fy(&f, steps[k]->vs_base));
  kl__buf_puts(b, "\" fill=\"none\" stroke=\"#0969da\" "
                  "stroke-width=\"3\"/>\n");
  for (size_t k = 0; k < n; k++)
    kl__buf_printf(b,
                   "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                   "fill=\"#0969da\"><title>iteration %d: x%.3f [%.3f, "
                   "%.3f]</title></circle>\n",
                   x0[k], fy(&f, steps[k]->vs_base), steps[k]->iteration,
                   steps[k]->vs_base, steps[k]->vb_lo, steps[k]->vb_hi);
  kl__free(x0);
  kl__free(steps);
  kl__buf_puts(b, "</svg>\n");
  return kl__buf_status(b);
}

/* Every candidate by verdict: timed ones at their estimate against the
 * baseline, the others on a strip below the chart. */
static int scatter_svg(kl_buf *b, const rp_run *run) {
  frame f = make_frame(run, true);
  double strip = f.h - f.bottom + 56;
  kl__buf_printf(b,
                 "<svg id=\"scatter\" xmlns=\"http://www.w3.org/2000/svg\" "
                 "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f "
                 "%.0f\" role=\"img\" aria-label=\"every candidate by "
                 "verdict\">\n",
                 f.w, f.h + 8, f.w, f.h + 8);
  axes(b, &f, "vs baseline (est.)");
  kl__buf_printf(b,
                 "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" "
                 "text-anchor=\"end\">failed</text>\n",
                 f.left - 6, strip + 4);
  for (size_t i = 0; i < run->niters; i++) {
    const rp_iter *it = &run->iters[i];
    double e;
    bool timed = estimate(it, &e);
    double x = fx(&f, it->iteration), y = timed ? fy(&f, e) : strip;
    const char *color = verdict_color(it->verdict);
    kl__buf_printf(b, "<a href=\"%s", run->links);
    esc(b, it->dir);
    kl__buf_puts(b, "/\">");
    if (timed)
      kl__buf_printf(b,
                     "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
                     "fill=\"%s\">",
                     x, y, color);
    else
      kl__buf_printf(b,
                     "<path d=\"M%.1f,%.1f l8,8 m0,-8 l-8,8\" "
                     "stroke=\"%s\" stroke-width=\"2\">",
                     x - 4, y - 4, color);
    kl__buf_printf(b, "<title>%d %s", it->iteration,
                   it->verdict ? it->verdict : "-");
    if (timed) kl__buf_printf(b, " x%.3f", e);
    kl__buf_puts(b, ": ");
    esc(b, it->memo ? it->memo : it->config);
    kl__buf_puts(b,
                 timed ? "</title></circle></a>\n" : "</title></path></a>\n");
  }
  kl__buf_puts(b, "</svg>\n<p class=\"legend\">");
  for (int v = 0; v < KL_OUTCOME_COUNT; v++)
    if (run->counts[v])
      kl__buf_printf(b, "<span><i style=\"background:%s\"></i>%s %d</span> ",
                     verdict_color(kl_outcome_name((kl_outcome)v)),
                     kl_outcome_name((kl_outcome)v), run->counts[v]);
  kl__buf_puts(b, "</p>\n");
  return kl__buf_status(b);
}

static int html_findings(kl_buf *b, const rp_finding *f, size_t n,
                         const rp_finding *other, size_t nother, bool before) {
  if (n == 0)
    return kl__buf_puts(b, before ? "<p>No diagnosis recorded.</p>\n"
                                  : "<p>None fired, or no profile "
                                    "recorded.</p>\n");
  kl__buf_puts(b, "<ul>\n");
  for (size_t i = 0; i < n; i++) {
    bool still = false;
    for (size_t j = 0; j < nother; j++)
      still |= strcmp(other[j].id, f[i].id) == 0;
    kl__buf_puts(b, "<li><b>");
    esc(b, f[i].id);
    kl__buf_puts(b, "</b> <span class=\"sev\">");
    esc(b, f[i].severity);
    kl__buf_puts(b, "; ");
    esc(b, f[i].shapes);
    kl__buf_puts(b, "</span>");
    if (before && nother && !still)
      kl__buf_puts(b, " <span class=\"gone\">gone after</span>");
    kl__buf_puts(b, ": ");
    esc(b, f[i].finding);
    kl__buf_puts(b, "</li>\n");
  }
  kl__buf_puts(b, "</ul>\n");
  return kl__buf_status(b);
}

static const char style[] =
    "body{font:14px/1.45 system-ui,sans-serif;color:#1f2328;margin:24px;"
    "max-width:1100px}h1{font-size:22px}h2{font-size:17px;margin-top:28px}"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid "
    "#d0d7de;padding:3px 8px;text-align:left;vertical-align:top}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "svg text.tick{font-size:11px;fill:#57606a}svg text.label{font-size:12px;"
    "fill:#1f2328}.legend span{margin-right:12px}.legend i{display:inline-"
    "block;width:10px;height:10px;border-radius:5px;margin-right:4px}"
    ".sev{color:#57606a}.gone{color:#1a7f37;font-weight:600}.best{font-size:"
    "18px}";

int kl__rp_render_html(kl_buf *out, const rp_run *run) {
  kl_buf *b = out;
  const rp_iter *best = best_of(run);
  totals t = sum_costs(run);
  char sp[96];
  kl__buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
                  "<meta charset=\"utf-8\">\n<meta http-equiv=\""
                  "Content-Security-Policy\" content=\"default-src "
                  "'none'; style-src 'unsafe-inline'\">\n<title>");
  kl__buf_puts(b, "kernlab run ");
  esc(b, run->id);
  kl__buf_puts(b, " — ");
  esc(b, run->case_name);
  kl__buf_printf(b, "</title>\n<style>%s</style></head><body>\n<h1>", style);
  esc(b, run->case_name);
  kl__buf_puts(b, ": run ");
  esc(b, run->id);
  kl__buf_puts(b, "</h1>\n<p>Started ");
  esc(b, run->started_text);
  kl__buf_puts(b, " on ");
  esc(b, run->device);
  kl__buf_puts(b, "; proposer ");
  esc(b, run->proposer);
  if (run->strategy) {
    kl__buf_putc(b, '/');
    esc(b, run->strategy);
  }
  kl__buf_printf(b, "; %d candidates; stopped: ", t.candidates);
  esc(b, run->stop_reason   ? run->stop_reason
         : run->has_summary ? "-"
                            : "not recorded (killed?)");
  kl__buf_puts(b, ".</p>\n<p class=\"best\">");
  if (best && best->iteration > 0 && best->has_vs_base) {
    speedup_text(sp, sizeof(sp), best->vs_base, best->vb_lo, best->vb_hi);
    kl__buf_printf(b,
                   "Best: <b>%s</b> against the baseline (iteration "
                   "%d, %s: ",
                   sp, best->iteration,
                   best->vb_method ? best->vb_method : "-");
    esc(b, best->memo ? best->memo : best->config);
    kl__buf_puts(b, ")");
  } else {
    kl__buf_puts(b, "Nothing was accepted: the baseline stands.");
  }
  kl__buf_puts(b, "</p>\n<h2>Best so far against the baseline (95% "
                  "interval shaded)</h2>\n");
  int rc = curve_svg(b, run); /* it allocates: not only a write */
  if (rc < 0) return rc;
  kl__buf_puts(b, "<h2>Every candidate, by verdict</h2>\n");
  scatter_svg(b, run);
  /* a command case: its metrics, in their own units; else the shapes */
  bool metrics = run->nshapes && run->shapes[0].better;
  kl__buf_puts(b, metrics ? "<h2>Per metric</h2>\n<table><tr><th>metric</th>"
                            "<th>better</th><th>baseline</th><th>best</th>"
                            "<th>improvement [95%]</th></tr>\n"
                          : "<h2>Per shape</h2>\n<table><tr><th>shape</th>"
                            "<th>baseline µs</th><th>best µs</th><th>"
                            "speedup [95%]</th><th>achieved</th><th>of "
                            "roofline</th><th>bottleneck before → after"
                            "</th></tr>\n");
  for (size_t k = 0; k < run->nshapes; k++) {
    const rp_shape *s = &run->shapes[k];
    shape_cells cl;
    shape_row(&cl, s);
    kl__buf_puts(b, "<tr><td>");
    esc(b, s->name);
    if (metrics) {
      kl__buf_printf(b,
                     "</td><td>%s</td><td class=\"n\">%s</td><td "
                     "class=\"n\">%s</td><td>%s</td></tr>\n",
                     s->better, cl.base, cl.best, cl.speedup);
      continue;
    }
    kl__buf_printf(b,
                   "</td><td class=\"n\">%s</td><td class=\"n\">%s"
                   "</td><td>%s</td><td>%s</td><td class=\"n\">%s"
                   "</td><td>",
                   cl.base, cl.best, cl.speedup, cl.rate, cl.roof);
    esc(b, s->bottleneck_before);
    kl__buf_puts(b, " → ");
    esc(b, s->bottleneck_after);
    kl__buf_puts(b, "</td></tr>\n");
  }
  kl__buf_puts(b, "</table>\n");
  if (any_parts(run)) {
    kl__buf_puts(b, "<h2>Kernels of a launch</h2>\n<table><tr><th>shape"
                    "</th><th>baseline</th><th>best</th></tr>\n");
    for (size_t k = 0; k < run->nshapes; k++) {
      const rp_shape *s = &run->shapes[k];
      kl__buf_puts(b, "<tr><td>");
      esc(b, s->name);
      kl__buf_puts(b, "</td><td>");
      esc(b, s->kernels_before ? s->kernels_before : "one kernel");
      kl__buf_puts(b, "</td><td>");
      esc(b, s->kernels_after ? s->kernels_after : "one kernel");
      kl__buf_puts(b, "</td></tr>\n");
    }
    kl__buf_puts(b, "</table>\n");
  }
  kl__buf_puts(b, "<h2>How each number was obtained</h2>\n<ul>\n");
  for (size_t i = 0; i < run->niters; i++) {
    const rp_iter *it = &run->iters[i];
    if (!it->how) continue;
    kl__buf_printf(b, "<li>iteration %d (", it->iteration);
    esc(b, it->verdict ? it->verdict : "-");
    kl__buf_puts(b, "): ");
    esc(b, it->how);
    kl__buf_puts(b, "</li>\n");
  }
  kl__buf_puts(b, "</ul>\n<h2>Findings before (baseline)</h2>\n");
  html_findings(b, run->before, run->nbefore, run->after, run->nafter, true);
  kl__buf_puts(b, "<h2>Findings after (best)</h2>\n");
  if (best && best->iteration > 0)
    html_findings(b, run->after, run->nafter, NULL, 0, false);
  else
    kl__buf_puts(b, "<p>Nothing accepted.</p>\n");
  char per[96];
  per_percent(per, sizeof(per), best, &t);
  kl__buf_printf(b,
                 "<h2>Budget spent</h2>\n<table><tr><th>iterations</th>"
                 "<th>wall s</th><th>worker s (%s)</th><th>tokens in / "
                 "out</th><th>dollars</th><th>per accepted 1%%</th></tr>"
                 "\n<tr><td class=\"n\">%d</td><td class=\"n\">%.1f</td>"
                 "<td class=\"n\">%.1f</td><td class=\"n\">%.0f / %.0f"
                 "</td><td class=\"n\">%.4f</td><td>%s</td></tr>\n"
                 "</table>\n",
                 strcmp(run->backend, "cuda") == 0 ? "GPU" : "CPU",
                 t.candidates, t.wall_s, t.worker_s, t.tokens_in, t.tokens_out,
                 t.usd, per);
  kl__rp_lineage_html(b, run);
  kl__buf_puts(b, "<h2>Iterations</h2>\n<table><tr><th>#</th><th>"
                  "proposer</th><th>verdict</th><th>vs parent</th><th>"
                  "vs baseline</th><th>what</th><th>why</th><th>folder"
                  "</th></tr>\n");
  for (size_t i = 0; i < run->niters; i++) {
    const rp_iter *it = &run->iters[i];
    double e;
    if (it->timed)
      speedup_text(sp, sizeof(sp), it->speedup, it->lo, it->hi);
    else
      snprintf(sp, sizeof(sp), "-");
    kl__buf_printf(b, "<tr><td class=\"n\">%d</td><td>", it->iteration);
    esc(b, it->proposer);
    kl__buf_printf(b, "</td><td style=\"color:%s\">",
                   verdict_color(it->verdict));
    esc(b, it->verdict);
    if (it->gate) {
      kl__buf_putc(b, ' ');
      esc(b, it->gate);
    }
    kl__buf_printf(b, "</td><td>%s</td><td class=\"n\">", sp);
    if (estimate(it, &e))
      kl__buf_printf(b, "x%.3f", e);
    else
      kl__buf_puts(b, "-");
    kl__buf_puts(b, "</td><td>");
    esc(b, it->memo ? it->memo : it->config);
    kl__buf_puts(b, "</td><td>");
    esc(b, it->reason);
    kl__buf_printf(b, "</td><td><a href=\"%s", run->links);
    esc(b, it->dir);
    kl__buf_puts(b, "/\">");
    esc(b, it->dir);
    kl__buf_puts(b, "</a></td></tr>\n");
  }
  kl__buf_printf(b,
                 "</table>\n<p class=\"sev\">kernlab %s. Speedups "
                 "are medians of interleaved A/B samples with "
                 "bootstrap 95%% intervals; the estimate against "
                 "the baseline of a rejected candidate is its "
                 "speedup over its parent times the parent's.</p>\n"
                 "</body></html>\n",
                 kl_version_string());
  return kl__buf_status(b);
}
