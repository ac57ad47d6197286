/* Finding things in C and CUDA source without a compiler: comments and
 * string literals blanked out (newlines kept, so offsets and lines stay
 * true), an entry point's parameter list, and the span of its whole
 * definition. Used to check a model's reply against the baseline's
 * signature, to read a kernel's signature for a case, and to replace a
 * kernel's definition in a user's file on export.
 *
 * C++ enters through names and scopes only: an entry may be spelled
 * qualified and instantiated ("ns::kern<float, 128>") and is found by its
 * own name; a template's type parameters and an instantiation's arguments
 * are split at their top-level commas; the namespaces open at a point are
 * counted by their braces; a demangled name gives back the call a caller
 * at file scope writes. None of this parses C++: it reads what kernel
 * sources and the demangler write. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The code with comments and (unless keep_strings) string literals blanked,
 * newlines kept, so that a search for the entry point sees only code. */
char *kl__c_blank(const char *s, size_t n, bool keep_strings) {
  char *o = kl__strndup(s, n);
  if (!o) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (o[i] == '/' && o[i + 1] == '/') {
      while (i < n && o[i] != '\n')
        o[i++] = ' ';
    } else if (o[i] == '/' && o[i + 1] == '*') {
      o[i] = o[i + 1] = ' ';
      for (i += 2; i < n && !(o[i] == '*' && o[i + 1] == '/'); i++)
        if (o[i] != '\n') o[i] = ' ';
      if (i < n) o[i] = o[i + 1] = ' ', i++;
    } else if (o[i] == '"' && keep_strings) {
      for (i++; i < n && o[i] != '"' && o[i] != '\n'; i++)
        if (o[i] == '\\') i++;
    } else if (o[i] == '"') {
      for (i++; i < n && o[i] != '"' && o[i] != '\n'; i++)
        o[i] = o[i] == '\\' && i + 1 < n ? (o[i + 1] = ' ', ' ') : ' ';
    }
  }
  return o;
}

bool kl__c_ident_char(char c) {
  return isalnum((unsigned char)c) || c == '_';
}

/* An entry as a case may spell it: "kern", "ns::kern", "kern<float, 128>",
 * "::ns::kern<(Mode)1, 4u>". The template arguments are balanced in <> and
 * () and hold nothing that could end a declaration or start a comment. */
bool kl__c_entry_split(const char *entry, size_t *name_off, size_t *name_len,
                       size_t *args_off) {
  const char *p = entry;
  if (p[0] == ':' && p[1] == ':') p += 2;
  for (;;) {
    const char *w = p;
    if (isdigit((unsigned char)*p)) return false;
    while (kl__c_ident_char(*p))
      p++;
    if (p == w) return false;
    if (p[0] == ':' && p[1] == ':') {
      p += 2;
      continue;
    }
    *name_off = (size_t)(w - entry);
    *name_len = (size_t)(p - w);
    break;
  }
  *args_off = (size_t)(p - entry);
  if (!*p) return true;
  if (*p != '<') return false;
  int angle = 0, paren = 0;
  for (; *p; p++) {
    if (strchr(";{}\"#\\/\n\r`$@", *p)) return false;
    angle += (*p == '<') - (*p == '>');
    paren += (*p == '(') - (*p == ')');
    if (paren < 0 || (angle == 0 && paren == 0 && p[1])) return false;
    if (angle == 0) break;
  }
  return *p == '>' && angle == 0 && paren == 0 && !p[1];
}

bool kl__c_entry_valid(const char *entry) {
  size_t off, len, args;
  return entry && kl__c_entry_split(entry, &off, &len, &args);
}

char *kl__c_entry_function(const char *entry) {
  size_t off, len, args;
  if (!kl__c_entry_split(entry, &off, &len, &args)) args = strlen(entry);
  return kl__strndup(entry, args);
}

char *kl__c_entry_name(const char *entry) {
  size_t off, len, args;
  if (!kl__c_entry_split(entry, &off, &len, &args))
    return kl__strndup(entry, strlen(entry));
  return kl__strndup(entry + off, len);
}

