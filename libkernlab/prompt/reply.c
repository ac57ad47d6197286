/* Parsing a model's reply: the kernel section and the memo, or the reason
 * the reply is turned down.
 *
 * The code is looked for in fenced blocks (``` or ~~~), then between
 * `// BEGIN KERNEL` and `// END KERNEL` lines, then in a reply that is
 * nothing but code (its first line reads like C). Of several blocks the one
 * that defines the entry point wins; two that define it are ambiguous. The
 * checks are the cheap ones that save a build: elision phrases and "..."
 * lines, stub markers, bytes outside ASCII, and the entry point's
 * parameter types against the baseline's (names, const and restrict may
 * differ; types, order and count may not). A block that defines the launch
 * contract's launcher (kernlab_launch, kernlab/plugin.h) owns its launch:
 * the launcher's parameters are checked instead (the entry's, then the
 * context) and the entry point need not exist. Each check names the reply
 * line it tripped on. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "kernlab/plugin.h"
#include "prompt_internal.h"

struct kl_reply {
  char *code, *memo, *reason;
};

typedef struct block {
  size_t start, end; /* the code's bytes in the reply */
  int line;          /* reply line of its first byte */
} block;

#define MAX_BLOCKS 16

void kl_reply_free(kl_reply *r) {
  if (!r) return;
  kl__free(r->code);
  kl__free(r->memo);
  kl__free(r->reason);
  kl__free(r);
}

int kl_reply_ok(const kl_reply *r) {
  return r && !r->reason;
}
const char *kl_reply_reason(const kl_reply *r) {
  return r->reason;
}
const char *kl_reply_code(const kl_reply *r) {
  return r->code;
}
const char *kl_reply_memo(const kl_reply *r) {
  return r->memo;
}

static int line_at(const char *text, size_t off) {
  int line = 1;
  for (size_t i = 0; i < off && text[i]; i++)
    line += text[i] == '\n';
  return line;
}

static size_t line_end(const char *s, size_t i) {
  while (s[i] && s[i] != '\n')
    i++;
  return i;
}

static size_t next_line(const char *s, size_t i) {
  i = line_end(s, i);
  return s[i] ? i + 1 : i;
}

/* ``` or ~~~ fenced blocks, the fence lines excluded. */
static size_t fenced(const char *t, block *b) {
  size_t n = 0;
  for (size_t i = 0; t[i] && n < MAX_BLOCKS;) {
    size_t s = i + strspn(t + i, " \t");
    if (strncmp(t + s, "```", 3) == 0 || strncmp(t + s, "~~~", 3) == 0) {
      char fence[4] = {t[s], t[s], t[s], '\0'};
      size_t start = next_line(t, i), j = start;
      while (t[j]) {
        size_t k = j + strspn(t + j, " \t");
        if (strncmp(t + k, fence, 3) == 0) break;
        j = next_line(t, j);
      }
      b[n].start = start;
      b[n].end = j;
      b[n++].line = line_at(t, start);
      i = t[j] ? next_line(t, j) : j;
      continue;
    }
    i = next_line(t, i);
  }
  return n;
}

/* // BEGIN KERNEL ... // END KERNEL */
static size_t marked(const char *t, block *b) {
  const char *begin = strstr(t, "BEGIN KERNEL");
  if (!begin) return 0;
  size_t start = next_line(t, (size_t)(begin - t));
  const char *end = strstr(t + start, "END KERNEL"); /* on a later line */
  if (!end) return 0;
  size_t e = (size_t)(end - t);
  while (e > start && t[e - 1] != '\n')
    e--;
  b[0].start = start;
  b[0].end = e;
  b[0].line = line_at(t, b[0].start);
  return 1;
}

/* A reply that is only code: its first non-blank line (MEMO lines aside)
 * starts with one of `starts` (indented or not, for C; at column 0 where
 * `indented` is false, for Python). */
static size_t bare_code(const char *t, block *b, const char *const *starts,
                        size_t nstarts, bool indented) {
  size_t i = 0;
  for (;;) {
    size_t s = i + strspn(t + i, " \t\r");
    if (!t[s]) return 0;
    if (t[s] != '\n' && strncmp(t + s, "MEMO:", 5) != 0) break;
    i = next_line(t, i);
  }
  size_t s = indented ? i + strspn(t + i, " \t") : i;
  for (size_t k = 0; k < nstarts; k++)
    if (strncmp(t + s, starts[k], strlen(starts[k])) == 0) {
      b[0].start = i;
      b[0].end = strlen(t);
      b[0].line = line_at(t, i);
      return 1;
    }
  return 0;
}

