/* The providers behind kl_llm_complete: anthropic and openai over HTTP,
 * command (a local program), replay (recorded replies).
 *
 * A completion is a short conversation: the system block and the user
 * block; while the reply stops at the token limit (Anthropic's stop_reason
 * "max_tokens", OpenAI's finish_reason "length") the partial reply goes
 * back as the assistant's turn with a request to continue, up to
 * max_continuations, and the parts are joined. Each request is retried on
 * 429, 5xx, 529 (overloaded) and network errors, waiting the Retry-After
 * header where given, else base * 2^attempt with jitter (half to all of
 * it), capped. A final failure names the provider, the status and a short
 * excerpt of the body, with the API key blotted out should a server echo
 * it. The key is read from the environment for each request and lives only
 * in the header array of that request. */
#include <stddef.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/internal.h"
#include "../records/records.h"
#include "kernlab/llm.h"
#include "llm_internal.h"

typedef enum provider { P_ANTHROPIC, P_OPENAI, P_COMMAND, P_REPLAY } provider;

struct kl_llm {
  provider p;
  char *model, *base_url, *key_env, *name;
  char **argv; /* command */
  char *replay_dir, *record_dir;
  int replayed, recorded;
  kl_llm_config cfg;
  kl_llm_price *prices;
  size_t nprices, cap_prices;
  kl_llm_usage total;
  unsigned seed; /* jitter */
};

/* USD per million tokens, hosted APIs, as published when written; a user
 * price (kl_llm_set_price) comes first. */
static const kl_llm_price builtin_prices[] = {
    {"claude-opus-4", 15.0, 75.0, 1.50, 18.75},
    {"claude-sonnet-4", 3.0, 15.0, 0.30, 3.75},
    {"claude-3-7-sonnet", 3.0, 15.0, 0.30, 3.75},
    {"claude-3-5-haiku", 0.80, 4.0, 0.08, 1.0},
    {"claude-haiku-4", 1.0, 5.0, 0.10, 1.25},
    {"gpt-4.1-mini", 0.40, 1.60, 0.10, 0.0},
    {"gpt-4.1", 2.0, 8.0, 0.50, 0.0},
    {"gpt-4o-mini", 0.15, 0.60, 0.075, 0.0},
    {"gpt-4o", 2.50, 10.0, 1.25, 0.0},
    {"o3", 2.0, 8.0, 0.50, 0.0},
};

static const char *env_or(const char *v, const char *env) {
  if (v && v[0]) return v;
  const char *e = env ? getenv(env) : NULL;
  return e && e[0] ? e : NULL;
}

