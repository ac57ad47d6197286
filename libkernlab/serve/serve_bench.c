/* kl_serve_bench: drive an OpenAI-compatible server with streaming
 * completions and measure it from the client's side (kernlab/serve.h).
 *
 * One thread, one curl multi handle: at most `concurrency` easy handles
 * in flight, a new request started as one finishes, until `requests` have
 * been sent. Each stream is Server-Sent Events; the write callback splits
 * it into lines as bytes arrive and timestamps every `data:` line with
 * text (the first is TTFT, the gaps between them ITL). `usage.
 * completion_tokens` at the end of a stream (asked for with
 * stream_options.include_usage) counts the tokens, else one per chunk with
 * text. A stream is complete at `data: [DONE]`; anything else (no
 * connection, an HTTP status other than 200, a stream cut short, the
 * request's timeout) is an error with its reason, and the run goes on.
 *
 * Prompts are words drawn from a small vocabulary by a seeded xorshift
 * generator: the same seed gives the same prompts, so two runs (before and
 * after a kernel change) send the same work. The API key, if any, is read
 * from the environment variable named, registered as a secret and never
 * written anywhere. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/json.h"
#include "kernlab/serve.h"

struct kl_serve_result {
  char *url, *model, *endpoint;
  int chat, requests, concurrency, prompt_tokens, max_tokens;
  int ok, errors;
  char *first_error;
  double wall_s;
  int64_t output_tokens, prompt_tokens_reported;
  double *ttft_ms, *itl_ms; /* ok requests; every gap */
  size_t nttft, nitl, capitl, ne2e;
  double *e2e_ms;
};

void kl_serve_result_free(kl_serve_result *r) {
  if (!r) return;
  kl__free(r->url);
  kl__free(r->model);
  kl__free(r->endpoint);
  kl__free(r->first_error);
  kl__free(r->ttft_ms);
  kl__free(r->itl_ms);
  kl__free(r->e2e_ms);
  kl__free(r);
}

int kl_serve_result_ok(const kl_serve_result *r) {
  return r ? r->ok : 0;
}
int kl_serve_result_errors(const kl_serve_result *r) {
  return r ? r->errors : 0;
}
const char *kl_serve_result_error(const kl_serve_result *r) {
  return r ? r->first_error : NULL;
}
double kl_serve_result_tokens_per_s(const kl_serve_result *r) {
  return r && r->wall_s > 0 ? (double)r->output_tokens / r->wall_s : 0;
}

/* ---- statistics --------------------------------------------------------- */

/* The q-quantile of n sorted values, linear between ranks; NaN for none
 * (the run sorts its samples once, when it ends). */
static double quantile(const double *x, size_t n, double q) {
  if (!n) return NAN;
  double pos = q * (double)(n - 1);
  size_t lo = (size_t)pos;
  double f = pos - (double)lo;
  return lo + 1 < n ? x[lo] * (1 - f) + x[lo + 1] * f : x[lo];
}

static void json_dist(kl_buf *b, const char *name, const double *x, size_t n) {
  kl__buf_printf(b, ",\"%s\":{\"n\":%zu", name, n);
  static const struct {
    const char *key;
    double q;
  } qs[] = {{"median", 0.5}, {"p90", 0.9}, {"p99", 0.99}};
  for (size_t i = 0; i < KL_ARRAY_SIZE(qs); i++) {
    double v = quantile(x, n, qs[i].q);
    if (isfinite(v))
      kl__buf_printf(b, ",\"%s\":%.4g", qs[i].key, v);
    else
      kl__buf_printf(b, ",\"%s\":null", qs[i].key);
  }
  kl__buf_putc(b, '}');
}

