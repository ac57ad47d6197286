/* LLM settings from files: the user's config file and the case's `llm:`
 * section, layered with the environment.
 *
 * The order, lowest first: built-in defaults; the user config file
 * ($KL_CONFIG, else $XDG_CONFIG_HOME/kernlab/config.yaml, else
 * ~/.config/kernlab/config.yaml), its `llm:` section; the case's `llm:`
 * section; the environment (KL_LLM_PROVIDER, KL_LLM_MODEL,
 * KL_LLM_BASE_URL); last, whatever the caller set in its kl_llm_config.
 * Both files take the same keys and report every mistake located in the
 * file. An `api_key` key is refused: keys come from the environment only,
 * so no file kernlab reads or writes ever holds one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/yaml_tree.h"
#include "../case/case_section.h"
#include "llm_internal.h"

static const char *const keys[] = {
    "provider",    "model",     "base_url",    "api_key_env", "max_tokens",
    "temperature", "timeout_s", "max_retries", "command",     "prices"};

kl_llm_settings *kl__llm_settings_new(void) {
  kl_llm_settings *s = kl__calloc(1, sizeof(*s));
  if (s) {
    s->max_tokens = -1;
    s->temperature = -1;
    s->timeout_ms = -1;
    s->max_retries = -1;
  }
  return s;
}

void kl_llm_settings_free(kl_llm_settings *s) {
  if (!s) return;
  kl__free(s->provider);
  kl__free(s->model);
  kl__free(s->base_url);
  kl__free(s->api_key_env);
  kl__strv_free(s->command);
  for (size_t i = 0; i < s->nprices; i++)
    kl__free((char *)s->prices[i].model);
  kl__free(s->prices);
  kl__free(s);
}

typedef struct reader {
  const char *path, *text;
  kl__diag_list *diags;
} reader;

static void err(reader *r, const ynode *n, const char *fmt, ...)
    KL_PRINTF(3, 4);
static void err(reader *r, const ynode *n, const char *fmt, ...) {
  char *snippet = kl__snippet(r->text, n->line, n->column);
  va_list ap;
  va_start(ap, fmt);
  kl__diag_addv(r->diags, KL_EINVALID, KL_DOMAIN_NONE, r->path, n->line,
                n->column, snippet, fmt, ap);
  va_end(ap);
  kl__free(snippet);
}

static bool text(reader *r, const ynode *n, const char *key, char **out) {
  if (n->kind != YNODE_SCALAR || !n->value[0]) {
    err(r, n, "llm.%s must be a non-empty value", key);
    return false;
  }
  kl__free(*out);
  if (!(*out = kl__strdup(n->value))) r->diags->oom = true;
  return *out != NULL;
}

static bool number(reader *r, const ynode *n, const char *key, double min,
                   double max, double *out) {
  char *end = NULL;
  double v = n->kind == YNODE_SCALAR ? strtod(n->value, &end) : NAN;
  if (!end || *end || end == n->value || !(v >= min && v <= max)) {
    err(r, n, "llm.%s must be a number from %g to %g", key, min, max);
    return false;
  }
  *out = v;
  return true;
}

static void read_prices(reader *r, const ynode *n, kl_llm_settings *s) {
  if (n->kind != YNODE_MAP) {
    err(r, n,
        "llm.prices maps a model name to {input, output, cache_read, "
        "cache_write} in USD per million tokens");
    return;
  }
  for (size_t i = 0; i < n->count; i++) {
    const ynode *m = n->pairs[i].value;
    kl_llm_price p = {NULL, 0, 0, 0, 0};
    if (m->kind != YNODE_MAP) {
      err(r, m,
          "the price of '%s' is a mapping of input, output, "
          "cache_read, cache_write",
          n->pairs[i].key->value);
      continue;
    }
    static const char *const fields[] = {"input", "output", "cache_read",
                                         "cache_write"};
    double *slot[] = {&p.input, &p.output, &p.cache_read, &p.cache_write};
    bool ok = true;
    for (size_t k = 0; k < m->count; k++) {
      size_t f = 0;
      while (f < 4 && strcmp(m->pairs[k].key->value, fields[f]) != 0)
        f++;
      if (f == 4) {
        err(r, m->pairs[k].key,
            "unknown price field '%s' (input, output, "
            "cache_read, cache_write)",
            m->pairs[k].key->value);
        ok = false;
      } else {
        ok &= number(r, m->pairs[k].value, fields[f], 0, 1e6, slot[f]);
      }
    }
    bool room = ok && KL__GROW(s->prices, s->cap_prices, s->nprices + 1) == 0;
    if (room) {
      if (!(p.model = kl__strdup(n->pairs[i].key->value)))
        r->diags->oom = true;
      else
        s->prices[s->nprices++] = p;
    } else if (ok) {
      r->diags->oom = true;
    }
  }
}

int kl__llm_settings_read(kl_llm_settings *s, const ynode *map,
                          const char *path, const char *file_text,
                          kl__diag_list *diags) {
  reader r = {path, file_text, diags};
  if (map->kind != YNODE_MAP) {
    err(&r, map, "llm must be a mapping (provider, model, base_url, ...)");
    return 0;
  }
  for (size_t i = 0; i < map->count; i++) {
    const char *k = map->pairs[i].key->value;
    const ynode *v = map->pairs[i].value;
    double d;
    if (strcmp(k, "api_key") == 0 || strcmp(k, "key") == 0) {
      err(&r, map->pairs[i].key,
          "API keys are never read from files: set ANTHROPIC_API_KEY or "
          "OPENAI_API_KEY (or name another variable with llm.api_key_env)");
    } else if (strcmp(k, "provider") == 0) {
      if (text(&r, v, k, &s->provider) && strcmp(s->provider, "anthropic") &&
          strcmp(s->provider, "openai") && strcmp(s->provider, "command") &&
          strcmp(s->provider, "replay"))
        err(&r, v,
            "unknown provider '%s' (anthropic, openai, command or "
            "replay)",
            s->provider);
    } else if (strcmp(k, "model") == 0) {
      text(&r, v, k, &s->model);
    } else if (strcmp(k, "base_url") == 0) {
      text(&r, v, k, &s->base_url);
    } else if (strcmp(k, "api_key_env") == 0) {
      text(&r, v, k, &s->api_key_env);
    } else if (strcmp(k, "max_tokens") == 0) {
      if (number(&r, v, k, 1, 1e7, &d)) s->max_tokens = (int)d;
    } else if (strcmp(k, "temperature") == 0) {
      if (number(&r, v, k, 0, 2, &d)) s->temperature = d;
    } else if (strcmp(k, "timeout_s") == 0) {
      if (number(&r, v, k, 1, 86400, &d)) s->timeout_ms = (long)(d * 1000);
    } else if (strcmp(k, "max_retries") == 0) {
      if (number(&r, v, k, 0, 100, &d)) s->max_retries = (int)d;
    } else if (strcmp(k, "command") == 0) {
      if (v->kind != YNODE_SEQ || v->count == 0) {
        err(&r, v,
            "llm.command is a list: the program, then its arguments "
            "(never a shell line)");
        continue;
      }
      char **argv = kl__calloc(v->count + 1, sizeof(char *));
      bool ok = argv != NULL;
      for (size_t j = 0; ok && j < v->count; j++) {
        if (v->items[j]->kind != YNODE_SCALAR) {
          err(&r, v->items[j], "llm.command items are plain values");
          ok = false;
        } else if (!(argv[j] = kl__strdup(v->items[j]->value))) {
          r.diags->oom = true;
          ok = false;
        }
      }
      if (!argv) r.diags->oom = true;
      if (ok) {
        kl__strv_free(s->command);
        s->command = argv;
      } else {
        kl__strv_free(argv);
      }
    } else if (strcmp(k, "prices") == 0) {
      read_prices(&r, v, s);
    } else {
      const char *near = kl__suggest(k, keys, KL_ARRAY_SIZE(keys));
      err(&r, map->pairs[i].key, "unknown key '%s' in llm%s%s%s", k,
          near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    }
  }
  return 0;
}

/* The user config file's llm: section, when there is one. */
static void read_user_section(const ynode *value, const char *path,
                              const char *file_text, kl__diag_list *diags,
                              void *payload) {
  kl__llm_settings_read(payload, value, path, file_text, diags);
}