/* ... whose first line reads like C or CUDA */
static size_t bare(const char *t, block *b) {
  static const char *const starts[] = {
      "#",          "//",     "/*",       "extern",    "__global__",
      "__device__", "static", "template", "typedef",   "struct",
      "namespace",  "using",  "const",    "constexpr", "void",
      "int",        "float",  "double",   "unsigned",  "inline"};
  return bare_code(t, b, starts, KL_ARRAY_SIZE(starts), true);
}

/* "const float *__restrict__ in, int n" -> "float*,int": types only. */
static char *param_types(const char *params) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "");
  const char *p = params;
  while (*p) {
    size_t n = strcspn(p, ",");
    /* the tokens of one parameter, the last identifier being its name */
    char tok[32][64];
    int nt = 0;
    for (size_t i = 0; i < n && nt < 32;) {
      if (isspace((unsigned char)p[i])) {
        i++;
      } else if (kl__c_ident_char(p[i])) {
        size_t k = 0;
        while (i < n && kl__c_ident_char(p[i]) && k < 63)
          tok[nt][k++] = p[i++];
        tok[nt++][k] = '\0';
      } else {
        tok[nt][0] = p[i] == '[' ? '*' : p[i];
        tok[nt++][1] = '\0';
        i++;
        if (tok[nt - 1][0] == '*' && p[i - 1] == '[')
          while (i < n && p[i] != ']')
            i++;
        if (i < n && p[i] == ']') i++;
      }
    }
    if (nt > 1 && kl__c_ident_char(tok[nt - 1][0])) nt--; /* the name */
    kl__buf_puts(&b, b.size ? "," : "");
    for (int t = 0; t < nt; t++) {
      if (strcmp(tok[t], "const") == 0 || strcmp(tok[t], "__restrict__") == 0 ||
          strcmp(tok[t], "restrict") == 0 || strcmp(tok[t], "__restrict") == 0)
        continue;
      bool word = kl__c_ident_char(tok[t][0]);
      kl__buf_printf(&b, "%s%s",
                     word && b.size && kl__c_ident_char(b.ptr[b.size - 1]) ? " "
                                                                           : "",
                     tok[t]);
    }
    p += n;
    if (*p == ',') p++;
  }
  return kl__buf_detach(&b); /* NULL when a write failed */
}

/* A python case's: `def forward(x, y)` from its module. */
static int python_signature(char **out, const char *module, const char *path) {
  char *params = NULL;
  int rc = kl__py_def_params(&params, module, "forward");
  if (rc < 0) return rc;
  if (!params)
    return kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                     "%s: the module does not define 'forward'", path);
  kl_buf b = KL_BUF_INIT;
  kl__buf_printf(&b, "def forward(%s)", params);
  kl__free(params);
  if ((rc = kl__buf_status(&b)) == 0) *out = kl__buf_detach(&b);
  kl_buf_dispose(&b);
  return rc;
}