int kl_llm_create(kl_llm **out, const kl_llm_config *cfg) {
  *out = NULL;
  kl_llm_config c;
  int taken = kl__llm_config_take(&c, cfg);
  if (taken < 0) return taken;
  const char *prov = env_or(c.provider, "KL_LLM_PROVIDER");
  static const char *const names[] = {"anthropic", "openai", "command",
                                      "replay"};
  int p = -1;
  for (int i = 0; prov && i < 4; i++)
    if (strcmp(prov, names[i]) == 0) p = i;
  if (p < 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "unknown LLM provider '%s' (anthropic, openai, command "
                     "or replay; set KL_LLM_PROVIDER or the case's "
                     "llm.provider)",
                     prov ? prov : "");
  if (p == P_COMMAND && (!c.command || !c.command[0] || !c.command[0][0]))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "the command provider needs a command (an argv list)");
  if (p == P_REPLAY && (!c.replay_dir || !kl__is_dir(c.replay_dir)))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "the replay provider needs the folder of a recording%s%s",
                     c.replay_dir ? ": no folder " : "",
                     c.replay_dir ? c.replay_dir : "");
  if (p <= P_OPENAI && !c.transport && !(c.transport = kl_transport_curl()))
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE,
                     "this kernlab was built without libcurl: no HTTP "
                     "transport for the %s provider",
                     prov);
  const char *model = env_or(c.model, "KL_LLM_MODEL");
  const char *base = env_or(c.base_url, "KL_LLM_BASE_URL");
  kl_llm *l = kl__calloc(1, sizeof(*l));
  if (!l) return kl__error_oom();
  l->p = (provider)p;
  l->cfg = c;
  l->model = kl__strdup(model              ? model
                        : p == P_ANTHROPIC ? "claude-sonnet-4-20250514"
                        : p == P_OPENAI    ? "gpt-4o"
                        : p == P_COMMAND   ? c.command[0]
                                           : "recorded");
  l->base_url = kl__strdup(base               ? base
                           : p == P_ANTHROPIC ? "https://api.anthropic.com"
                                              : "https://api.openai.com/v1");
  l->key_env = kl__strdup(c.api_key_env      ? c.api_key_env
                          : p == P_ANTHROPIC ? "ANTHROPIC_API_KEY"
                                             : "OPENAI_API_KEY");
  kl_buf name = KL_BUF_INIT;
  if (l->model && kl__buf_printf(&name, "%s/%s", names[p], l->model) == 0)
    l->name = kl__buf_detach(&name);
  kl_buf_dispose(&name);
  bool oom = false;
  if (p == P_COMMAND && !(l->argv = kl__strv_dup(c.command))) oom = true;
  if (c.replay_dir && !(l->replay_dir = kl__strdup(c.replay_dir))) oom = true;
  if (c.record_dir && !(l->record_dir = kl__strdup(c.record_dir))) oom = true;
  l->cfg.command = NULL; /* the copies above are what stays */
  l->cfg.replay_dir = l->cfg.record_dir = NULL;
  if (oom || !l->model || !l->base_url || !l->key_env || !l->name) {
    kl_llm_free(l);
    return kl__error_oom();
  }
  /* drop a trailing slash so paths join cleanly */
  size_t n = strlen(l->base_url);
  while (n > 0 && l->base_url[n - 1] == '/')
    l->base_url[--n] = '\0';
  l->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)l;
  /* whatever its variable's name, the key is a secret: nothing that comes
   * back from a candidate may carry it (core/secrets.c) */
  kl__secret_add(getenv(l->key_env));
  *out = l;
  return 0;
}

void kl_llm_free(kl_llm *l) {
  if (!l) return;
  for (size_t i = 0; i < l->nprices; i++)
    kl__free((char *)l->prices[i].model);
  kl__free(l->prices);
  kl__strv_free(l->argv);
  kl__free(l->replay_dir);
  kl__free(l->record_dir);
  kl__free(l->model);
  kl__free(l->base_url);
  kl__free(l->key_env);
  kl__free(l->name);
  kl__free(l);
}

const char *kl_llm_name(const kl_llm *l) {
  return l->name;
}

int kl_llm_totals(const kl_llm *l, kl_llm_usage *out) {
  return kl__result_give(out, &l->total, sizeof(l->total),
                         KL__SIZE_THROUGH(kl_llm_usage, continuations),
                         "kl_llm_usage");
}

int kl_llm_set_price(kl_llm *l, const kl_llm_price *price) {
  for (size_t i = 0; i < l->nprices; i++)
    if (strcmp(l->prices[i].model, price->model) == 0) {
      const char *m = l->prices[i].model;
      l->prices[i] = *price;
      l->prices[i].model = m;
      return 0;
    }
  if (KL__GROW(l->prices, l->cap_prices, l->nprices + 1) < 0) return KL_ENOMEM;
  char *m = kl__strdup(price->model);
  if (!m) return kl__error_oom();
  l->prices[l->nprices] = *price;
  l->prices[l->nprices++].model = m;
  return 0;
}

static const kl_llm_price *price_of(const kl_llm *l) {
  for (size_t i = 0; i < l->nprices; i++)
    if (strncmp(l->model, l->prices[i].model, strlen(l->prices[i].model)) == 0)
      return &l->prices[i];
  for (size_t i = 0; i < KL_ARRAY_SIZE(builtin_prices); i++)
    if (strncmp(l->model, builtin_prices[i].model,
                strlen(builtin_prices[i].model)) == 0)
      return &builtin_prices[i];
  return NULL;
}

/* ---- requests
 * ------------------------------------------------------------------ */

