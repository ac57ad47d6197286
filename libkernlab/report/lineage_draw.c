/* A run's lineage drawn in its report: a nested list, each version under
 * the version it was compared with (its parent), as markdown and as HTML
 * (plain nested <ul>, no script, so the page stays self-contained).
 * history.c has gathered the run's iterations with their parents; a
 * parent is always an earlier line, so children are found forward and
 * the tree cannot loop. */
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

/* The index of iteration i's parent in the run, or -1 (a root). */
static long parent_of(const rp_run *run, size_t i) {
  const char *p = run->iters[i].parent;
  for (size_t j = 0; p && j < i; j++)
    if (run->iters[j].id && strcmp(run->iters[j].id, p) == 0) return (long)j;
  return -1;
}

static void html_text(kl_buf *b, const char *s) {
  for (; s && *s; s++)
    if (*s == '&')
      kl__buf_puts(b, "&amp;");
    else if (*s == '<')
      kl__buf_puts(b, "&lt;");
    else if (*s == '>')
      kl__buf_puts(b, "&gt;");
    else if (*s == '"')
      kl__buf_puts(b, "&quot;");
    else
      kl__buf_putc(b, *s);
}

/* One version's line: iteration, verdict, speedup against the parent,
 * what it tried. */
static void label(kl_buf *b, const rp_iter *it, bool html) {
  const char *what = it->iteration == 0 ? "the case's kernel"
                     : it->memo         ? it->memo
                                        : it->config;
  kl__buf_printf(b, "%s%d%s %s", html ? "<b>" : "**", it->iteration,
                 html ? "</b>" : "**", it->verdict ? it->verdict : "-");
  if (it->timed)
    kl__buf_printf(b, " x%.3f [%.3f, %.3f]", it->speedup, it->lo, it->hi);
  if (what) {
    kl__buf_puts(b, ": ");
    if (html) {
      html_text(b, what);
    } else { /* a code span, on one line */
      kl__buf_putc(b, '`');
      for (const char *s = what; *s; s++)
        kl__buf_putc(b, *s == '\n' ? ' ' : *s == '`' ? '\'' : *s);
      kl__buf_putc(b, '`');
    }
  }
}

static void md_tree(kl_buf *b, const rp_run *run, size_t i, int depth) {
  kl__buf_printf(b, "%*s- ", 2 * depth, "");
  label(b, &run->iters[i], false);
  kl__buf_putc(b, '\n');
  for (size_t j = i + 1; j < run->niters; j++)
    if (parent_of(run, j) == (long)i) md_tree(b, run, j, depth + 1);
}

int kl__rp_lineage_md(kl_buf *b, const rp_run *run) {
  kl__buf_puts(b, "\n## Lineage\n\nEach version under the one it was "
                  "compared with (kl history --lineage):\n\n");
  for (size_t i = 0; i < run->niters; i++)
    if (parent_of(run, i) < 0) md_tree(b, run, i, 0);
  return kl__buf_status(b);
}

static void html_tree(kl_buf *b, const rp_run *run, size_t i) {
  const rp_iter *it = &run->iters[i];
  kl__buf_puts(b, "<li>");
  label(b, it, true);
  if (it->dir) {
    kl__buf_printf(b, " <a href=\"%s", run->links);
    html_text(b, it->dir);
    kl__buf_puts(b, "/\">folder</a>");
  }
  bool open = false;
  for (size_t j = i + 1; j < run->niters; j++)
    if (parent_of(run, j) == (long)i) {
      if (!open) kl__buf_puts(b, "\n<ul>\n");
      open = true;
      html_tree(b, run, j);
    }
  kl__buf_puts(b, open ? "</ul>\n</li>\n" : "</li>\n");
}

int kl__rp_lineage_html(kl_buf *b, const rp_run *run) {
  kl__buf_puts(b, "<h2>Lineage</h2>\n<p>Each version under the one it was "
                  "compared with (kl history --lineage).</p>\n<ul>\n");
  for (size_t i = 0; i < run->niters; i++)
    if (parent_of(run, i) < 0) html_tree(b, run, i);
  kl__buf_puts(b, "</ul>\n");
  return kl__buf_status(b);
}
