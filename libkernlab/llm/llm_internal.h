/* LLM settings: the llm: section of the user config file and of a case,
 * which this module reads and checks (settings.c); and the taker of a
 * caller's kl_llm_config (llm.c), which the run uses too. */
#ifndef KL_LLM_INTERNAL_H
#define KL_LLM_INTERNAL_H

#include "../core/internal.h"
#include "../core/yaml_tree.h"
#include "kernlab/case.h"
#include "kernlab/llm.h"

/* Unset: NULL strings, negative numbers. */
struct kl_llm_settings {
  char *provider, *model, *base_url, *api_key_env;
  int max_tokens;
  double temperature;
  long timeout_ms;
  int max_retries;
  char **command; /* NULL-terminated */
  kl_llm_price *prices;
  size_t nprices, cap_prices;
};

kl_llm_settings *kl__llm_settings_new(void);
/* Read an `llm:` mapping into s; mistakes go to diags, located. */
int kl__llm_settings_read(kl_llm_settings *s, const ynode *map,
                          const char *path, const char *file_text,
                          kl__diag_list *diags);

/* The taker of this module's options struct (KL__OPTIONS_FUNCTIONS,
 * beside its init function): a caller's struct, whatever its version,
 * over this library's defaults. */
int kl__llm_config_take(kl_llm_config *full, const kl_llm_config *given);

#endif /* KL_LLM_INTERNAL_H */