int kl_serve_result_json(kl_buf *out, const kl_serve_result *r) {
  kl_buf b = KL_BUF_INIT;
  kl__buf_puts(&b, "{\"url\":");
  kl__buf_json_string(&b, r->url);
  kl__buf_puts(&b, ",\"endpoint\":");
  kl__buf_json_string(&b, r->endpoint);
  kl__buf_puts(&b, ",\"model\":");
  kl__buf_json_string(&b, r->model);
  kl__buf_printf(&b,
                 ",\"requests\":%d,\"concurrency\":%d,\"prompt_tokens\":%d,"
                 "\"max_tokens\":%d,\"ok\":%d,\"errors\":%d,\"error\":",
                 r->requests, r->concurrency, r->prompt_tokens, r->max_tokens,
                 r->ok, r->errors);
  kl__buf_json_string(&b, r->first_error);
  kl__buf_printf(&b,
                 ",\"wall_s\":%.4f,\"output_tokens\":%lld,"
                 "\"tokens_per_s\":%.4g,\"requests_per_s\":%.4g",
                 r->wall_s, (long long)r->output_tokens,
                 kl_serve_result_tokens_per_s(r),
                 r->wall_s > 0 ? r->ok / r->wall_s : 0);
  json_dist(&b, "ttft_ms", r->ttft_ms, r->nttft);
  json_dist(&b, "itl_ms", r->itl_ms, r->nitl);
  json_dist(&b, "e2e_ms", r->e2e_ms, r->ne2e);
  kl__buf_puts(&b, "}\n");
  int rc = kl__buf_status(&b);
  if (rc == 0) kl__buf_give(out, &b);
  return rc;
}

int kl_serve_result_text(kl_buf *out, const kl_serve_result *r) {
  const double *t = r->ttft_ms, *g = r->itl_ms;
  kl__buf_printf(out,
                 "%s %s (model %s): %d requests, %d at a time, %d-word "
                 "prompts, up to %d tokens\n",
                 r->url, r->endpoint, r->model, r->requests, r->concurrency,
                 r->prompt_tokens, r->max_tokens);
  kl__buf_printf(out,
                 "ok %d, errors %d; %.2f s; %lld output tokens: %.1f tok/s, "
                 "%.2f req/s\n",
                 r->ok, r->errors, r->wall_s, (long long)r->output_tokens,
                 kl_serve_result_tokens_per_s(r),
                 r->wall_s > 0 ? r->ok / r->wall_s : 0);
  if (r->nttft)
    kl__buf_printf(out, "TTFT ms: median %.4g, p90 %.4g, p99 %.4g\n",
                   quantile(t, r->nttft, 0.5), quantile(t, r->nttft, 0.9),
                   quantile(t, r->nttft, 0.99));
  if (r->nitl)
    kl__buf_printf(out, "ITL ms:  median %.4g, p90 %.4g, p99 %.4g\n",
                   quantile(g, r->nitl, 0.5), quantile(g, r->nitl, 0.9),
                   quantile(g, r->nitl, 0.99));
  if (r->first_error) kl__buf_printf(out, "first error: %s\n", r->first_error);
  return kl__buf_status(out);
}

/* ---- options --------------------------------------------------------------
 */

/* The caller's options, whatever their version, over this library's
 * defaults (kl_serve_bench takes them through it, below). */
int kl__serve_options_take(kl_serve_options *full,
                           const kl_serve_options *given);

static const size_t serve_options_sizes[] = {
    0, offsetof(kl_serve_options, prompts), sizeof(kl_serve_options)};

KL__OPTIONS_FUNCTIONS(kl_serve_options, kl_serve_options_init,
                      kl__serve_options_take, KL_SERVE_OPTIONS_INIT,
                      serve_options_sizes)

#ifdef KL_HAVE_CURL
#include <curl/curl.h>
#include <pthread.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void sort(double *x, size_t n) {
  if (n) qsort(x, n, sizeof *x, cmp_double); /* x may be NULL when n is 0 */
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_setup(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
}

typedef struct stream {
  CURL *h;
  struct curl_slist *hdrs;
  char *body;
  kl_buf line;     /* a partial line */
  double t0, last; /* sent; the last chunk with text */
  double first;    /* the first chunk with text; 0: none yet */
  int64_t chunks, usage;
  bool done, bad;
  char why[160];
  kl_serve_result *r;
  double *gaps; /* this request's ITL, merged when it succeeds */
  size_t ngaps, capgaps;
  bool chat;
} stream;

static const char *const words[] = {
    "the",    "model",  "kernel", "token",   "fast",   "memory", "block",
    "thread", "warp",   "cache",  "tensor",  "layer",  "row",    "column",
    "sum",    "scale",  "shift",  "batch",   "shape",  "value",  "stream",
    "launch", "device", "host",   "compute", "bound",  "time",   "graph",
    "fused",  "split",  "reduce", "matrix",  "vector", "float",  "half",
    "query",  "key",    "server", "request", "answer", "prompt", "word"};

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* The request body: the given prompt, or one of n generated words,
 * streamed. */