static void add_message(json_object *msgs, const char *role,
                        const char *content) {
  json_object *m = json_object_new_object();
  json_object_object_add(m, "role", json_object_new_string(role));
  json_object_object_add(m, "content", json_object_new_string(content));
  json_object_array_add(msgs, m);
}

/* The body of one request; `partial` is the reply so far when continuing
 * one the token limit cut off. */
static char *request_body(const kl_llm *l, const char *system, const char *user,
                          const char *partial) {
  json_object *o = json_object_new_object(), *msgs = json_object_new_array();
  json_object_object_add(o, "model", json_object_new_string(l->model));
  json_object_object_add(
      o, "max_tokens",
      json_object_new_int(l->cfg.max_tokens > 0 ? l->cfg.max_tokens : 8192));
  if (l->cfg.temperature >= 0)
    json_object_object_add(o, "temperature",
                           json_object_new_double(l->cfg.temperature));
  if (l->p == P_ANTHROPIC) {
    /* the system block is stable within a run: cache it */
    json_object *sys = json_object_new_array(), *blk = json_object_new_object(),
                *cc = json_object_new_object();
    json_object_object_add(blk, "type", json_object_new_string("text"));
    json_object_object_add(blk, "text", json_object_new_string(system));
    json_object_object_add(cc, "type", json_object_new_string("ephemeral"));
    json_object_object_add(blk, "cache_control", cc);
    json_object_array_add(sys, blk);
    json_object_object_add(o, "system", sys);
  } else {
    add_message(msgs, "system", system);
  }
  add_message(msgs, "user", user);
  if (partial) {
    add_message(msgs, "assistant", partial);
    add_message(msgs, "user",
                "Your reply was cut off by the token limit. Continue from "
                "where you left off, with no preamble and no repetition.");
  }
  json_object_object_add(o, "messages", msgs);
  const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  char *copy = s ? kl__strdup(s) : NULL;
  json_object_put(o);
  return copy;
}

/* A short, single-line excerpt of a body, the key blotted out. */
static void excerpt(char *out, size_t n, const char *body, const char *key) {
  size_t k = 0;
  size_t klen = key ? strlen(key) : 0;
  for (size_t i = 0; body && body[i] && k + 4 < n && i < 300; i++) {
    if (klen >= 8 && strncmp(body + i, key, klen) == 0) {
      k += (size_t)snprintf(out + k, n - k, "***");
      i += klen - 1;
      continue;
    }
    out[k++] =
        (body[i] == '\n' || body[i] == '\r' || body[i] == '\t') ? ' ' : body[i];
  }
  out[k] = '\0';
}

static bool retryable(const kl_http_response *r) {
  if (r->error == KL_EIO || r->error == KL_ETIMEOUT) return true;
  return r->status == 429 || r->status == 529 || r->status == 408 ||
         (r->status >= 500 && r->status <= 599);
}

