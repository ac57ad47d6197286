/** @file kernlab/llm.h  Language-model providers.
 *
 * kernlab talks to models itself, so the library, the CLI and the Python
 * bindings behave the same. A provider sends a prompt's two blocks (see
 * kernlab/prompt.h: the system block is sent as cacheable) and returns the
 * reply text with its token usage and cost:
 *   - "anthropic": the Messages API, prompt caching on the system block;
 *   - "openai": chat completions on any OpenAI-compatible server (vLLM,
 *     llama.cpp's server, ollama, the hosted API) at a base URL;
 *   - "command": a program given as an argv list (never a shell) gets the
 *     prompt on standard input and answers on standard output, within the
 *     timeout: any CLI agent can be the model;
 *   - "replay": the replies a recording (record_dir) kept, in order, so a
 *     run can be reproduced, or the loop changed, without spending tokens.
 * Both retry 429, 5xx, "overloaded" and network errors with exponential
 * backoff and jitter (a Retry-After header wins), continue a reply the
 * token limit cut off, cap the response size, and report a final failure
 * in one line with the provider, the status and a short excerpt. API keys
 * are read from the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, or the
 * variable api_key_env names) when a request is made, and never copied
 * into an error, a reply or any output.
 *
 * Threads: a kl_llm is used by one thread at a time; separate ones may run
 * on separate threads at once (they share only libcurl's process-wide
 * setup, made once, thread-safely).
 */
#ifndef KERNLAB_LLM_H
#define KERNLAB_LLM_H

#include "case.h"
#include "common.h"
#include "transport.h"

KL_BEGIN_DECLS

#define KL_LLM_CONFIG_VERSION 1
typedef struct kl_llm_config {
  unsigned version;              /**< KL_LLM_CONFIG_VERSION */
  const char *provider;          /**< "anthropic", "openai", "command" or
                                      "replay"; NULL: the KL_LLM_PROVIDER
                                      environment variable */
  const char *model;             /**< NULL: KL_LLM_MODEL, else a default */
  const char *base_url;          /**< NULL: KL_LLM_BASE_URL, else the hosted
                                      API's */
  const char *api_key_env;       /**< the variable holding the key; NULL: the
                                      provider's usual one */
  int max_tokens;                /**< per request; 0: 8192 */
  double temperature;            /**< < 0: the provider's default */
  long connect_timeout_ms;       /**< 0: 10 s */
  long timeout_ms;               /**< per request; 0: 600 s */
  int max_retries;               /**< < 0: 5 */
  double backoff_s;              /**< the first retry's delay; 0: 1 s */
  double backoff_max_s;          /**< 0: 60 s */
  int max_continuations;         /**< < 0: 3 */
  size_t max_response_bytes;     /**< 0: 8 MiB */
  const kl_transport *transport; /**< NULL: libcurl */
  const char *const *command;    /**< "command": the program and its
                                      arguments, NULL-terminated; run without
                                      a shell */
  const char *replay_dir;        /**< "replay": a folder of recorded replies */
  const char *record_dir; /**< record every exchange here (NNNN.prompt.txt,
                               NNNN.reply.txt, numbered from 0001);
                               NULL: nowhere */
} kl_llm_config;
#define KL_LLM_CONFIG_INIT                                                     \
  {                                                                            \
    KL_LLM_CONFIG_VERSION, NULL, NULL, NULL, NULL, 0, -1, 0, 0, -1, 0, 0, -1,  \
        0, NULL, NULL, NULL, NULL                                              \
  }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_LLM_CONFIG_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int) kl_llm_config_init(kl_llm_config *opts, unsigned version);

/** Tokens and money, for one call or a whole session. */
typedef struct kl_llm_usage {
  size_t size; /**< KL_LLM_USAGE_INIT sets it; nothing is written past it */
  uint64_t input_tokens, output_tokens;
  uint64_t cache_read_tokens, cache_write_tokens;
  double cost_usd; /**< from the price table; 0 when the model has none */
  int cost_known;  /**< the model had a price */
  int requests, retries, continuations;
} kl_llm_usage;
#define KL_LLM_USAGE_INIT KL_SIZED_INIT(kl_llm_usage)

/** US dollars per million tokens. */
typedef struct kl_llm_price {
  const char *model; /**< matched as a prefix of the model name */
  double input, output, cache_read, cache_write;
} kl_llm_price;

typedef struct kl_llm kl_llm; /* opaque */

/** @return 0, KL_EINVALID (unknown provider: the message lists them),
 *  KL_EUNSUPPORTED (no libcurl and no transport given), KL_ENOMEM. */
KL_EXTERN(int) kl_llm_create(kl_llm **out, const kl_llm_config *cfg);
KL_EXTERN(void) kl_llm_free(kl_llm *l);
/** "anthropic/claude-...": provider and model, for reports. */
KL_EXTERN(const char *) kl_llm_name(const kl_llm *l);

/** One completion. The reply text goes to *reply; this call's usage to
 *  *usage (may be NULL) and into the session totals.
 *  @return 0, KL_EINVALID (no API key, a refused request, a malformed or
 *  empty reply), KL_EIO (an HTTP or network error after the last retry),
 *  KL_ETIMEOUT, KL_ENOMEM. */
KL_EXTERN(int)
kl_llm_complete(kl_llm *l, const char *system, const char *user, kl_buf *reply,
                kl_llm_usage *usage);
/** Everything this handle has spent so far. @return 0, KL_EINVALID (a
 *  size below the first version's). */
KL_EXTERN(int) kl_llm_totals(const kl_llm *l, kl_llm_usage *out);

/** Add or replace a price (the built-in table covers the usual hosted
 *  models; local servers cost nothing). */
KL_EXTERN(int) kl_llm_set_price(kl_llm *l, const kl_llm_price *price);

/* ---- settings from files and the environment
 * ----------------------------------- */

/** Settings layered, lowest first: the user config file (`llm:` in
 *  $KL_CONFIG, else $XDG_CONFIG_HOME/kernlab/config.yaml, else
 *  ~/.config/kernlab/config.yaml), the case's `llm:` section (c may be
 *  NULL), then KL_LLM_PROVIDER, KL_LLM_MODEL and KL_LLM_BASE_URL. Keys:
 *  provider, model, base_url, api_key_env, max_tokens, temperature,
 *  timeout_s, max_retries, command (a list), prices (model -> {input,
 *  output, cache_read, cache_write}). An api_key key is an error: keys
 *  come from the environment only.
 *  @return 0, KL_EINVALID (located, every mistake reported), KL_EIO,
 *  KL_ENOMEM. */
typedef struct kl_llm_settings kl_llm_settings; /* opaque */
KL_EXTERN(int) kl_llm_settings_load(kl_llm_settings **out, const kl_case *c);
KL_EXTERN(void) kl_llm_settings_free(kl_llm_settings *s);
/** Fill what the caller left unset in cfg (strings stay owned by s, which
 *  must outlive kl_llm_create). What the caller set wins over every file. */
KL_EXTERN(void)
kl_llm_settings_apply(const kl_llm_settings *s, kl_llm_config *cfg);
KL_EXTERN(const char *) kl_llm_settings_provider(const kl_llm_settings *s);
KL_EXTERN(const char *) kl_llm_settings_model(const kl_llm_settings *s);
/** Prices the files set, to pass to kl_llm_set_price. */
KL_EXTERN(size_t) kl_llm_settings_price_count(const kl_llm_settings *s);
KL_EXTERN(const kl_llm_price *)
kl_llm_settings_price(const kl_llm_settings *s, size_t i);

KL_END_DECLS

#endif /* KERNLAB_LLM_H */