static char *request_body(const kl_serve_options *o, uint64_t *rng,
                          const char *given) {
  kl_buf p = KL_BUF_INIT, b = KL_BUF_INIT;
  if (given)
    kl__buf_puts(&p, given);
  else
    for (int i = 0; i < o->prompt_tokens; i++)
      kl__buf_printf(&p, "%s%s", i ? " " : "",
                     words[xorshift(rng) % KL_ARRAY_SIZE(words)]);
  kl__buf_puts(&b, "{\"model\":");
  kl__buf_json_string(&b, o->model);
  if (o->chat) {
    kl__buf_puts(&b, ",\"messages\":[{\"role\":\"user\",\"content\":");
    kl__buf_json_string(&b, p.ptr ? p.ptr : "");
    kl__buf_puts(&b, "}]");
  } else {
    kl__buf_puts(&b, ",\"prompt\":");
    kl__buf_json_string(&b, p.ptr ? p.ptr : "");
  }
  kl__buf_printf(&b,
                 ",\"max_tokens\":%d,\"temperature\":0,\"stream\":true,"
                 "\"stream_options\":{\"include_usage\":true}}",
                 o->max_tokens);
  kl_buf_dispose(&p);
  return kl__buf_status(&b) == 0 ? kl__buf_detach(&b) : NULL;
}

static void fail(stream *s, const char *why) {
  if (!s->bad) snprintf(s->why, sizeof s->why, "%.150s", why);
  s->bad = true;
}

/* One `data:` line of the stream, at time now. */
static void on_data(stream *s, const char *payload, double now) {
  while (*payload == ' ')
    payload++;
  if (strncmp(payload, "[DONE]", 6) == 0) {
    s->done = true;
    return;
  }
  json_object *o = json_tokener_parse(payload);
  if (!o) {
    fail(s, "a stream line that is not JSON");
    return;
  }
  json_object *err = kl__json_get(o, "error");
  if (err) {
    json_object *m = kl__json_get(err, "message");
    char why[160];
    snprintf(why, sizeof why, "the server sent an error: %.120s",
             json_object_get_string(m ? m : err));
    fail(s, why);
  }
  json_object *usage = kl__json_get(o, "usage");
  if (usage && kl__json_get(usage, "completion_tokens"))
    s->usage = (int64_t)kl__json_num(usage, "completion_tokens");
  json_object *choices = kl__json_get(o, "choices");
  json_object *c0 = choices && json_object_is_type(choices, json_type_array) &&
                            json_object_array_length(choices)
                        ? json_object_array_get_idx(choices, 0)
                        : NULL;
  json_object *text = s->chat
                          ? kl__json_get(kl__json_get(c0, "delta"), "content")
                          : kl__json_get(c0, "text");
  const char *t = text ? json_object_get_string(text) : NULL;
  if (t && *t) {
    if (s->chunks == 0) {
      s->first = now;
    } else if (s->ngaps < 1u << 20) {
      if (s->ngaps == s->capgaps) {
        size_t cap = s->capgaps ? 2 * s->capgaps : 64;
        double *g = kl__realloc(s->gaps, cap * sizeof *g);
        if (g) s->gaps = g, s->capgaps = cap;
      }
      if (s->ngaps < s->capgaps) s->gaps[s->ngaps++] = (now - s->last);
    }
    s->last = now;
    s->chunks++;
  }
  json_object_put(o);
}

static size_t on_bytes(char *data, size_t size, size_t n, void *ud) {
  stream *s = ud;
  size_t len = size * n;
  double now = kl__now_ms();
  for (size_t i = 0; i < len; i++) {
    if (data[i] != '\n') {
      if (s->line.size < (1u << 20)) kl__buf_putc(&s->line, data[i]);
      continue;
    }
    const char *l = s->line.ptr ? s->line.ptr : "";
    size_t ln = s->line.size;
    if (ln && l[ln - 1] == '\r') s->line.ptr[--s->line.size] = '\0';
    if (strncmp(l, "data:", 5) == 0) on_data(s, l + 5, now);
    s->line.size = 0;
    if (s->line.ptr) s->line.ptr[0] = '\0';
  }
  return len;
}

