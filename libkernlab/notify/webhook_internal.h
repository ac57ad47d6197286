/* The webhook: section of a case or of the user config file. */
#ifndef KL_WEBHOOK_INTERNAL_H
#define KL_WEBHOOK_INTERNAL_H

#include "../core/yaml_tree.h"
#include "kernlab/webhook.h"

typedef struct kl__webhook_settings {
  char *url, *url_env, *format;
  int line; /* of the section, for "url_env names an unset variable" */
  char *path;
} kl__webhook_settings;

/* Read a webhook: mapping into *s (allocated here when NULL), reporting
 * mistakes located in `path`. */
void kl__webhook_settings_read(kl__webhook_settings **s, const ynode *map,
                               const char *path, const char *file_text,
                               kl__diag_list *diags);
void kl__webhook_settings_free(kl__webhook_settings *s);

#endif /* KL_WEBHOOK_INTERNAL_H */
