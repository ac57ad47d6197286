/* Rule files: a YAML list of {id, severity, when, finding, action, skill,
 * group}, loaded into a rule set.
 *
 * Like the case loader, this walks the position-keeping YAML tree, checks
 * everything it can and records a located diagnostic for each problem
 * before giving up, so one run shows every error of a file: YAML syntax,
 * missing or unknown keys, bad severities and ids, expression and template
 * syntax (with a caret), metric names the catalog does not know (with a
 * did-you-mean), skills that do not exist, ids given twice. Positions
 * inside multi-line or folded scalars are mapped back to the file
 * (kl__yaml_locate). A file with errors leaves the set untouched; a rule
 * whose id is already in the set replaces that rule (a default one, or one
 * from an earlier file), while a default file may not repeat a default id.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../core/yaml_tree.h"
#include "../expr/expr_internal.h"
#include "kernlab/case.h"
#include "rules_internal.h"

typedef struct loader {
  kl_rules *rs;
  const char *path, *text;
  bool defaults;
  kl__diag_list diags;
  rule *rules; /* what this file defines */
  size_t count;
} loader;

static void err_at(loader *ld, int line, int column, const char *fmt, ...)
    KL_PRINTF(4, 5);
static void err_at(loader *ld, int line, int column, const char *fmt, ...) {
  char *snippet = kl__snippet(ld->text, line, column);
  va_list ap;
  va_start(ap, fmt);
  kl__diag_addv(&ld->diags, KL_EINVALID, KL_DOMAIN_NONE, ld->path, line, column,
                snippet, fmt, ap);
  va_end(ap);
  kl__free(snippet);
}

#define err(ld, n, ...) err_at(ld, (n)->line, (n)->column, __VA_ARGS__)

/* The file position of byte `offset` of scalar n's text. */
static void locate(const loader *ld, const ynode *n, size_t offset, int *line,
                   int *column) {
  kl__yaml_locate(n, ld->text, offset, line, column);
}

static void rule_clear(rule *r) {
  kl__free(r->id);
  kl__free(r->when_src);
  kl__free(r->finding_src);
  kl__free(r->action_src);
  kl__free(r->skill);
  kl__free(r->group);
  kl__free(r->path);
  kl_expr_free(r->when);
  kl__template_free(r->finding);
  kl__template_free(r->action);
  memset(r, 0, sizeof(*r));
}

/* ---- metric names -----------------------------------------------------------
 */

/* unit__counter[.rollup...]: the shape of a raw CUPTI metric name */
static bool cupti_shaped(const char *s) {
  const char *sep = strstr(s, "__");
  if (!sep || sep == s || !sep[2]) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
          *p == '.'))
      return false;
  return true;
}

/* A name the catalog knows, or a raw CUPTI name not a typo away from one. */
static void check_name(loader *ld, const char *name, int line, int column) {
  size_t ncat;
  const kl_metric_info *cat = kl_metric_catalog(&ncat);
  if (kl_metric_find(name)) return;
  const char **cands = kl__calloc(2 * ncat, sizeof(*cands));
  if (!cands) {
    ld->diags.oom = true;
    return;
  }
  size_t k = 0;
  bool raw = strstr(name, "__") != NULL;
  for (size_t i = 0; i < ncat; i++) {
    if (!raw) cands[k++] = cat[i].name;
    if (cat[i].ncu_name) cands[k++] = cat[i].ncu_name;
  }
  const char *near = kl__suggest(name, cands, k);
  kl__free(cands);
  if (raw && cupti_shaped(name) && !near)
    return; /* collected when a --set asks for it */
  if (near)
    err_at(ld, line, column, "unknown metric '%s' (did you mean '%s'?)", name,
           near);
  else
    err_at(ld, line, column,
           "unknown metric '%s': not in the catalog (kl profile "
           "--list-metrics) nor a CUPTI name like dram__bytes_read.sum",
           name);
}

/* Check every name of an expression that starts at byte `base` of scalar
 * n's text. */
static void check_names(loader *ld, const ynode *n, const char *src,
                        size_t base, const kl_expr_node *e) {
  if (!e) return;
  if (e->kind == NODE_NAME) {
    int line, column;
    locate(ld, n, base + kl__text_offset(src, e->line, e->column), &line,
           &column);
    check_name(ld, e->name, line, column);
  }
  check_names(ld, n, src, base, e->left);
  check_names(ld, n, src, base, e->right);
  for (size_t i = 0; i < e->nargs; i++)
    check_names(ld, n, src, base, e->args[i]);
}