int kl__c_entry_renamed(kl_buf *out, const char *entry, const char *prefix,
                        bool outer) {
  size_t off, len, args;
  if (!kl__c_entry_split(entry, &off, &len, &args) || outer)
    off = entry[0] == ':' && entry[1] == ':' ? 2 : 0;
  kl__buf_put(out, entry, off);
  kl__buf_puts(out, prefix);
  kl__buf_puts(out, entry + off);
  return kl__buf_status(out);
}

/* The first definition of `entry` in blanked code: the name, its '(' and
 * ')', and the '{' after them. false when there is none. */
static bool find_definition(const char *code, const char *spelled,
                            const char **name, const char **lparen,
                            const char **rparen, const char **brace) {
  /* "ns::kern<float>" is defined as "kern(" (in its namespace, or
   * "ns::kern(" out of line) */
  size_t off = 0, len = strlen(spelled), args = 0;
  if (kl__c_entry_split(spelled, &off, &len, &args)) spelled += off;
  char entry[256];
  if (len >= sizeof entry) return false;
  memcpy(entry, spelled, len);
  entry[len] = '\0';
  for (const char *p = strstr(code, entry); p; p = strstr(p + 1, entry)) {
    if ((p > code && kl__c_ident_char(p[-1])) || kl__c_ident_char(p[len]))
      continue;
    const char *q = p + len;
    while (isspace((unsigned char)*q))
      q++;
    if (*q != '(') continue;
    const char *open = q;
    int depth = 0;
    for (; *q; q++) {
      depth += (*q == '(') - (*q == ')');
      if (depth == 0) break;
    }
    if (!*q) return false;
    const char *close = q++;
    while (isspace((unsigned char)*q))
      q++;
    if (*q != '{') continue; /* a declaration or a call */
    *name = p, *lparen = open, *rparen = close, *brace = q;
    return true;
  }
  return false;
}

int kl__c_definition_params(char **out, const char *code, const char *entry) {
  const char *name, *open, *close, *brace;
  *out = NULL;
  if (!find_definition(code, entry, &name, &open, &close, &brace)) return 0;
  *out = kl__strndup(open + 1, (size_t)(close - open - 1));
  return *out ? 0 : KL_ENOMEM;
}

int kl__c_defines(bool *out, const char *text, const char *name) {
  *out = false;
  char *clean = kl__c_blank(text, strlen(text), false), *params = NULL;
  if (!clean) return kl__error_oom();
  int rc = kl__c_definition_params(&params, clean, name);
  *out = params != NULL;
  kl__free(params);
  kl__free(clean);
  return rc;
}

int kl__c_definition_span(const char *code, const char *entry, size_t *start,
                          size_t *open, size_t *end) {
  const char *name, *lparen, *rparen, *brace;
  if (!find_definition(code, entry, &name, &lparen, &rparen, &brace))
    return KL_ENOTFOUND;
  /* the declaration starts after the previous ';', '{' (a namespace's),
   * '}' or directive line */
  size_t s = (size_t)(name - code);
  while (s > 0 && code[s - 1] != ';' && code[s - 1] != '}' &&
         code[s - 1] != '{' && !(code[s - 1] == '\n' && code[s] == '#'))
    s--;
  if ((s == 0 || code[s - 1] == '\n') && code[s] == '#')
    while (code[s] && code[s] != '\n') /* start on the line after it */
      s++;
  while (isspace((unsigned char)code[s])) /* comments are blank here */
    s++;
  size_t e = (size_t)(brace - code);
  for (int depth = 0; code[e]; e++) {
    if (code[e] == '\'') { /* '{' and '}' as characters */
      for (e++; code[e] && code[e] != '\'' && code[e] != '\n'; e++)
        if (code[e] == '\\' && code[e + 1]) e++;
      continue;
    }
    depth += (code[e] == '{') - (code[e] == '}');
    if (depth == 0) break;
  }
  if (!code[e]) return KL_ENOTFOUND;
  *start = s;
  *open = (size_t)(brace - code);
  *end = e + 1;
  return 0;
}