int kl__entry_signature(char **out, const kl_case *c) {
  *out = NULL;
  if (kl_case_backend(c) == KL_BACKEND_COMMAND) { /* a file, no signature */
    const char *p = kl_case_kernel_path(c), *name = strrchr(p, '/');
    kl_buf b = KL_BUF_INIT;
    kl__buf_printf(&b, "the file %s", name ? name + 1 : p);
    int rc = kl__buf_status(&b);
    if (rc == 0) *out = kl__buf_detach(&b);
    return rc;
  }
  const char *entry = kl_case_entry(c);
  kl_buf base = KL_BUF_INIT;
  int rc = kl__read_file(&base, kl_case_kernel_path(c));
  if (rc < 0) return rc;
  if (kl_case_backend(c) == KL_BACKEND_PYTHON) {
    rc =
        python_signature(out, base.ptr ? base.ptr : "", kl_case_kernel_path(c));
    kl_buf_dispose(&base);
    return rc;
  }
  char *clean = base.ptr ? kl__c_blank(base.ptr, base.size, false) : NULL;
  char *text = base.ptr ? kl__c_blank(base.ptr, base.size, true) : NULL;
  kl_buf_dispose(&base);
  if (!clean || !text) {
    kl__free(clean);
    kl__free(text);
    return kl__error_oom();
  }
  char *params = NULL;
  size_t at = 0, end = 0, close = 0;
  kl_buf b = KL_BUF_INIT;
  if ((rc = kl__c_definition_params(&params, clean, entry)) < 0) goto done;
  if (params && kl__c_definition_span(clean, entry, &at, &end, &close) < 0)
    at = end = 0;
  for (size_t i = at; i < end; i++) {
    bool space = isspace((unsigned char)text[i]);
    if (space &&
        (b.size == 0 || b.ptr[b.size - 1] == ' ' || b.ptr[b.size - 1] == '('))
      continue;
    if (text[i] == ')' && b.size && b.ptr[b.size - 1] == ' ') b.size--;
    kl__buf_putc(&b, space ? ' ' : text[i]);
  }
  while (b.size && b.ptr[b.size - 1] == ' ')
    b.ptr[--b.size] = '\0';
  if ((rc = kl__buf_status(&b)) < 0) goto done;
  if (b.size == 0) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                   "%s: the baseline does not define '%s'",
                   kl_case_kernel_path(c), entry);
    goto done;
  }
  *out = kl__buf_detach(&b);
done:
  kl_buf_dispose(&b);
  kl__free(params);
  kl__free(clean);
  kl__free(text);
  return rc;
}

/* ---- checks on the code, line by line
 * ------------------------------------------ */

static const char *const elisions[] = {
    "rest unchanged",    "rest of the kernel",
    "rest of the code",  "rest of code",
    "remains unchanged", "remain unchanged",
    "unchanged from",    "same as before",
    "same as above",     "as in the original",
    "existing code",     "original code",
    "omitted",           "for brevity",
    "not shown",         "elided"};
static const char *const stubs[] = {
    "todo",        "fixme",        "stub",          "not implemented",
    "placeholder", "implement me", "your code here"};

static bool contains_ci(const char *s, size_t n, const char *word) {
  size_t w = strlen(word);
  for (size_t i = 0; i + w <= n; i++) {
    size_t k = 0;
    while (k < w && tolower((unsigned char)s[i + k]) == word[k])
      k++;
    if (k < w) continue;
    /* stub words must stand alone: "stub" but not "stubborn" */
    bool alpha = isalpha((unsigned char)word[0]);
    if (alpha && ((i > 0 && kl__c_ident_char(s[i - 1])) ||
                  (i + w < n && kl__c_ident_char(s[i + w]))))
      continue;
    return true;
  }
  return false;
}

/* The comment part of a line (from a // or a block comment; in Python
 * from a # outside a string), or NULL. */
static const char *comment_part(const char *s, size_t n, size_t *len,
                                bool python) {
  char quote = 0;
  for (size_t i = 0; i < n; i++) {
    if (python) {
      if (quote) {
        if (s[i] == '\\')
          i++;
        else if (s[i] == quote)
          quote = 0;
      } else if (s[i] == '\'' || s[i] == '"') {
        quote = s[i];
      } else if (s[i] == '#') {
        *len = n - i;
        return s + i;
      }
    } else if (i + 1 < n && s[i] == '/' &&
               (s[i + 1] == '/' || s[i + 1] == '*')) {
      *len = n - i;
      return s + i;
    }
  }
  return NULL;
}

/* A line that is only dots, bare or in a comment: "...", "// ...",
 * "# ...". */
static bool dots_only(const char *s, size_t n) {
  size_t i = 0, dots = 0;
  while (i < n && (isspace((unsigned char)s[i]) || strchr("/*#", s[i])))
    i++;
  while (i < n && s[i] == '.')
    i++, dots++;
  while (i < n && (isspace((unsigned char)s[i]) || strchr("/*#", s[i])))
    i++;
  return dots >= 2 && i == n;
}

static int reject(kl_reply *r, const char *fmt, ...) KL_PRINTF(2, 3);
static int reject(kl_reply *r, const char *fmt, ...) {
  kl_buf b = KL_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  int rc = kl__buf_vprintf(&b, fmt, ap);
  va_end(ap);
  if (rc < 0 || !(r->reason = kl__buf_detach(&b))) {
    kl_buf_dispose(&b);
    return kl__error_oom();
  }
  return 0;
}