/* ---- fields
 * ------------------------------------------------------------------ */

static const ynode *map_get(const ynode *map, const char *key) {
  for (size_t i = 0; i < map->count; i++)
    if (strcmp(map->pairs[i].key->value, key) == 0) return map->pairs[i].value;
  return NULL;
}

static const char *text_field(loader *ld, const ynode *map, const char *key,
                              const char *id, bool required) {
  const ynode *n = map_get(map, key);
  if (!n) {
    if (required) err(ld, map, "rule '%s' is missing '%s'", id ? id : "?", key);
    return NULL;
  }
  if (n->kind != YNODE_SCALAR) {
    err(ld, n, "'%s' must be text, not %s", key, kl__yaml_kind_name(n));
    return NULL;
  }
  if (!n->value[0]) {
    err(ld, n, "'%s' is empty", key);
    return NULL;
  }
  return n->value;
}

static char *dup(loader *ld, const char *s) {
  char *p = s ? kl__strdup(s) : NULL;
  if (s && !p) ld->diags.oom = true;
  return p;
}

static bool valid_id(const char *s) {
  if (!(s[0] >= 'a' && s[0] <= 'z')) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
      return false;
  return true;
}

static void read_when(loader *ld, const ynode *map, rule *r) {
  const ynode *n = map_get(map, "when");
  if (!text_field(ld, map, "when", r->id, true)) return;
  kl_expr *e;
  int rc = kl_expr_compile(&e, n->value, NULL);
  if (rc == KL_ENOMEM) {
    ld->diags.oom = true;
    return;
  }
  if (rc < 0) {
    const kl_error *x = kl_error_last();
    int line, column;
    locate(ld, n, kl__text_offset(n->value, x->line, x->column), &line,
           &column);
    err_at(ld, line, column, "when: %s", x->text);
    return;
  }
  check_names(ld, n, n->value, 0, kl__expr_root(e));
  r->when = e;
  r->when_src = dup(ld, n->value);
}

static kl__template *read_template(loader *ld, const ynode *map,
                                   const char *key, rule *r, char **src) {
  const ynode *n = map_get(map, key);
  if (!text_field(ld, map, key, r->id, true)) return NULL;
  kl__template *t;
  tpl_error te;
  int rc = kl__template_compile(&t, n->value, &te);
  if (rc == KL_ENOMEM) {
    ld->diags.oom = true;
    return NULL;
  }
  int line, column;
  if (rc < 0) {
    locate(ld, n, te.offset, &line, &column);
    err_at(ld, line, column, "%s: %s", key, te.message);
    return NULL;
  }
  for (size_t i = 0; i < t->count; i++)
    if (t->parts[i].expr)
      check_names(ld, n, kl_expr_source(t->parts[i].expr), t->parts[i].offset,
                  kl__expr_root(t->parts[i].expr));
  *src = dup(ld, n->value);
  return t;
}

static const char *const rule_keys[] = {"id",     "severity", "when", "finding",
                                        "action", "skill",    "group"};