int kl__c_scopes(const char *clean, size_t at, kl__c_scope *out, int max) {
  enum { DEPTH = 64 };
  kl__c_scope open[DEPTH];
  bool scope[DEPTH] = {false};
  int depth = 0, n = 0;
  size_t head = 0; /* where the declaration being read starts */
  for (size_t i = 0; i < at && clean[i]; i++) {
    char ch = clean[i];
    if (ch == '{') {
      size_t a = head;
      for (;;) { /* past blanks and directive lines */
        while (a < i && isspace((unsigned char)clean[a]))
          a++;
        if (a >= i || clean[a] != '#') break;
        while (a < i && clean[a] != '\n')
          a++;
      }
      bool ns = strncmp(clean + a, "namespace", 9) == 0 ||
                strncmp(clean + a, "inline namespace", 16) == 0 ||
                strncmp(clean + a, "extern", 6) == 0;
      if (depth < DEPTH) {
        scope[depth] = ns;
        open[depth].head = a;
        open[depth].brace = i;
      }
      depth++;
    } else if (ch == '}' && depth > 0) {
      depth--;
    }
    if (ch == ';' || ch == '{' || ch == '}') head = i + 1;
  }
  for (int d = 0; d < depth && d < DEPTH; d++)
    if (scope[d]) {
      if (out && n < max) out[n] = open[d];
      n++;
    }
  return n;
}

/* Top-level comma-separated items of text[0..n) (inside <> and () commas
 * are the items' own), each trimmed; at most max. */
size_t kl__c_split_items(char items[][128], size_t max, const char *text,
                         size_t n) {
  size_t count = 0, from = 0;
  int depth = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n)
      depth += (text[i] == '<' || text[i] == '(') -
               (text[i] == '>' || text[i] == ')');
    if (i < n && !(text[i] == ',' && depth == 0)) continue;
    size_t a = from, b = i;
    while (a < b && isspace((unsigned char)text[a]))
      a++;
    while (b > a && isspace((unsigned char)text[b - 1]))
      b--;
    if (b > a && count < max) {
      size_t len = b - a < 127 ? b - a : 127;
      memcpy(items[count], text + a, len);
      items[count++][len] = '\0';
    }
    from = i + 1;
  }
  return count;
}

/* The type parameters of a template definition (`template <typename T,
 * int B = 4>` at decl[0..n)): for each parameter its name, "" for those
 * that are not types. 0 when the definition is no template. */
size_t kl__c_template_types(char names[][64], size_t max, const char *decl,
                            size_t n) {
  size_t i = 0;
  while (i < n && isspace((unsigned char)decl[i]))
    i++;
  if (n - i < 8 || strncmp(decl + i, "template", 8) != 0) return 0;
  for (i += 8; i < n && decl[i] != '<'; i++)
    ;
  size_t open = i, close = i;
  for (int angle = 0; close < n; close++) {
    angle += (decl[close] == '<') - (decl[close] == '>');
    if (angle == 0) break;
  }
  if (close >= n) return 0;
  char items[32][128];
  size_t k = kl__c_split_items(items, 32, decl + open + 1, close - open - 1);
  for (size_t j = 0; j < k && j < max; j++) {
    char *eq = strchr(items[j], '=');
    if (eq) *eq = '\0';
    bool type = strncmp(items[j], "typename", 8) == 0 ||
                strncmp(items[j], "class", 5) == 0;
    /* the name: the last identifier */
    size_t e = strlen(items[j]);
    while (e && !kl__c_ident_char(items[j][e - 1]))
      e--;
    size_t b = e;
    while (b && kl__c_ident_char(items[j][b - 1]))
      b--;
    snprintf(names[j], 64, "%.*s", type ? (int)(e - b) : 0, items[j] + b);
  }
  return k < max ? k : max;
}

bool kl__c_call_name(char *out, size_t n, const char *demangled) {
  /* "(anonymous namespace)::" names nothing a caller in the file spells */
  static const char anon[] = "(anonymous namespace)::";
  char *t = kl__calloc(strlen(demangled) + 1, 1);
  if (!t) return false;
  size_t tl = 0;
  for (const char *p = demangled; *p;)
    if (strncmp(p, anon, sizeof anon - 1) == 0)
      p += sizeof anon - 1;
    else
      t[tl++] = *p++;
  /* the parameter list's '(' is the first outside template arguments; the
   * name starts after the last space before it there ("void kern<...>") */
  size_t start = 0, i = 0;
  for (int angle = 0; i < tl; i++) {
    angle += (t[i] == '<') - (t[i] == '>');
    if (angle == 0 && t[i] == '(') break;
    if (angle == 0 && t[i] == ' ') start = i + 1;
  }
  bool ok = i > start && i - start < n;
  if (ok) {
    memcpy(out, t + start, i - start);
    out[i - start] = '\0';
  }
  kl__free(t);
  return ok;
}