static void sleep_s(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static double backoff(kl_llm *l, int attempt, double retry_after) {
  double base = l->cfg.backoff_s > 0 ? l->cfg.backoff_s : 1.0;
  double cap = l->cfg.backoff_max_s > 0 ? l->cfg.backoff_max_s : 60.0;
  if (retry_after >= 0) return retry_after < cap ? retry_after : cap;
  double d = base * pow(2.0, attempt);
  if (d > cap) d = cap;
  double jitter = (double)rand_r(&l->seed) / RAND_MAX; /* half to all */
  return d * (0.5 + 0.5 * jitter);
}

/* One request with its retries; the response body on success (2xx). */
static int send_with_retries(kl_llm *l, const char *body, kl_buf *out,
                             kl_llm_usage *u) {
  const char *key = getenv(l->key_env);
  if (l->p == P_ANTHROPIC && (!key || !key[0]))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "anthropic: no API key: set %s", l->key_env);
  char url[1024];
  snprintf(url, sizeof(url), "%s%s", l->base_url,
           l->p == P_ANTHROPIC ? "/v1/messages" : "/chat/completions");
  kl_buf auth = KL_BUF_INIT;
  int rc = 0;
  if (key && key[0])
    rc = l->p == P_ANTHROPIC
             ? kl__buf_printf(&auth, "x-api-key: %s", key)
             : kl__buf_printf(&auth, "Authorization: Bearer %s", key);
  const char *headers[4] = {"content-type: application/json",
                            "anthropic-version: 2023-06-01", NULL, NULL};
  size_t nh = l->p == P_ANTHROPIC ? 2 : 1;
  if (auth.ptr) headers[nh++] = auth.ptr;
  kl_http_request req = {url,
                         headers,
                         nh,
                         body,
                         strlen(body),
                         l->cfg.connect_timeout_ms,
                         l->cfg.timeout_ms > 0 ? l->cfg.timeout_ms : 600000,
                         l->cfg.max_response_bytes};
  int retries = l->cfg.max_retries >= 0 ? l->cfg.max_retries : 5;
  const char *pname = l->p == P_ANTHROPIC ? "anthropic" : "openai";
  for (int attempt = 0; rc == 0; attempt++) {
    kl_http_response resp = {0};
    resp.retry_after_s = -1;
    l->total.requests++;
    u->requests++;
    l->cfg.transport->send(l->cfg.transport->ctx, &req, &resp);
    if (resp.error == KL_ENOMEM) {
      kl_buf_dispose(&resp.body);
      rc = kl__error_oom();
      break;
    }
    if (!resp.error && resp.status >= 200 && resp.status < 300) {
      kl__buf_give(out, &resp.body);
      break;
    }
    if (retryable(&resp) && attempt < retries) {
      l->total.retries++;
      u->retries++;
      kl_buf_dispose(&resp.body);
      sleep_s(backoff(l, attempt, resp.retry_after_s));
      continue;
    }
    char ex[320];
    excerpt(ex, sizeof(ex), resp.body.ptr, key);
    if (resp.error)
      rc = kl__error(resp.error == KL_ETIMEOUT   ? KL_ETIMEOUT
                     : resp.error == KL_EINVALID ? KL_EINVALID
                                                 : KL_EIO,
                     KL_DOMAIN_NONE, "%s: %s (%s, after %d %s)", pname,
                     resp.error_text, url, attempt,
                     attempt == 1 ? "retry" : "retries");
    else
      rc = kl__error(retryable(&resp) ? KL_EIO : KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: HTTP %ld after %d %s: %s", pname, resp.status,
                     attempt, attempt == 1 ? "retry" : "retries",
                     ex[0] ? ex : "(empty body)");
    kl_buf_dispose(&resp.body);
  }
  kl_buf_dispose(&auth); /* the only copy of the key kernlab made */
  return rc;
}

/* ---- replies
 * -------------------------------------------------------------------- */

static uint64_t num(json_object *o, const char *key) {
  json_object *v;
  return o && json_object_object_get_ex(o, key, &v)
             ? (uint64_t)json_object_get_int64(v)
             : 0;
}