static void read_rule(loader *ld, const ynode *map, rule *r) {
  for (size_t i = 0; i < map->count; i++) {
    const ynode *k = map->pairs[i].key;
    bool known = false;
    for (size_t j = 0; j < KL_ARRAY_SIZE(rule_keys); j++)
      known |= strcmp(k->value, rule_keys[j]) == 0;
    const char *near =
        known ? NULL
              : kl__suggest(k->value, rule_keys, KL_ARRAY_SIZE(rule_keys));
    if (!known)
      err(ld, k, "unknown key '%s' in a rule%s%s%s", k->value,
          near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
  }
  r->line = map->line;
  const char *id = text_field(ld, map, "id", NULL, true);
  if (id && !valid_id(id))
    err(ld, map_get(map, "id"),
        "rule id '%s': lower-case letters, digits and '_', starting with a "
        "letter",
        id);
  else if (id)
    r->id = dup(ld, id);
  const char *sev = text_field(ld, map, "severity", r->id, true);
  if (sev) {
    r->severity = strcmp(sev, "high") == 0     ? KL_SEVERITY_HIGH
                  : strcmp(sev, "medium") == 0 ? KL_SEVERITY_MEDIUM
                  : strcmp(sev, "low") == 0    ? KL_SEVERITY_LOW
                                               : 0;
    if (!r->severity)
      err(ld, map_get(map, "severity"),
          "severity '%s': expected high, medium or low", sev);
  }
  read_when(ld, map, r);
  r->finding = read_template(ld, map, "finding", r, &r->finding_src);
  r->action = read_template(ld, map, "action", r, &r->action_src);
  const char *sk = text_field(ld, map, "skill", r->id, false);
  if (sk && !kl__skill_find(ld->rs, sk)) {
    const char *cands[512];
    size_t k = 0;
    for (size_t i = 0; i < ld->rs->nskills && k < 512; i++)
      cands[k++] = ld->rs->skills[i].id;
    const char *near = kl__suggest(sk, cands, k);
    err(ld, map_get(map, "skill"), "unknown skill '%s'%s%s%s", sk,
        near ? " (did you mean '" : " (skills are <share>/skills/<id>.md)",
        near ? near : "", near ? "'?)" : "");
  } else if (sk) {
    r->skill = dup(ld, sk);
  }
  const char *group = text_field(ld, map, "group", r->id, false);
  r->group = dup(ld, group ? group : "general");
  r->path = dup(ld, ld->path);
  r->is_default = ld->defaults;
}

/* Ids given twice in this file, or a default id given by two default
 * files. */
static void check_ids(loader *ld, const ynode *root) {
  for (size_t i = 0; i < ld->count; i++) {
    if (!ld->rules[i].id) continue;
    for (size_t j = 0; j < i; j++)
      if (ld->rules[j].id && strcmp(ld->rules[i].id, ld->rules[j].id) == 0) {
        const ynode *n = map_get(root->items[i], "id");
        err(ld, n, "duplicate rule id '%s' (first at line %d)", ld->rules[i].id,
            ld->rules[j].line);
        break;
      }
    for (size_t j = 0; ld->defaults && j < ld->rs->nrules; j++)
      if (ld->rs->rules[j].is_default &&
          strcmp(ld->rs->rules[j].id, ld->rules[i].id) == 0)
        err(ld, map_get(root->items[i], "id"),
            "duplicate rule id '%s' (also in %s:%d)", ld->rules[i].id,
            ld->rs->rules[j].path, ld->rs->rules[j].line);
  }
}

/* Move this file's rules into the set: replace by id, else append. */
static int merge(loader *ld) {
  kl_rules *rs = ld->rs;
  if (KL__GROW(rs->rules, rs->cap_rules, rs->nrules + ld->count + 1) < 0)
    return KL_ENOMEM;
  for (size_t i = 0; i < ld->count; i++) {
    size_t j = 0;
    while (j < rs->nrules && strcmp(rs->rules[j].id, ld->rules[i].id) != 0)
      j++;
    if (j < rs->nrules)
      rule_clear(&rs->rules[j]);
    else
      rs->nrules++;
    rs->rules[j] = ld->rules[i];
    memset(&ld->rules[i], 0, sizeof(ld->rules[i]));
  }
  return 0;
}

static int load(kl_rules *rs, const char *text, const char *path,
                bool defaults) {
  loader ld = {0};
  ld.rs = rs;
  ld.path = path;
  ld.text = text;
  ld.defaults = defaults;
  ynode *root = kl__yaml_parse(text, strlen(text), path, &ld.diags);
  if (!root && ld.diags.count == 0 && !ld.diags.oom)
    err_at(&ld, 1, 1, "the rule file is empty: expected a list of rules");
  else if (root && root->kind != YNODE_SEQ)
    err(&ld, root, "a rule file is a list of rules (- id: ...), not %s",
        kl__yaml_kind_name(root));
  else if (root && !(ld.rules = kl__calloc(root->count + 1, sizeof(rule))))
    ld.diags.oom = true;
  for (size_t i = 0; ld.rules && i < root->count && !ld.diags.oom; i++) {
    const ynode *item = root->items[i];
    if (item->kind != YNODE_MAP) {
      err(&ld, item,
          "a rule is a mapping of id, severity, when, finding, "
          "action, skill, group; not %s",
          kl__yaml_kind_name(item));
      continue;
    }
    read_rule(&ld, item, &ld.rules[i]);
  }
  if (ld.rules && root) ld.count = root->count;
  if (ld.rules && !ld.diags.oom) check_ids(&ld, root);
  int rc = kl__diag_report(&ld.diags, rs->on_diag, rs->payload);
  if (rc == 0) rc = merge(&ld);
  for (size_t i = 0; i < ld.count; i++)
    rule_clear(&ld.rules[i]);
  kl__free(ld.rules);
  kl__diag_clear(&ld.diags);
  kl__yaml_free(root);
  return rc;
}

int kl_rules_add_string(kl_rules *rs, const char *yaml, const char *path) {
  return load(rs, yaml ? yaml : "", path ? path : "<rules>", false);
}

int kl_rules_add_file(kl_rules *rs, const char *path) {
  kl_buf text = KL_BUF_INIT;
  int rc = kl__read_file(&text, path);
  if (rc == 0) rc = load(rs, text.ptr ? text.ptr : "", path, false);
  kl_buf_dispose(&text);
  return rc;
}

int kl_rules_add_defaults(kl_rules *rs) {
  const char *share = kl_share_dir();
  if (!share)
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                     "kernlab's share folder was not found; set "
                     "KERNLAB_SHARE_DIR");
  char *dir = kl__path_join(share, "rules");
  if (!dir) return kl__error_oom();
  char **names;
  size_t n;
  int rc =
      kl__list_dir(&names, &n, dir, ".yaml", "cannot read the rules folder");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    char *path = kl__path_join(dir, names[i]);
    kl_buf text = KL_BUF_INIT;
    if (!path)
      rc = kl__error_oom();
    else if ((rc = kl__read_file(&text, path)) == 0)
      rc = load(rs, text.ptr ? text.ptr : "", path, true);
    kl_buf_dispose(&text);
    kl__free(path);
  }
  kl__names_free(names, n);
  kl__free(dir);
  return rc;
}