static int read_user_file(kl_llm_settings *s) {
  return kl__user_config_section("llm", read_user_section, s);
}

static int overlay_text(char **dst, const char *src) {
  if (!src) return 0;
  char *c = kl__strdup(src);
  if (!c) return kl__error_oom();
  kl__free(*dst);
  *dst = c;
  return 0;
}

/* Lay `top` over `s`: what top sets wins. */
static int overlay(kl_llm_settings *s, const kl_llm_settings *top) {
  int rc;
  if ((rc = overlay_text(&s->provider, top->provider)) < 0 ||
      (rc = overlay_text(&s->model, top->model)) < 0 ||
      (rc = overlay_text(&s->base_url, top->base_url)) < 0 ||
      (rc = overlay_text(&s->api_key_env, top->api_key_env)) < 0)
    return rc;
  if (top->max_tokens >= 0) s->max_tokens = top->max_tokens;
  if (top->temperature >= 0) s->temperature = top->temperature;
  if (top->timeout_ms >= 0) s->timeout_ms = top->timeout_ms;
  if (top->max_retries >= 0) s->max_retries = top->max_retries;
  if (top->command) {
    char **argv = kl__strv_dup((const char *const *)top->command);
    if (!argv) return kl__error_oom();
    kl__strv_free(s->command);
    s->command = argv;
  }
  for (size_t i = 0; i < top->nprices; i++) {
    if ((rc = KL__GROW(s->prices, s->cap_prices, s->nprices + 1)) < 0)
      return rc;
    s->prices[s->nprices] = top->prices[i];
    if (!(s->prices[s->nprices].model = kl__strdup(top->prices[i].model)))
      return kl__error_oom();
    s->nprices++;
  }
  return 0;
}

