/* The user's config file: $KL_CONFIG, else
 * $XDG_CONFIG_HOME/kernlab/config.yaml, else ~/.config/kernlab/config.yaml.
 * A mapping of sections (llm:, webhook:, executor:); each reader takes its own
 * section from here and reports its mistakes located in the file. A named
 * $KL_CONFIG must exist; the default locations may be absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "yaml_tree.h"

static const char *const sections[] = {"llm", "webhook", "executor"};

int kl__user_config_section(const char *section, kl__config_section_fn fn,
                            void *payload) {
  const char *path = getenv("KL_CONFIG");
  char buf[4096];
  if (!path || !path[0]) {
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0])
      snprintf(buf, sizeof(buf), "%s/kernlab/config.yaml", xdg);
    else if (home && home[0])
      snprintf(buf, sizeof(buf), "%s/.config/kernlab/config.yaml", home);
    else
      return 0;
    path = buf;
    if (!kl__is_file(path)) return 0; /* no config file is fine */
  }
  kl_buf t = KL_BUF_INIT;
  int rc = kl__read_file(&t, path);
  if (rc < 0) return rc;
  kl__diag_list diags = {0};
  ynode *root = kl__yaml_parse(t.ptr ? t.ptr : "", t.size, path, &diags);
  if (root && root->kind != YNODE_MAP)
    kl__diag_add(&diags, KL_EINVALID, KL_DOMAIN_NONE, path, root->line,
                 root->column, NULL,
                 "the config file is a mapping (llm: ..., webhook: ...)");
  for (size_t i = 0; root && root->kind == YNODE_MAP && i < root->count; i++) {
    const char *k = root->pairs[i].key->value;
    if (strcmp(k, section) == 0)
      fn(root->pairs[i].value, path, t.ptr, &diags, payload);
    else if (strcmp(k, sections[0]) && strcmp(k, sections[1]) &&
             strcmp(k, sections[2]))
      kl__diag_add(&diags, KL_EINVALID, KL_DOMAIN_NONE, path,
                   root->pairs[i].key->line, root->pairs[i].key->column, NULL,
                   "unknown key '%s' in the config file (llm, webhook, "
                   "executor)",
                   k);
  }
  rc = kl__diag_report(&diags, NULL, NULL);
  kl__diag_clear(&diags);
  kl__yaml_free(root);
  kl_buf_dispose(&t);
  return rc;
}
