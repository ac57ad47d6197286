/* A kernel's signature, read from its source for kl_case_from_observation:
 * the parameter list of the entry's definition (comments blanked) split
 * into arguments, each a number type kernlab knows (through the user's
 * stated types and the source's typedefs and aliases) or a pointer to one,
 * and a struct passed by value split into its fields at their offsets by
 * the C layout rules, so each can be checked against the bytes the driver
 * saw (case_from.c). */
#define _GNU_SOURCE
#include <stddef.h>
#include <ctype.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>

#include "signature.h"

void kl__sig_dispose(signature *g) {
  kl__free(g->ps);
  kl__free(g->as);
  memset(g, 0, sizeof *g);
}

static const struct {
  const char *spelling; /* tokens joined by one space, const removed */
  kl_dtype dtype;
} type_names[] = {{"float", KL_DTYPE_F32},
                  {"double", KL_DTYPE_F64},
                  {"__half", KL_DTYPE_F16},
                  {"half", KL_DTYPE_F16},
                  {"__nv_bfloat16", KL_DTYPE_BF16},
                  {"nv_bfloat16", KL_DTYPE_BF16},
                  {"int", KL_DTYPE_I32},
                  {"signed", KL_DTYPE_I32},
                  {"signed int", KL_DTYPE_I32},
                  {"int32_t", KL_DTYPE_I32},
                  {"unsigned", KL_DTYPE_U32},
                  {"unsigned int", KL_DTYPE_U32},
                  {"uint32_t", KL_DTYPE_U32},
                  {"long", KL_DTYPE_I64},
                  {"long int", KL_DTYPE_I64},
                  {"long long", KL_DTYPE_I64},
                  {"long long int", KL_DTYPE_I64},
                  {"int64_t", KL_DTYPE_I64},
                  {"ptrdiff_t", KL_DTYPE_I64},
                  {"unsigned long", KL_DTYPE_U64},
                  {"unsigned long long", KL_DTYPE_U64},
                  {"uint64_t", KL_DTYPE_U64},
                  {"size_t", KL_DTYPE_U64},
                  {"short", KL_DTYPE_I16},
                  {"int16_t", KL_DTYPE_I16},
                  {"unsigned short", KL_DTYPE_U16},
                  {"uint16_t", KL_DTYPE_U16},
                  {"char", KL_DTYPE_I8},
                  {"signed char", KL_DTYPE_I8},
                  {"int8_t", KL_DTYPE_I8},
                  {"unsigned char", KL_DTYPE_U8},
                  {"uint8_t", KL_DTYPE_U8},
                  {"bool", KL_DTYPE_U8}};

int kl__sig_line_of(const char *text, size_t off) {
  int line = 1;
  for (size_t i = 0; i < off && text[i]; i++)
    line += text[i] == '\n';
  return line;
}

/* What a type name means: a number type kernlab knows, through the types
 * the user stated ("floatX=f32") and the source's typedefs and using
 * aliases (a chain of at most 8; an alias may add pointer levels or const).
 */