/* Elisions, stubs and non-ASCII bytes; 1 when one was found (r->reason). */
static int check_lines(kl_reply *r, const char *code, int first_line,
                       bool python) {
  int line = first_line;
  for (size_t i = 0; code[i]; line++) {
    size_t e = line_end(code, i), n = e - i;
    for (size_t k = 0; k < n; k++)
      if ((unsigned char)code[i + k] >= 0x80)
        return reject(r,
                      "line %d: a non-ASCII character in the code "
                      "(column %zu); use plain ASCII",
                      line, k + 1) < 0
                   ? -1
                   : 1;
    if (dots_only(code + i, n))
      return reject(r,
                    "line %d: an elision ('...'): send the complete "
                    "code, every line of it",
                    line) < 0
                 ? -1
                 : 1;
    size_t clen = 0;
    const char *c = comment_part(code + i, n, &clen, python);
    for (size_t k = 0; c && k < KL_ARRAY_SIZE(elisions); k++)
      if (contains_ci(c, clen, elisions[k]))
        return reject(r,
                      "line %d: an elision ('%s'): send the complete "
                      "code, every line of it",
                      line, elisions[k]) < 0
                   ? -1
                   : 1;
    for (size_t k = 0; k < KL_ARRAY_SIZE(stubs); k++)
      if (contains_ci(code + i, n, stubs[k]))
        return reject(r,
                      "line %d: a stub or unfinished marker ('%s'): send "
                      "finished code",
                      line, stubs[k]) < 0
                   ? -1
                   : 1;
    i = code[e] ? e + 1 : e;
  }
  return 0;
}

/* The memo: the first line holding "MEMO:", anywhere in the reply. */
static int take_memo(kl_reply *r, const char *t, size_t *at) {
  for (const char *p = strstr(t, "MEMO:"); p; p = strstr(p + 1, "MEMO:")) {
    const char *s = p + 5;
    s += strspn(s, " \t");
    size_t n = strcspn(s, "\r\n");
    while (n && (s[n - 1] == ' ' || s[n - 1] == '*' || s[n - 1] == '/'))
      n--;
    if (n == 0) continue;
    *at = (size_t)(p - t);
    return (r->memo = kl__strndup(s, n)) ? 0 : kl__error_oom();
  }
  return 0;
}

/* The code without a bare "MEMO: ..." line (one inside a comment stays). */
static char *code_without_memo(const char *t, const block *b) {
  kl_buf o = KL_BUF_INIT;
  kl__buf_puts(&o, "");
  for (size_t i = b->start; i < b->end;) {
    size_t e = line_end(t, i);
    if (e > b->end) e = b->end;
    size_t s = i + strspn(t + i, " \t");
    if (strncmp(t + s, "MEMO:", 5) != 0) {
      kl__buf_put(&o, t + i, e - i);
      kl__buf_putc(&o, '\n');
    }
    i = e < b->end ? e + 1 : e;
  }
  return kl__buf_detach(&o); /* NULL when a write failed */
}

/* The entry's parameter list `params` with each type parameter of its
 * template bound to the type the case's instantiation `inst` gives it
 * ("T *out" of kern<float, 4> is "float *out"): the types a launcher of
 * the case takes. A copy when the entry is no template; NULL when out of
 * memory. */
static char *bound_params(const char *params, const char *clean,
                          const char *entry, const char *inst) {
  size_t start = 0, open = 0, end = 0, nn = 0, na = 0;
  char names[32][64], args[32][128];
  if (kl__c_definition_span(clean, entry, &start, &open, &end) == 0)
    nn = kl__c_template_types(names, 32, clean + start, open - start);
  const char *lt = inst ? strchr(inst, '<') : NULL;
  if (nn && lt) na = kl__c_split_items(args, 32, lt + 1, strlen(lt + 1) - 1);
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "");
  for (const char *p = params; *p;) {
    if (!kl__c_ident_char(*p)) {
      kl__buf_putc(&b, *p++);
      continue;
    }
    const char *w = p;
    while (kl__c_ident_char(*p))
      p++;
    size_t wl = (size_t)(p - w), i = 0;
    while (i < nn && i < na &&
           !(strlen(names[i]) == wl && strncmp(names[i], w, wl) == 0))
      i++;
    if (i < nn && i < na)
      kl__buf_puts(&b, args[i]);
    else
      kl__buf_put(&b, w, wl);
  }
  return kl__buf_detach(&b);
}