static int start(stream *s, CURLM *m, const char *url, const char *auth,
                 const kl_serve_options *o, uint64_t *rng, const char *prompt) {
  memset(s, 0, sizeof *s);
  s->chat = o->chat != 0;
  if (!(s->body = request_body(o, rng, prompt)) || !(s->h = curl_easy_init()))
    return kl__error_oom();
  s->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
  if (auth) s->hdrs = curl_slist_append(s->hdrs, auth);
  curl_easy_setopt(s->h, CURLOPT_URL, url);
  curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, s->hdrs);
  curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, s->body);
  curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_bytes);
  curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(s->h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(s->h, CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
  curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
  s->t0 = kl__now_ms();
  curl_multi_add_handle(m, s->h);
  return 0;
}

static void finish(stream *s, CURLM *m, CURLcode cc, kl_serve_result *r,
                   double *end) {
  long status = 0;
  curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
  char why[200];
  if (cc != CURLE_OK) {
    snprintf(why, sizeof why, "%s", curl_easy_strerror(cc));
    fail(s, why);
  } else if (status != 200) {
    snprintf(why, sizeof why, "HTTP status %ld", status);
    fail(s, why);
  } else if (!s->done) {
    fail(s, "the stream ended without data: [DONE]");
  }
  double now = kl__now_ms();
  if (!s->bad) {
    r->ok++;
    r->output_tokens += s->usage > 0 ? s->usage : s->chunks;
    if (s->chunks) r->ttft_ms[r->nttft++] = s->first - s->t0;
    r->e2e_ms[r->ne2e++] = now - s->t0;
    if (r->nitl + s->ngaps > r->capitl) {
      size_t cap = (r->nitl + s->ngaps) * 2;
      double *g = kl__realloc(r->itl_ms, cap * sizeof *g);
      if (g) r->itl_ms = g, r->capitl = cap;
    }
    for (size_t i = 0; i < s->ngaps && r->nitl < r->capitl; i++)
      r->itl_ms[r->nitl++] = s->gaps[i];
    if (now > *end) *end = now;
  } else {
    r->errors++;
    if (!r->first_error) r->first_error = kl__strdup(s->why);
  }
  curl_multi_remove_handle(m, s->h);
  curl_easy_cleanup(s->h);
  curl_slist_free_all(s->hdrs);
  kl__free(s->body);
  kl__free(s->gaps);
  kl_buf_dispose(&s->line);
  s->h = NULL;
}

static int run(kl_serve_result *r, const kl_serve_options *o,
               char *const *prompts, size_t nprompts) {
  pthread_once(&curl_once, curl_setup);
  /* the endpoint: URL[/v1]/completions or /chat/completions */
  kl_buf url = KL_BUF_INIT, auth = KL_BUF_INIT;
  size_t n = strlen(o->url);
  while (n && o->url[n - 1] == '/')
    n--;
  bool v1 = n >= 3 && strncmp(o->url + n - 3, "/v1", 3) == 0;
  kl__buf_printf(&url, "%.*s%s%s", (int)n, o->url, v1 ? "" : "/v1",
                 r->endpoint);
  const char *key = o->api_key_env ? getenv(o->api_key_env) : NULL;
  if (key && *key) {
    kl__secret_add(key);
    kl__buf_printf(&auth, "Authorization: Bearer %s", key);
  }
  int rc = kl__buf_status(&url);
  if (rc == 0) rc = kl__buf_status(&auth);
  stream *s = rc == 0 ? kl__calloc((size_t)o->concurrency, sizeof *s) : NULL;
  CURLM *m = s ? curl_multi_init() : NULL;
  if (rc == 0 && (!s || !m)) rc = kl__error_oom();
  uint64_t rng = o->seed ? o->seed : 1;
  int sent = 0, active = 0;
  double t0 = kl__now_ms(), end = t0;
  while (rc == 0 && (sent < o->requests || active > 0)) {
    for (int i = 0; rc == 0 && i < o->concurrency && sent < o->requests; i++)
      if (!s[i].h) {
        rc = start(&s[i], m, url.ptr, auth.ptr, o, &rng,
                   nprompts ? prompts[(size_t)sent % nprompts] : NULL);
        if (rc == 0) sent++, active++;
      }
    int running = 0;
    curl_multi_perform(m, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left)))
      if (msg->msg == CURLMSG_DONE) {
        stream *st = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &st);
        finish(st, m, msg->data.result, r, &end);
        active--;
      }
    if (active > 0) curl_multi_poll(m, NULL, 0, 50, NULL);
  }
  for (int i = 0; s && i < o->concurrency; i++)
    if (s[i].h) finish(&s[i], m, CURLE_ABORTED_BY_CALLBACK, r, &end);
  r->wall_s = (end - t0) / 1e3;
  sort(r->ttft_ms, r->nttft);
  sort(r->itl_ms, r->nitl);
  sort(r->e2e_ms, r->ne2e);
  if (m) curl_multi_cleanup(m);
  kl__free(s);
  kl_buf_dispose(&url);
  if (auth.ptr) memset(auth.ptr, 0, auth.size);
  kl_buf_dispose(&auth);
  return rc;
}
#endif

