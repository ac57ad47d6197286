/* Finding things in C and CUDA source without a compiler: comments and
 * string literals blanked out (newlines kept, so offsets and lines stay
 * true), an entry point's parameter list, and the span of its whole
 * definition. Used to check a model's reply against the baseline's
 * signature, to read a kernel's signature for a case, and to replace a
 * kernel's definition in a user's file on export. */
#include <ctype.h>
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

/* The first definition of `entry` in blanked code: the name, its '(' and
 * ')', and the '{' after them. false when there is none. */
static bool find_definition(const char *code, const char *entry,
                            const char **name, const char **lparen,
                            const char **rparen, const char **brace) {
  size_t len = strlen(entry);
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
  /* the declaration starts after the previous ';', '}' or directive line */
  size_t s = (size_t)(name - code);
  while (s > 0 && code[s - 1] != ';' && code[s - 1] != '}' &&
         !(code[s - 1] == '\n' && code[s] == '#'))
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