/* The text, whether it was cut by the token limit, and the usage. */
static int parse_reply(const kl_llm *l, const kl_buf *body, kl_buf *text,
                       bool *cut, kl_llm_usage *u) {
  const char *pname = l->p == P_ANTHROPIC ? "anthropic" : "openai";
  json_object *o = body->ptr ? json_tokener_parse(body->ptr) : NULL;
  char ex[320];
  excerpt(ex, sizeof(ex), body->ptr, NULL);
  if (!o || !json_object_is_type(o, json_type_object)) {
    json_object_put(o);
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: malformed JSON in the reply (HTTP 200): %s", pname,
                     ex[0] ? ex : "(empty body)");
  }
  json_object *usage = NULL, *v;
  size_t before = text->size;
  int rc = 0;
  *cut = false;
  if (l->p == P_ANTHROPIC) {
    json_object *content;
    if (json_object_object_get_ex(o, "content", &content) &&
        json_object_is_type(content, json_type_array))
      for (size_t i = 0; rc == 0 && i < json_object_array_length(content);
           i++) {
        json_object *blk = json_object_array_get_idx(content, i), *t;
        if (json_object_object_get_ex(blk, "text", &t))
          rc = kl__buf_puts(text, json_object_get_string(t));
      }
    *cut = json_object_object_get_ex(o, "stop_reason", &v) &&
           strcmp(json_object_get_string(v), "max_tokens") == 0;
    json_object_object_get_ex(o, "usage", &usage);
    u->input_tokens += num(usage, "input_tokens");
    u->output_tokens += num(usage, "output_tokens");
    u->cache_read_tokens += num(usage, "cache_read_input_tokens");
    u->cache_write_tokens += num(usage, "cache_creation_input_tokens");
  } else {
    json_object *choices, *c0, *msg, *content;
    if (json_object_object_get_ex(o, "choices", &choices) &&
        json_object_array_length(choices) > 0 &&
        (c0 = json_object_array_get_idx(choices, 0)) &&
        json_object_object_get_ex(c0, "message", &msg) &&
        json_object_object_get_ex(msg, "content", &content) &&
        json_object_is_type(content, json_type_string))
      rc = kl__buf_puts(text, json_object_get_string(content));
    *cut = (c0 = json_object_object_get_ex(o, "choices", &choices)
                     ? json_object_array_get_idx(choices, 0)
                     : NULL) &&
           json_object_object_get_ex(c0, "finish_reason", &v) &&
           strcmp(json_object_get_string(v), "length") == 0;
    json_object_object_get_ex(o, "usage", &usage);
    uint64_t cached = 0;
    json_object *det;
    if (usage &&
        json_object_object_get_ex(usage, "prompt_tokens_details", &det))
      cached = num(det, "cached_tokens");
    uint64_t prompt = num(usage, "prompt_tokens");
    u->input_tokens += prompt > cached ? prompt - cached : 0;
    u->cache_read_tokens += cached;
    u->output_tokens += num(usage, "completion_tokens");
  }
  json_object_put(o);
  if (rc < 0) return kl__error_oom();
  if (text->size == before && !*cut)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: an empty reply (no text): %s", pname, ex);
  return 0;
}

static void add_cost(const kl_llm *l, kl_llm_usage *u) {
  const kl_llm_price *p = price_of(l);
  u->cost_known = p != NULL;
  if (p)
    u->cost_usd = ((double)u->input_tokens * p->input +
                   (double)u->output_tokens * p->output +
                   (double)u->cache_read_tokens * p->cache_read +
                   (double)u->cache_write_tokens * p->cache_write) /
                  1e6;
}

/* ---- command and replay
 * ---------------------------------------------------------- */

static void excerpt_buf(char *out, size_t n, const kl_buf *b) {
  excerpt(out, n, b->ptr, NULL);
}

/* The prompt on the program's standard input, the reply on its output. */
static int complete_command(kl_llm *l, const char *system, const char *user,
                            kl_buf *text, kl_llm_usage *u) {
  kl_buf in = KL_BUF_INIT, errors = KL_BUF_INIT;
  if (kl__buf_printf(&in, "%s\n\n%s", system, user) < 0) {
    kl_buf_dispose(&in);
    return kl__error_oom();
  }
  kl__run_extras io = {
      .input = in.ptr, .input_len = in.size, .errors = &errors};
  kl__run_result res;
  size_t cap =
      l->cfg.max_response_bytes ? l->cfg.max_response_bytes : (size_t)8 << 20;
  long timeout = l->cfg.timeout_ms > 0 ? l->cfg.timeout_ms : 600000;
  u->requests++;
  l->total.requests++;
  int rc =
      kl__run_io(&res, (const char *const *)l->argv, NULL,
                 (int)(timeout > 0x7fffffff ? 0x7fffffff : timeout), cap, &io);
  kl_buf_dispose(&in);
  char ex[320];
  excerpt_buf(ex, sizeof(ex), &errors);
  if (rc < 0) {
  } else if (res.timed_out) {
    rc = kl__error(KL_ETIMEOUT, KL_DOMAIN_NONE,
                   "command: %s did not answer within %ld ms", l->argv[0],
                   timeout);
  } else if (res.exit_code != 0) {
    rc = kl__error(KL_EIO, KL_DOMAIN_NONE, "command: %s %s %d: %s", l->argv[0],
                   res.signal ? "died of signal" : "exited",
                   res.signal ? res.signal : res.exit_code,
                   ex[0] ? ex : "(nothing on standard error)");
  } else if (res.truncated) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                   "command: %s answered more than %zu bytes", l->argv[0], cap);
  } else if (res.output.size == 0) {
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                   "command: %s gave an empty reply: %s", l->argv[0],
                   ex[0] ? ex : "(nothing on standard error)");
  }
  if (rc == 0) kl__buf_give(text, &res.output);
  kl_buf_dispose(&res.output);
  kl_buf_dispose(&errors);
  return rc;
}