bool kl__sig_resolve_type(const char *base, kl_dtype *dt, int *stars,
                          bool *is_const, const kl__src_types *st,
                          const char *const *types) {
  char cur[256];
  snprintf(cur, sizeof cur, "%s", base);
  for (int hop = 0; hop < 8; hop++) {
    for (size_t t = 0; t < KL_ARRAY_SIZE(type_names); t++)
      if (strcmp(cur, type_names[t].spelling) == 0) {
        *dt = type_names[t].dtype;
        return true;
      }
    for (size_t i = 0; types && types[i]; i++) {
      const char *eq = strchr(types[i], '=');
      if (eq && strlen(cur) == (size_t)(eq - types[i]) &&
          strncmp(types[i], cur, strlen(cur)) == 0)
        return kl_dtype_parse(dt, eq + 1) == 0 || (kl_error_clear(), false);
    }
    const char *a = kl__src_types_alias(st, cur);
    if (!a) return false;
    /* the alias's words, without const and volatile, one space apart */
    char next[256] = "";
    size_t nl = 0;
    for (const char *p = a; *p;) {
      if (kl__c_ident_char(*p)) {
        const char *w = p;
        while (kl__c_ident_char(*p))
          p++;
        size_t wn = (size_t)(p - w);
        if (wn == 5 && strncmp(w, "const", 5) == 0) {
          *is_const = true;
        } else if (!(wn == 8 && strncmp(w, "volatile", 8) == 0) &&
                   nl + wn + 2 < sizeof next) {
          nl += (size_t)snprintf(next + nl, sizeof next - nl, "%s%.*s",
                                 nl ? " " : "", (int)wn, w);
        }
      } else {
        *stars += *p == '*';
        p++;
      }
    }
    if (!nl || strcmp(next, cur) == 0) return false;
    snprintf(cur, sizeof cur, "%s", next);
  }
  return false;
}

/* One declaration `text[0..len)` (a parameter, or one declarator of a
 * member): its name (the last word), its type's other words without
 * qualifiers (`base`: empty for a later declarator of a member, `*b` of
 * `float *a, *b`), its pointer levels and const. */
static bool declaration(const char *text, size_t len, char *name, size_t nn,
                        char *base, size_t bn, int *stars, bool *is_const) {
  char words[16][64];
  memset(words, 0, sizeof words);
  int nw = 0;
  *stars = 0;
  for (size_t i = 0; i < len;) {
    if (kl__c_ident_char(text[i])) {
      size_t k = 0;
      while (i < len && kl__c_ident_char(text[i])) {
        if (k < 63 && nw < 16) words[nw][k++] = text[i];
        i++;
      }
      if (i + 1 < len && text[i] == ':' && text[i + 1] == ':') {
        i += 2; /* a qualifier: std::size_t is size_t */
        continue;
      }
      if (nw < 16) words[nw++][k] = '\0';
    } else if (text[i] == ':' && i + 1 < len && text[i + 1] == ':') {
      i += 2; /* ::size_t */
    } else {
      *stars += text[i] == '*' || text[i] == '[';
      i++;
    }
  }
  if (nw < 1) return false;
  snprintf(name, nn, "%s", words[nw - 1]);
  for (int w = 0; w < nw - 1; w++) {
    if (strcmp(words[w], "const") == 0) {
      *is_const = true;
      continue;
    }
    if (strncmp(words[w], "__restrict", 10) == 0 ||
        strcmp(words[w], "restrict") == 0 ||
        strcmp(words[w], "volatile") == 0 || strcmp(words[w], "struct") == 0 ||
        strcmp(words[w], "class") == 0)
      continue;
    size_t bl = strlen(base);
    snprintf(base + bl, bn - bl, "%s%s", bl ? " " : "", words[w]);
  }
  return true;
}

static sig_param *new_param(signature *g) {
  if (KL__GROW(g->ps, g->pcap, g->np + 1) < 0) return NULL;
  sig_param *p = &g->ps[g->np++];
  memset(p, 0, sizeof *p);
  p->arg = g->na - 1;
  return p;
}

/* The members of struct `body` as fields of argument g->as[na-1]: scalars
 * and single pointers of the types a case knows, laid out by the C rules
 * (each at a multiple of its size; the struct a multiple of its largest). */