int kl__launcher_params(char **out, const kl_case *c) {
  *out = NULL;
  const char *entry = kl_case_entry(c);
  kl_buf base = KL_BUF_INIT;
  int rc = kl__read_file(&base, kl_case_kernel_path(c));
  if (rc < 0) return rc;
  char *clean = kl__c_blank(base.ptr ? base.ptr : "", base.size, false);
  char *params = NULL, *bound = NULL;
  kl_buf_dispose(&base);
  if (!clean) return kl__error_oom();
  if ((rc = kl__c_definition_params(&params, clean, entry)) == 0 && !params)
    rc = kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                   "%s: the baseline does not define '%s'",
                   kl_case_kernel_path(c), entry);
  if (rc == 0 &&
      !(bound = bound_params(params, clean, entry, kl_case_shape_entry(c, 0))))
    rc = kl__error_oom();
  kl_buf b = KL_BUF_INIT;
  for (const char *p = bound; rc == 0 && *p; p++) {
    bool space = isspace((unsigned char)*p);
    if (space && (b.size == 0 || b.ptr[b.size - 1] == ' ')) continue;
    kl__buf_putc(&b, space ? ' ' : *p);
  }
  while (b.size && b.ptr[b.size - 1] == ' ')
    b.ptr[--b.size] = '\0';
  if (rc == 0 && (rc = kl__buf_status(&b)) == 0)
    *out = b.ptr ? kl__buf_detach(&b) : kl__strdup("");
  if (rc == 0 && !*out) rc = kl__error_oom();
  kl_buf_dispose(&b);
  kl__free(bound);
  kl__free(params);
  kl__free(clean);
  return rc;
}

/* ... whose first line reads like a Python module */
static size_t bare_python(const char *t, block *b) {
  static const char *const starts[] = {"import ", "from ",  "def ",  "@",
                                       "#",       "class ", "\"\"\""};
  return bare_code(t, b, starts, KL_ARRAY_SIZE(starts), false);
}

/* A python case's reply: one block defining forward at top level, taking
 * the case's inputs and inouts as positional arguments. */
static int parse_python(kl_reply *r, const char *text, const kl_case *c) {
  kl_buf base = KL_BUF_INIT, names = KL_BUF_INIT;
  int rc = kl__read_file(&base, kl_case_kernel_path(c));
  if (rc < 0) return rc;
  char *want = NULL, *got = NULL; /* want: `def forward(x, y)` */
  if ((rc = python_signature(&want, base.ptr ? base.ptr : "",
                             kl_case_kernel_path(c))) < 0)
    goto done;
  size_t ninputs = 0; /* what the worker passes: inputs and inouts */
  for (size_t i = 0; i < kl_case_param_count(c); i++) {
    kl_param_info p = KL_PARAM_INFO_INIT;
    if (kl_case_param(&p, c, i) == 0 &&
        (p.role == KL_ROLE_INPUT || p.role == KL_ROLE_INOUT))
      kl__buf_printf(&names, "%s%s", ninputs++ ? ", " : "", p.name);
  }
  kl__buf_puts(&names, "");
  if ((rc = kl__buf_status(&names)) < 0) goto done;
  block b[MAX_BLOCKS];
  size_t nb = fenced(text, b);
  if (nb == 0) nb = bare_python(text, b);
  /* a module with forward_of() takes candidates in another form too: a
   * KernelBench case's ModelNew */
  char *adapt = NULL;
  if ((rc = kl__py_def_params(&adapt, base.ptr ? base.ptr : "", "forward_of")) <
      0)
    goto done;
  bool model_new = adapt != NULL;
  kl__free(adapt);
  size_t pick = nb, defining = 0;
  for (size_t i = 0; i < nb; i++) {
    char *code = kl__strndup(text + b[i].start, b[i].end - b[i].start);
    char *params = NULL;
    if (!code || kl__py_def_params(&params, code, "forward") < 0) {
      kl__free(code);
      rc = kl__error_oom();
      goto done;
    }
    bool is_class =
        !params && model_new && kl__py_defines_class(code, "ModelNew");
    kl__free(code);
    if (!params && !is_class) continue;
    if (defining++ == 0) {
      pick = i;
      got = params; /* NULL for a ModelNew: any arity */
    } else {
      kl__free(params);
    }
  }
  size_t required = 0, most = SIZE_MAX, memo_at = 0;
  if (got) kl__py_arity(got, &required, &most);
  if ((rc = take_memo(r, text, &memo_at)) < 0) {
  } else if (nb == 0) {
    rc = reject(r, "no code: put the complete Python file in one fenced "
                   "block (```python ... ```)");
  } else if (defining == 0) {
    rc = reject(r,
                "the code defines no top-level 'forward'%s: keep "
                "'%s' (the case calls it with %s)",
                model_new ? " and no class ModelNew" : "", want, names.ptr);
  } else if (defining > 1) {
    rc = reject(r,
                "%zu code blocks define 'forward': send the Python file in "
                "one block",
                defining);
  } else if (ninputs < required || ninputs > most) {
    rc = reject(r,
                "line %d: 'forward' takes (%s); the case calls it with %zu "
                "positional argument%s (%s)",
                b[pick].line, got, ninputs, ninputs == 1 ? "" : "s", names.ptr);
  } else if (!(r->code = code_without_memo(text, &b[pick]))) {
    rc = kl__error_oom();
  } else if ((rc = check_lines(r, r->code, b[pick].line, true)) != 0) {
    rc = rc < 0 ? rc : 0;
  } else if (!r->memo) {
    rc = reject(r, "no 'MEMO:' line: add one line naming the rule or idea "
                   "this version targets");
  }
done:
  kl__free(want);
  kl__free(got);
  kl_buf_dispose(&names);
  kl_buf_dispose(&base);
  return rc;
}