/* From the '{' at `open`, one past its matching '}', or 0. */
static size_t matching_brace(const char *code, size_t open) {
  int depth = 0;
  for (size_t e = open; code[e]; e++) {
    depth += (code[e] == '{') - (code[e] == '}');
    if (depth == 0) return e + 1;
  }
  return 0;
}

const char *kl__c_ident_before(const char *start, const char *at, size_t *len) {
  while (at > start && isspace((unsigned char)at[-1]))
    at--;
  const char *b = at;
  while (b > start && kl__c_ident_char(b[-1]))
    b--;
  *len = (size_t)(at - b);
  return b;
}

bool kl__c_struct_body(const char *code, const char *name, size_t *open,
                       size_t *close) {
  size_t n = strlen(name);
  for (const char *p = strstr(code, name); p && n; p = strstr(p + 1, name)) {
    if ((p > code && kl__c_ident_char(p[-1])) || kl__c_ident_char(p[n]))
      continue;
    size_t wl;
    const char *w = kl__c_ident_before(code, p, &wl);
    bool tagged = (wl == 6 && strncmp(w, "struct", 6) == 0) ||
                  (wl == 5 && strncmp(w, "class", 5) == 0);
    if (tagged) { /* struct NAME [final] [: bases] { */
      const char *q = p + n;
      while (isspace((unsigned char)*q))
        q++;
      if (strncmp(q, "final", 5) == 0 && !kl__c_ident_char(q[5])) q += 5;
      while (isspace((unsigned char)*q))
        q++;
      if (*q == ':' && q[1] != ':') /* bases */
        while (*q && *q != '{' && *q != ';' && *q != '=' && *q != '(')
          q++;
      size_t end = *q == '{' ? matching_brace(code, (size_t)(q - code)) : 0;
      if (!end) continue;
      *open = (size_t)(q - code);
      *close = end - 1;
      return true;
    }
    /* typedef struct [TAG] { ... } NAME; */
    const char *q = p + n;
    while (isspace((unsigned char)*q))
      q++;
    const char *b = p;
    while (b > code && isspace((unsigned char)b[-1]))
      b--;
    if (*q != ';' || b == code || b[-1] != '}') continue;
    int depth = 0;
    const char *o = b - 1;
    for (; o >= code; o--) {
      depth += (*o == '}') - (*o == '{');
      if (depth == 0) break;
    }
    if (o < code) continue;
    const char *t = kl__c_ident_before(code, o, &wl); /* the tag, or struct */
    if (!(wl == 6 && strncmp(t, "struct", 6) == 0))
      t = kl__c_ident_before(code, t, &wl);
    if (!(wl == 6 && strncmp(t, "struct", 6) == 0)) continue;
    t = kl__c_ident_before(code, t, &wl);
    if (!(wl == 7 && strncmp(t, "typedef", 7) == 0)) continue;
    *open = (size_t)(o - code);
    *close = (size_t)(b - 1 - code);
    return true;
  }
  return false;
}

bool kl__c_struct_statement(const char *code, const char *name, size_t *start,
                            size_t *end) {
  size_t open, close;
  if (!kl__c_struct_body(code, name, &open, &close)) return false;
  size_t s = open, e = close;
  while (s > 0 && !strchr(";{}", code[s - 1]) &&
         !(code[s - 1] == '\n' && code[s] == '#'))
    s--;
  if ((s == 0 || code[s - 1] == '\n') && code[s] == '#')
    while (code[s] && code[s] != '\n') /* start on the line after it */
      s++;
  while (isspace((unsigned char)code[s]))
    s++;
  while (code[e] && code[e] != ';')
    e++;
  *start = s;
  *end = e + (code[e] == ';');
  return true;
}

char *kl__c_type_name(const char *spelling) {
  /* the last identifier before any template arguments */
  size_t lt = strcspn(spelling, "<");
  size_t e = lt;
  while (e && !kl__c_ident_char(spelling[e - 1]))
    e--;
  size_t b = e;
  while (b && kl__c_ident_char(spelling[b - 1]))
    b--;
  return kl__strndup(spelling + b, e - b);
}