static int struct_fields(signature *g, const char *body, const char *path,
                         int line, const kl__src_types *st,
                         const char *const *types) {
  sig_arg *a = &g->as[g->na - 1];
  char *text = kl__strdup(body);
  if (!text) return kl__error_oom();
  /* member functions' bodies and access labels are not members */
  for (char *q = text; *q; q++)
    if (*q == '{') {
      int depth = 0;
      char *e = q;
      for (; *e; e++) {
        depth += (*e == '{') - (*e == '}');
        if (depth == 0) break;
      }
      memset(q, ' ', (size_t)(e - q) + (*e != '\0'));
      *q = ';'; /* it ends the function's declaration */
      if (!*e) break;
    }
  static const char *const labels[] = {"public", "private", "protected"};
  for (size_t k = 0; k < 3; k++)
    for (char *q = strstr(text, labels[k]); q; q = strstr(q + 1, labels[k])) {
      char *c = q + strlen(labels[k]);
      while (isspace((unsigned char)*c))
        c++;
      if ((q == text || !kl__c_ident_char(q[-1])) && *c == ':' && c[1] != ':')
        memset(q, ' ', (size_t)(c - q) + 1);
    }
  int rc = 0;
  uint32_t at = 0, align = 1;
  a->first = g->np;
  for (char *decl = text; rc == 0 && *decl;) {
    size_t len = strcspn(decl, ";");
    char *d = decl;
    decl += len + (decl[len] == ';');
    if (strspn(d, " \t\r\n") >= len) continue;
    d[len] = '\0';
    if (strchr(d, '(') || strstr(d, "static") || strstr(d, "using") ||
        strstr(d, "typedef") || strstr(d, "friend"))
      continue; /* a function, or not a member of each value */
    char base[256] = "";
    bool is_const = false;
    for (char *item = d; rc == 0 && item;) {
      char *comma = strchr(item, ',');
      if (comma) *comma = '\0';
      char *init = strchr(item, '='); /* a default member initialiser */
      if (init) *init = '\0';
      bool first = item == d; /* the declaration's type is written here */
      while (isspace((unsigned char)*item))
        item++;
      for (size_t il = strlen(item);
           il && isspace((unsigned char)item[il - 1]);)
        item[--il] = '\0';
      char fname[64], words[256] = "";
      int stars = 0;
      if (strchr(item, ':') && !strstr(item, "::"))
        rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                          "struct %s: a bit-field ('%s') is not a field a "
                          "case can describe",
                          a->type, item);
      else if (strchr(item, '[') || strchr(item, '&'))
        rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                          "struct %s: member '%s' is an array or a "
                          "reference; a case describes scalars and single "
                          "pointers",
                          a->type, item);
      else if (!declaration(item, strlen(item), fname, sizeof fname, words,
                            sizeof words, &stars, &is_const))
        rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                          "struct %s: cannot read member '%s'", a->type, item);
      if (rc < 0) break;
      if (first) snprintf(base, sizeof base, "%s", words);
      sig_param *p = new_param(g);
      if (!p) {
        rc = kl__error_oom();
        break;
      }
      snprintf(p->name, sizeof p->name, "%.31s.%.31s", a->name, fname);
      snprintf(p->type, sizeof p->type, "%.127s", base);
      p->is_const = is_const;
      if (!kl__sig_resolve_type(base, &p->dtype, &stars, &p->is_const, st,
                                types) ||
          stars > 1)
        rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                          "struct %s: member '%s' has type '%s%s', which a "
                          "case cannot describe (numbers and single "
                          "pointers to numbers; nested structs are not "
                          "read)",
                          a->type, fname, base, stars ? " *" : "");
      if (rc < 0) break;
      p->pointer = stars == 1;
      uint32_t size = p->pointer ? 8 : (uint32_t)kl_dtype_size(p->dtype);
      at = (at + size - 1) / size * size;
      p->at = at;
      at += size;
      if (size > align) align = size;
      item = comma ? comma + 1 : NULL;
    }
  }
  kl__free(text);
  a->count = g->np - a->first;
  a->size = (at + align - 1) / align * align;
  if (rc == 0 && a->count == 0)
    rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                      "struct %s has no member a case can describe", a->type);
  return rc;
}