/* A command case's reply: the whole candidate file in one block. Comments
 * (for the elision check) are read as '#' comments for the usual script
 * and configuration files, else as C's. */
static int parse_command(kl_reply *r, const char *text, const kl_case *c) {
  const char *path = kl_case_kernel_path(c), *name = strrchr(path, '/');
  name = name ? name + 1 : path;
  const char *ext = strrchr(name, '.');
  static const char *const hash[] = {".py",  ".sh",  ".yaml", ".yml", ".toml",
                                     ".cfg", ".ini", ".txt",  ".json"};
  bool hashes = false;
  for (size_t i = 0; ext && i < KL_ARRAY_SIZE(hash); i++)
    hashes |= strcmp(ext, hash[i]) == 0;
  block b[MAX_BLOCKS];
  size_t nb = fenced(text, b), memo_at = 0;
  int rc = take_memo(r, text, &memo_at);
  if (rc < 0) {
  } else if (nb == 0) {
    rc = reject(r, "no file: put the complete %s in one fenced block", name);
  } else if (nb > 1) {
    rc = reject(r, "%zu code blocks: send the complete %s in one block", nb,
                name);
  } else if (!(r->code = code_without_memo(text, &b[0]))) {
    rc = kl__error_oom();
  } else if ((rc = check_lines(r, r->code, b[0].line, hashes)) != 0) {
    rc = rc < 0 ? rc : 0;
  } else if (!r->memo) {
    rc = reject(r, "no 'MEMO:' line: add one line naming the idea this "
                   "version tries");
  }
  return rc;
}