#ifdef KL_HAVE_CURL
/* A file of prompts, one a line; empty lines skipped. */
static int read_prompts(char ***out, size_t *n, const char *path) {
  kl_buf text = KL_BUF_INIT;
  size_t cap = 0;
  int rc = kl__read_file(&text, path);
  for (const char *p = text.ptr; rc == 0 && p && *p;) {
    size_t len = strcspn(p, "\n");
    size_t end = len;
    while (end > 0 && (p[end - 1] == '\r' || p[end - 1] == ' '))
      end--;
    if (end > 0) {
      char *line = kl__strndup(p, end);
      if (!line || KL__GROW(*out, cap, *n + 1) < 0) {
        kl__free(line);
        rc = kl__error_oom();
        break;
      }
      (*out)[(*n)++] = line;
    }
    p += len + (p[len] == '\n');
  }
  kl_buf_dispose(&text);
  if (rc == 0 && *n == 0)
    rc = kl__error(KL_EINVALID, KL_DOMAIN_NONE, "%s: no prompt in it", path);
  return rc;
}
#endif

int kl_serve_bench(kl_serve_result **out, const kl_serve_options *given) {
  *out = NULL;
  kl_serve_options o;
  int rc = kl__serve_options_take(&o, given);
  if (rc < 0) return rc;
  if (!o.url || strncmp(o.url, "http", 4) != 0)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "a serving benchmark needs the server's URL "
                     "(http://host:port)");
  if (!o.model) o.model = "default";
  if (!o.requests) o.requests = 32;
  if (!o.concurrency) o.concurrency = 4;
  if (!o.prompt_tokens) o.prompt_tokens = 128;
  if (!o.max_tokens) o.max_tokens = 128;
  if (!o.timeout_ms) o.timeout_ms = 120000;
  if (o.requests < 0 || o.concurrency < 0 || o.prompt_tokens < 0 ||
      o.max_tokens < 0 || o.timeout_ms < 0 || o.requests > 1000000 ||
      o.concurrency > 4096 || o.prompt_tokens > 1000000)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "requests, concurrency, prompt and token counts must "
                     "be positive (and sane)");
  if (o.concurrency > o.requests) o.concurrency = o.requests;
#ifndef KL_HAVE_CURL
  return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE,
                   "kernlab was built without libcurl: no serving benchmark");
#else
  kl_serve_result *r = kl__calloc(1, sizeof *r);
  if (!r) return kl__error_oom();
  r->url = kl__strdup(o.url);
  r->model = kl__strdup(o.model);
  r->endpoint = kl__strdup(o.chat ? "/chat/completions" : "/completions");
  r->chat = o.chat;
  r->requests = o.requests;
  r->concurrency = o.concurrency;
  r->prompt_tokens = o.prompts ? 0 : o.prompt_tokens; /* 0: from a file */
  r->max_tokens = o.max_tokens;
  r->ttft_ms = kl__calloc((size_t)o.requests, sizeof(double));
  r->e2e_ms = kl__calloc((size_t)o.requests, sizeof(double));
  if (!r->url || !r->model || !r->endpoint || !r->ttft_ms || !r->e2e_ms)
    rc = kl__error_oom();
  char **prompts = NULL;
  size_t nprompts = 0;
  if (rc == 0 && o.prompts) rc = read_prompts(&prompts, &nprompts, o.prompts);
  if (rc == 0) rc = run(r, &o, prompts, nprompts);
  for (size_t i = 0; i < nprompts; i++)
    kl__free(prompts[i]);
  kl__free(prompts);
  if (rc < 0) {
    kl_serve_result_free(r);
    return rc;
  }
  *out = r;
  return 0;
#endif
}