/* A struct type's members, through aliases: NULL when `base` names none. */
static const char *struct_body(const char *base, const kl__src_types *st) {
  char cur[256];
  snprintf(cur, sizeof cur, "%s", base);
  for (int hop = 0; hop < 8; hop++) {
    const char *body = kl__src_types_struct(st, cur);
    if (body) return body;
    const char *a = kl__src_types_alias(st, cur);
    if (!a) return NULL;
    while (isspace((unsigned char)*a))
      a++;
    if (strncmp(a, "struct ", 7) == 0) a += 7;
    snprintf(cur, sizeof cur, "%s", a);
    size_t n = strlen(cur);
    while (n && isspace((unsigned char)cur[n - 1]))
      cur[--n] = '\0';
  }
  return NULL;
}

/* Split "const float *__restrict__ x, int n, Params p" into the kernel's
 * arguments and their params (a struct's fields each one). */
int kl__sig_parse(signature *g, const char *params, const char *path, int line,
                  const kl__src_types *st, const char *const *types) {
  memset(g, 0, sizeof *g);
  const char *p = params;
  int rc = 0;
  while (rc == 0 && strspn(p, " \t\r\n") < strlen(p)) {
    size_t len = strcspn(p, ",");
    if (KL__GROW(g->as, g->acap, g->na + 1) < 0) {
      rc = KL_ENOMEM;
      break;
    }
    sig_arg *a = &g->as[g->na++];
    memset(a, 0, sizeof *a);
    a->first = g->np;
    a->count = 1;
    char written[128];
    size_t tl = 0;
    for (size_t i = 0; i < len && tl < sizeof written - 1; i++)
      if (!isspace((unsigned char)p[i]) || (tl && written[tl - 1] != ' '))
        written[tl++] = isspace((unsigned char)p[i]) ? ' ' : p[i];
    while (tl && written[tl - 1] == ' ')
      tl--;
    written[tl] = '\0';
    char name[64], base[256] = "";
    int stars = 0;
    bool is_const = false;
    if (!declaration(p, len, name, sizeof name, base, sizeof base, &stars,
                     &is_const) ||
        !base[0]) {
      rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                        "parameter %zu ('%s'): a case describes scalars, "
                        "single pointers and structs, with a name",
                        g->na, written);
      break;
    }
    snprintf(a->name, sizeof a->name, "%s", name);
    kl_dtype dt;
    int st_stars = stars;
    bool st_const = is_const;
    const char *body = NULL;
    if (!kl__sig_resolve_type(base, &dt, &st_stars, &st_const, st, types) &&
        !stars && (body = struct_body(base, st))) {
      a->is_struct = true;
      /* the spelling a harness declares it with: as written, less const */
      const char *w = written;
      if (strncmp(w, "const ", 6) == 0) w += 6;
      size_t wl = strlen(w) - strlen(name);
      snprintf(a->type, sizeof a->type, "%.*s", (int)wl, w);
      while (wl && a->type[wl - 1] == ' ')
        a->type[--wl] = '\0';
      rc = struct_fields(g, body, path, line, st, types);
    } else {
      sig_param *sp = new_param(g);
      if (!sp) {
        rc = kl__error_oom();
        break;
      }
      snprintf(sp->name, sizeof sp->name, "%s", name);
      snprintf(sp->type, sizeof sp->type, "%s", written);
      sp->is_const = is_const;
      if (!kl__sig_resolve_type(base, &sp->dtype, &stars, &sp->is_const, st,
                                types))
        rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                          "parameter '%s' has type '%s', which a case cannot "
                          "describe (numbers, pointers to numbers and "
                          "structs of them passed by value; a typedef or "
                          "using alias in the source or its local headers "
                          "is followed, or state it with --type %s=DTYPE)",
                          name, base, base);
      else if (stars > 1)
        rc = kl__error_at(KL_EINVALID, KL_DOMAIN_CASE, path, line, 1, NULL,
                          "parameter %zu ('%s'): a case describes scalars "
                          "and single pointers, with a name",
                          g->na, written);
      sp->pointer = stars == 1;
    }
    p += len;
    if (*p == ',') p++;
  }
  if (rc < 0) kl__sig_dispose(g);
  return rc;
}