/* The next recorded reply (records/llm_recording.c reads the folder). */
static int complete_replay(kl_llm *l, kl_buf *text, kl_llm_usage *u) {
  int rc = kl__llm_recording_next(text, l->replay_dir, &l->replayed);
  if (rc < 0) return rc;
  u->requests++;
  l->total.requests++;
  return 0;
}

/* An HTTP provider's reply, continued while the token limit cuts it. */
static int complete_http(kl_llm *l, const char *system, const char *user,
                         kl_buf *text, kl_llm_usage *u) {
  int conts = l->cfg.max_continuations >= 0 ? l->cfg.max_continuations : 3;
  kl_buf body = KL_BUF_INIT;
  int rc = 0;
  for (int part = 0;; part++) {
    char *req = request_body(l, system, user, part ? text->ptr : NULL);
    if (!req) {
      rc = kl__error_oom();
      break;
    }
    bool cut = false;
    rc = send_with_retries(l, req, &body, u);
    kl__free(req);
    if (rc < 0 || (rc = parse_reply(l, &body, text, &cut, u)) < 0 || !cut)
      break;
    if (part >= conts) {
      rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "%s: the reply was still cut off by the token limit "
                     "(%d tokens) after %d continuations",
                     l->name, l->cfg.max_tokens > 0 ? l->cfg.max_tokens : 8192,
                     conts);
      break;
    }
    u->continuations++;
  }
  kl_buf_dispose(&body);
  return rc;
}

int kl_llm_complete(kl_llm *l, const char *system, const char *user,
                    kl_buf *reply, kl_llm_usage *usage) {
  kl_llm_usage u = KL_LLM_USAGE_INIT;
  /* a usage struct of a bad size is refused before anything is spent */
  int rc = usage
               ? kl__result_give(usage, &u, sizeof(u),
                                 KL__SIZE_THROUGH(kl_llm_usage, continuations),
                                 "kl_llm_usage")
               : 0;
  if (rc < 0) return rc;
  kl_buf text = KL_BUF_INIT;
  if (l->p == P_COMMAND)
    rc = complete_command(l, system, user, &text, &u);
  else if (l->p == P_REPLAY)
    rc = complete_replay(l, &text, &u);
  else
    rc = complete_http(l, system, user, &text, &u);
  /* what was spent counts whether or not the call succeeded */
  add_cost(l, &u);
  l->total.input_tokens += u.input_tokens;
  l->total.output_tokens += u.output_tokens;
  l->total.cache_read_tokens += u.cache_read_tokens;
  l->total.cache_write_tokens += u.cache_write_tokens;
  l->total.continuations += u.continuations;
  l->total.cost_usd += u.cost_usd;
  l->total.cost_known = u.cost_known;
  if (usage) /* its size was checked above */
    kl__result_give(usage, &u, sizeof(u),
                    KL__SIZE_THROUGH(kl_llm_usage, continuations),
                    "kl_llm_usage");
  if (rc == 0 && l->record_dir)
    rc = kl__llm_recording_write(l->record_dir, &l->recorded, system, user,
                                 &text);
  if (rc == 0) kl__buf_give(reply, &text);
  kl_buf_dispose(&text);
  return rc;
}

/* ---- versioned options
 * ------------------------------------------------------- */

static const size_t llm_config_sizes[] = {0, sizeof(kl_llm_config)};

KL__OPTIONS_FUNCTIONS(kl_llm_config, kl_llm_config_init, kl__llm_config_take,
                      KL_LLM_CONFIG_INIT, llm_config_sizes)