int kl_reply_parse(kl_reply **out, const char *text, const kl_case *c) {
  *out = NULL;
  bool command = kl_case_backend(c) == KL_BACKEND_COMMAND;
  if (command || kl_case_backend(c) == KL_BACKEND_PYTHON) {
    kl_reply *r = kl__calloc(1, sizeof(*r));
    if (!r) return kl__error_oom();
    int rc = command ? parse_command(r, text, c) : parse_python(r, text, c);
    if (rc < 0) {
      kl_reply_free(r);
      return rc;
    }
    *out = r;
    return 0;
  }
  const char *entry = kl_case_entry(c);
  kl_buf base = KL_BUF_INIT;
  int rc = kl__read_file(&base, kl_case_kernel_path(c));
  if (rc < 0) return rc;
  kl_reply *r = kl__calloc(1, sizeof(*r));
  char *clean = base.ptr ? kl__c_blank(base.ptr, base.size, false) : NULL;
  char *want_params = NULL, *want = NULL;
  bool oom = !r || (base.ptr && !clean);
  if (!oom && clean && kl__c_definition_params(&want_params, clean, entry) < 0)
    oom = true;
  if (!oom && want_params && !(want = param_types(want_params))) oom = true;
  /* a template entry's launcher takes the types its instantiation binds */
  char *bound = NULL;
  if (!oom && want_params &&
      !(bound =
            bound_params(want_params, clean, entry, kl_case_shape_entry(c, 0))))
    oom = true;
  kl__free(clean);
  kl__free(want_params);
  kl_buf_dispose(&base);
  if (oom || !want) {
    kl__free(want);
    kl__free(bound);
    kl_reply_free(r);
    return oom ? kl__error_oom()
               : kl__error(KL_EINVALID, KL_DOMAIN_CASE,
                           "%s: the baseline does not define '%s'",
                           kl_case_kernel_path(c), entry);
  }
  /* a launcher takes the entry's parameters, then the context */
  kl_buf wl = KL_BUF_INIT;
  char *bound_types = param_types(bound), *want_launcher = NULL;
  kl__free(bound);
  if (bound_types) {
    kl__buf_printf(&wl, "%s%skl_launch_ctx*", bound_types,
                   *bound_types ? "," : "");
    want_launcher = kl__buf_detach(&wl);
  }
  kl__free(bound_types);
  if (!want_launcher) {
    kl__free(want);
    kl__free(want_launcher);
    kl_reply_free(r);
    return kl__error_oom();
  }
  block b[MAX_BLOCKS];
  size_t nb = fenced(text, b);
  if (nb == 0) nb = marked(text, b);
  if (nb == 0) nb = bare(text, b);
  /* the block that defines the entry point or a launcher */
  size_t pick = nb, defining = 0;
  char *got = NULL;
  const char *defined = entry; /* what the picked block is checked by */
  for (size_t i = 0; rc == 0 && i < nb; i++) {
    char *code = kl__c_blank(text + b[i].start, b[i].end - b[i].start, false);
    char *params = NULL, *lparams = NULL;
    if (!code || kl__c_definition_params(&params, code, entry) < 0 ||
        kl__c_definition_params(&lparams, code, KL_LAUNCHER_NAME) < 0)
      rc = kl__error_oom();
    kl__free(code);
    if (!params && !lparams) continue;
    defining++;
    if (pick == nb) {
      pick = i;
      defined = lparams ? KL_LAUNCHER_NAME : entry;
      if (!(got = param_types(lparams ? lparams : params)))
        rc = kl__error_oom();
    }
    kl__free(params);
    kl__free(lparams);
  }
  bool own_launch = strcmp(defined, KL_LAUNCHER_NAME) == 0;
  size_t memo_at = 0;
  if (rc == 0) rc = take_memo(r, text, &memo_at);
  if (rc < 0) {
  } else if (nb == 0) {
    rc = reject(r, "no code: put the complete kernel section in one fenced "
                   "block (```cuda ... ```)");
  } else if (defining == 0) {
    rc = reject(r,
                "the code defines neither '%s' (keep the entry point and "
                "its signature) nor a launcher '%s'",
                entry, KL_LAUNCHER_NAME);
  } else if (defining > 1) {
    rc = reject(r,
                "%zu code blocks define '%s' or '%s': send the kernel "
                "section in one block",
                defining, entry, KL_LAUNCHER_NAME);
  } else if (!got) {
    rc = kl__error_oom();
  } else if (strcmp(got, own_launch ? want_launcher : want) != 0) {
    rc = reject(r,
                own_launch ? "line %d: '%s' takes (%s); a launcher takes (%s): "
                             "the entry's parameters, then the context"
                           : "line %d: '%s' takes (%s); the case's signature "
                             "is (%s)",
                b[pick].line, defined, got, own_launch ? want_launcher : want);
  } else if (!(r->code = code_without_memo(text, &b[pick]))) {
    rc = kl__error_oom();
  } else if ((rc = check_lines(r, r->code, b[pick].line, false)) != 0) {
    rc = rc < 0 ? rc : 0;
  } else if (!r->memo) {
    rc = reject(r, "no 'MEMO:' line: add one line naming the rule or idea "
                   "this version targets");
  }
  kl__free(got);
  kl__free(want);
  kl__free(want_launcher);
  if (rc < 0) {
    kl_reply_free(r);
    return rc;
  }
  *out = r;
  return 0;
}
