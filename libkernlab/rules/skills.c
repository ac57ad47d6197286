/* Skills: short expert notes, one markdown file per bottleneck
 * (<folder>/<id>.md), that rules point at.
 *
 * A skill must say when it applies and what to do, in a fixed order, so
 * a prompt can carry the one-line catalog always and the full text only
 * when a rule fires: a `**Signal**:` line first (after an optional
 * heading), then **Root causes**, **Fixes** and **Anti-patterns**. The
 * loader checks that shape and a size limit, and reports each problem
 * with its file and line. */
#include <stdlib.h>
#include <string.h>

#include "rules_internal.h"

/* Past this a note stops being short; the bundled ones stay under 2,000. */
#define SKILL_MAX_CHARS 4000

static const char *const sections[] = {"**Root causes**", "**Fixes**",
                                       "**Anti-patterns**"};

void kl__skill_clear(skill *s) {
  kl__free(s->id);
  kl__free(s->path);
  kl__free(s->signal);
  kl__free(s->text);
}

const skill *kl__skill_find(const kl_rules *rs, const char *id) {
  for (size_t i = 0; id && i < rs->nskills; i++)
    if (strcmp(rs->skills[i].id, id) == 0) return &rs->skills[i];
  return NULL;
}

static bool valid_id(const char *s, size_t n) {
  if (n == 0 || !(s[0] >= 'a' && s[0] <= 'z')) return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_'))
      return false;
  return true;
}

/* Check one note and take its signal line. */
static void read_skill(skill *out, const char *path, const char *text,
                       kl__diag_list *diags) {
  int line = 1, signal_line = 0, last = 1;
  bool seen[3] = {false, false, false};
  size_t len = strlen(text);
  if (len > SKILL_MAX_CHARS)
    kl__diag_add(diags, KL_EINVALID, KL_DOMAIN_NONE, path, 1, 1, NULL,
                 "a skill is a short note: %zu characters, keep it under "
                 "about 2,000 (%d at most)",
                 len, SKILL_MAX_CHARS);
  for (const char *p = text; *p; line++) {
    size_t n = strcspn(p, "\n");
    while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
      n--;
    bool empty = n == 0, heading = n && p[0] == '#';
    if (!signal_line && !empty && !heading) {
      if (n < 11 || strncmp(p, "**Signal**:", 11) != 0)
        kl__diag_add(diags, KL_EINVALID, KL_DOMAIN_NONE, path, line, 1, NULL,
                     "a skill starts with a '**Signal**:' line (after "
                     "an optional # heading)");
      else if (!(out->signal = kl__strndup(p + 11 + strspn(p + 11, " "),
                                           n - 11 - strspn(p + 11, " "))))
        diags->oom = true;
      signal_line = line;
    }
    for (int s = 0; s < 3; s++)
      if (!empty && strstr(p, sections[s]) &&
          (size_t)(strstr(p, sections[s]) - p) < n)
        seen[s] = true;
    if (!empty) last = line;
    p += strcspn(p, "\n");
    if (*p) p++;
  }
  if (!signal_line)
    kl__diag_add(diags, KL_EINVALID, KL_DOMAIN_NONE, path, 1, 1, NULL,
                 "an empty skill: it needs a '**Signal**:' line, %s, %s "
                 "and %s",
                 sections[0], sections[1], sections[2]);
  else
    for (int s = 0; s < 3; s++)
      if (!seen[s])
        kl__diag_add(diags, KL_EINVALID, KL_DOMAIN_NONE, path, last, 1, NULL,
                     "a skill needs a %s section (root causes, fixes and "
                     "anti-patterns, each in priority order)",
                     sections[s]);
}

/* Put a loaded skill in the set, replacing one with its id. */
static int keep_skill(kl_rules *rs, skill *s) {
  for (size_t i = 0; i < rs->nskills; i++)
    if (strcmp(rs->skills[i].id, s->id) == 0) {
      kl__skill_clear(&rs->skills[i]);
      rs->skills[i] = *s;
      return 0;
    }
  if (KL__GROW(rs->skills, rs->cap_skills, rs->nskills + 1) < 0)
    return KL_ENOMEM;
  rs->skills[rs->nskills++] = *s;
  return 0;
}

int kl_rules_add_skills(kl_rules *rs, const char *dir) {
  char **names = NULL;
  size_t n = 0;
  int rc =
      kl__list_dir(&names, &n, dir, ".md", "cannot read the skills folder");
  if (rc < 0) return rc;
  kl__diag_list diags = {0};
  skill *loaded = kl__calloc(n ? n : 1, sizeof(*loaded));
  if (!loaded) diags.oom = true;
  for (size_t i = 0; loaded && i < n && !diags.oom; i++) {
    skill *s = &loaded[i];
    kl_buf text = KL_BUF_INIT;
    size_t idlen = strlen(names[i]) - 3;
    if (!(s->path = kl__path_join(dir, names[i])) ||
        !(s->id = kl__strndup(names[i], idlen))) {
      diags.oom = true;
      break;
    }
    if (!valid_id(s->id, idlen)) {
      kl__diag_add(&diags, KL_EINVALID, KL_DOMAIN_NONE, s->path, 1, 1, NULL,
                   "a skill's file name is its id: lower-case letters, "
                   "digits and '_' ('%s' is not)",
                   s->id);
      continue;
    }
    if ((rc = kl__read_file(&text, s->path)) < 0) {
      kl__diag_add(&diags, rc, KL_DOMAIN_NONE, s->path, 0, 0, NULL, "%s",
                   kl_error_last()->text);
      continue;
    }
    s->text = kl__buf_detach(&text);
    if (!s->text)
      diags.oom = true;
    else
      read_skill(s, s->path, s->text, &diags);
  }
  rc = kl__diag_report(&diags, rs->on_diag, rs->payload);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if ((rc = keep_skill(rs, &loaded[i])) == 0)
      memset(&loaded[i], 0, sizeof(loaded[i]));
  }
  for (size_t i = 0; loaded && i < n; i++)
    kl__skill_clear(&loaded[i]);
  kl__free(loaded);
  kl__names_free(names, n);
  kl__diag_clear(&diags);
  return rc;
}

size_t kl_rules_skill_count(const kl_rules *rs) {
  return rs->nskills;
}

int kl_rules_skill(kl_skill_info *into, const kl_rules *rs, size_t i) {
  if (i >= rs->nskills)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no skill %zu (of %zu)", i,
                     rs->nskills);
  kl_skill_info full = {0};
  kl_skill_info *out = &full;
  const skill *s = &rs->skills[i];
  out->id = s->id;
  out->signal = s->signal;
  out->text = s->text;
  out->path = s->path;
  return kl__result_give(into, &full, sizeof(full),
                         KL__SIZE_THROUGH(kl_skill_info, path),
                         "kl_skill_info");
}

int kl_rules_skill_catalog(kl_buf *out, const kl_rules *rs) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "");
  for (size_t i = 0; i < rs->nskills; i++)
    kl__buf_printf(&b, "- %s: %s\n", rs->skills[i].id, rs->skills[i].signal);
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}
