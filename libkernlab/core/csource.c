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
  if (!o)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    if (o[i] == '/' && o[i + 1] == '/') {
      while (i < n && o[i] != '\n')
        o[i++] = ' ';
    } else if (o[i] == '/' && o[i + 1] == '*') {
      o[i] = o[i + 1] = ' ';
      for (i += 2; i < n && !(o[i] == '*' && o[i + 1] == '/'); i++)
        if (o[i] != '\n')
          o[i] = ' ';
      if (i < n)
        o[i] = o[i + 1] = ' ', i++;
    } else if (o[i] == '"' && keep_strings) {
      for (i++; i < n && o[i] != '"' && o[i] != '\n'; i++)
        if (o[i] == '\\')
          i++;
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

/* The parameter list of the definition of `entry` in code (comments
 * blanked): "name (" ... ")" followed by "{". *out is NULL when there is
 * none; KL_ENOMEM when the copy failed. */
int kl__c_definition_params(char **out, const char *code, const char *entry) {
  size_t len = strlen(entry);
  *out = NULL;
  for (const char *p = strstr(code, entry); p; p = strstr(p + 1, entry)) {
    if ((p > code && kl__c_ident_char(p[-1])) || kl__c_ident_char(p[len]))
      continue;
    const char *q = p + len;
    while (isspace((unsigned char)*q))
      q++;
    if (*q != '(')
      continue;
    int depth = 0;
    const char *open = q;
    for (; *q; q++) {
      depth += (*q == '(') - (*q == ')');
      if (depth == 0)
        break;
    }
    if (!*q)
      return 0;
    const char *close = q++;
    while (isspace((unsigned char)*q))
      q++;
    if (*q == '{')
      return (*out = kl__strndup(open + 1, (size_t)(close - open - 1)))
                 ? 0
                 : KL_ENOMEM;
  }
  return 0;
}

int kl__c_definition_span(const char *code, const char *entry, size_t *start,
                          size_t *open, size_t *end) {
  size_t len = strlen(entry);
  for (const char *p = strstr(code, entry); p; p = strstr(p + 1, entry)) {
    if ((p > code && kl__c_ident_char(p[-1])) || kl__c_ident_char(p[len]))
      continue;
    const char *q = p + len;
    while (isspace((unsigned char)*q))
      q++;
    if (*q != '(')
      continue;
    int depth = 0;
    for (; *q; q++) {
      depth += (*q == '(') - (*q == ')');
      if (depth == 0)
        break;
    }
    if (!*q)
      return KL_ENOTFOUND;
    q++;
    while (isspace((unsigned char)*q))
      q++;
    if (*q != '{')
      continue; /* a declaration or a call */
    /* the declaration starts after the previous ';', '}' or directive */
    size_t s = (size_t)(p - code);
    while (s > 0 && code[s - 1] != ';' && code[s - 1] != '}' &&
           !(code[s - 1] == '\n' && code[s] == '#'))
      s--;
    if (s > 0 && code[s - 1] == '\n' && code[s] == '#') {
      /* a directive line just before: start on the line after it */
      while (code[s] && code[s] != '\n')
        s++;
    }
    while (isspace((unsigned char)code[s])) /* comments are blank here */
      s++;
    size_t e = (size_t)(q - code);
    depth = 0;
    for (; code[e]; e++) {
      if (code[e] == '\'') { /* '{' and '}' as characters */
        for (e++; code[e] && code[e] != '\'' && code[e] != '\n'; e++)
          if (code[e] == '\\' && code[e + 1])
            e++;
        continue;
      }
      depth += (code[e] == '{') - (code[e] == '}');
      if (depth == 0)
        break;
    }
    if (!code[e])
      return KL_ENOTFOUND;
    *start = s;
    *open = (size_t)(q - code);
    *end = e + 1;
    return 0;
  }
  return KL_ENOTFOUND;
}