/* ---- the set
 * ------------------------------------------------------------------- */

int kl_rules_create(kl_rules **out, const kl_rules_options *given) {
  *out = NULL;
  kl_rules_options opts;
  int rc = kl__rules_options_take(&opts, given);
  if (rc < 0) return rc;
  const char *share = kl_share_dir();
  if (!share)
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                     "kernlab's share folder was not found; set "
                     "KERNLAB_SHARE_DIR");
  kl_rules *rs = kl__calloc(1, sizeof(*rs));
  char *skills = kl__path_join(share, "skills");
  if (!rs || !skills) {
    kl__free(rs);
    kl__free(skills);
    return kl__error_oom();
  }
  rs->on_diag = opts.on_diag;
  rs->payload = opts.payload;
  rc = kl_rules_add_skills(rs, skills);
  kl__free(skills);
  if (rc < 0) {
    kl_rules_free(rs);
    return rc;
  }
  *out = rs;
  return 0;
}

void kl_rules_free(kl_rules *rs) {
  if (!rs) return;
  for (size_t i = 0; i < rs->nrules; i++)
    rule_clear(&rs->rules[i]);
  kl__free(rs->rules);
  for (size_t i = 0; i < rs->nskills; i++)
    kl__skill_clear(&rs->skills[i]);
  kl__free(rs->skills);
  kl__free(rs);
}

size_t kl_rules_count(const kl_rules *rs) {
  return rs->nrules;
}

int kl_rules_get(kl_rule_info *into, const kl_rules *rs, size_t i) {
  if (i >= rs->nrules)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no rule %zu (of %zu)", i,
                     rs->nrules);
  kl_rule_info full = {0};
  kl_rule_info *out = &full;
  const rule *r = &rs->rules[i];
  out->id = r->id;
  out->severity = r->severity;
  out->when = r->when_src;
  out->finding = r->finding_src;
  out->action = r->action_src;
  out->skill = r->skill;
  out->group = r->group;
  out->path = r->path;
  out->line = r->line;
  return kl__result_give(into, &full, sizeof(full),
                         KL__SIZE_THROUGH(kl_rule_info, line), "kl_rule_info");
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t rules_options_sizes[] = {0, sizeof(kl_rules_options)};

KL__OPTIONS_FUNCTIONS(kl_rules_options, kl_rules_options_init,
                      kl__rules_options_take, KL_RULES_OPTIONS_INIT,
                      rules_options_sizes)