/* The case's llm: section: read when used, checked when the case loads
 * (the case keeps the section; this module owns what it means). */
static void check_case_section(const ynode *value, const char *path,
                               const char *file_text, kl__diag_list *diags) {
  kl_llm_settings *s = kl__llm_settings_new();
  if (!s) {
    diags->oom = true;
    return;
  }
  kl__llm_settings_read(s, value, path, file_text, diags);
  kl_llm_settings_free(s);
}

__attribute__((constructor)) static void own_case_section(void) {
  kl__case_section_checker("llm", check_case_section);
}

static int read_case_section(kl_llm_settings **out, const kl_case *c) {
  const char *path, *text;
  const ynode *n = kl__case_section(c, "llm", &path, &text);
  *out = NULL;
  if (!n) return 0;
  if (!(*out = kl__llm_settings_new())) return kl__error_oom();
  kl__diag_list diags = {0};
  kl__llm_settings_read(*out, n, path, text, &diags);
  int rc = kl__diag_report(&diags, NULL, NULL);
  kl__diag_clear(&diags);
  if (rc < 0) {
    kl_llm_settings_free(*out);
    *out = NULL;
  }
  return rc;
}

int kl_llm_settings_load(kl_llm_settings **out, const kl_case *c) {
  *out = NULL;
  kl_llm_settings *s = kl__llm_settings_new();
  if (!s) return kl__error_oom();
  kl_llm_settings *from_case = NULL;
  int rc;
  if ((rc = read_user_file(s)) < 0 ||
      (c && (rc = read_case_section(&from_case, c)) < 0) ||
      (from_case && (rc = overlay(s, from_case)) < 0))
    goto fail;
  static const struct {
    const char *env;
    size_t field;
  } envs[] = {{"KL_LLM_PROVIDER", offsetof(kl_llm_settings, provider)},
              {"KL_LLM_MODEL", offsetof(kl_llm_settings, model)},
              {"KL_LLM_BASE_URL", offsetof(kl_llm_settings, base_url)}};
  for (size_t i = 0; i < KL_ARRAY_SIZE(envs); i++) {
    const char *v = getenv(envs[i].env);
    if (v && v[0] &&
        (rc = overlay_text((char **)((char *)s + envs[i].field), v)) < 0)
      goto fail;
  }
  kl_llm_settings_free(from_case);
  *out = s;
  return 0;
fail:
  kl_llm_settings_free(from_case);
  kl_llm_settings_free(s);
  return rc;
}

void kl_llm_settings_apply(const kl_llm_settings *s, kl_llm_config *cfg) {
  if (!cfg->provider) cfg->provider = s->provider;
  if (!cfg->model) cfg->model = s->model;
  if (!cfg->base_url) cfg->base_url = s->base_url;
  if (!cfg->api_key_env) cfg->api_key_env = s->api_key_env;
  if (cfg->max_tokens <= 0 && s->max_tokens > 0)
    cfg->max_tokens = s->max_tokens;
  if (cfg->temperature < 0 && s->temperature >= 0)
    cfg->temperature = s->temperature;
  if (cfg->timeout_ms <= 0 && s->timeout_ms > 0)
    cfg->timeout_ms = s->timeout_ms;
  if (cfg->max_retries < 0 && s->max_retries >= 0)
    cfg->max_retries = s->max_retries;
  if (!cfg->command && s->command)
    cfg->command = (const char *const *)s->command;
}

size_t kl_llm_settings_price_count(const kl_llm_settings *s) {
  return s->nprices;
}

const kl_llm_price *kl_llm_settings_price(const kl_llm_settings *s, size_t i) {
  return i < s->nprices ? &s->prices[i] : NULL;
}

const char *kl_llm_settings_provider(const kl_llm_settings *s) {
  return s->provider;
}

const char *kl_llm_settings_model(const kl_llm_settings *s) {
  return s->model;
}
