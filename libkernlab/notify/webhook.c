/* Webhooks: where they are configured, what a message looks like in each
 * format, and sending one.
 *
 * The URL is a secret (Discord and Slack put the token in its path): it
 * lives only in the kl_webhook and in the request; messages, errors and
 * records name the webhook by scheme and host. Sending is one attempt with
 * short timeouts, because a run must not wait on a chat server; the run
 * records the outcome instead. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../case/case_section.h"
#include "webhook_internal.h"

struct kl_webhook {
  char *url, *format, *source, *redacted;
  const kl_transport *transport;
};

static const char *const formats[] = {"generic", "discord", "slack"};
static const char *const keys[] = {"url", "url_env", "format"};

static bool known_format(const char *f) {
  for (size_t i = 0; i < KL_ARRAY_SIZE(formats); i++)
    if (strcmp(f, formats[i]) == 0) return true;
  return false;
}

/* scheme://host/... : no path, query or credentials. */
static char *redact(const char *url) {
  const char *p = strstr(url, "://");
  const char *host = p ? p + 3 : url;
  const char *at = strchr(host, '@'), *end = host + strcspn(host, "/?#");
  if (at && at < end) host = at + 1;
  char *out = NULL;
  kl_buf b = KL_BUF_INIT;
  if (kl__buf_printf(&b, "%.*s%.*s/...", p ? (int)(p + 3 - url) : 0, url,
                     (int)(end - host), host) == 0)
    out = kl__buf_detach(&b);
  kl_buf_dispose(&b);
  return out;
}

static void bad(kl__diag_list *diags, const char *path, const char *text,
                const ynode *n, const char *fmt, ...) KL_PRINTF(5, 6);
static void bad(kl__diag_list *diags, const char *path, const char *text,
                const ynode *n, const char *fmt, ...) {
  char *snippet = kl__snippet(text, n->line, n->column);
  va_list ap;
  va_start(ap, fmt);
  kl__diag_addv(diags, KL_EINVALID, KL_DOMAIN_NONE, path, n->line, n->column,
                snippet, fmt, ap);
  va_end(ap);
  kl__free(snippet);
}

void kl__webhook_settings_free(kl__webhook_settings *s) {
  if (!s) return;
  kl__free(s->url);
  kl__free(s->url_env);
  kl__free(s->format);
  kl__free(s->path);
  kl__free(s);
}

void kl__webhook_settings_read(kl__webhook_settings **out, const ynode *map,
                               const char *path, const char *file_text,
                               kl__diag_list *diags) {
  if (map->kind != YNODE_MAP) {
    bad(diags, path, file_text, map,
        "webhook must be a mapping (url or url_env, format)");
    return;
  }
  kl__webhook_settings *s = *out;
  if (!s && !(s = *out = kl__calloc(1, sizeof(*s)))) {
    diags->oom = true;
    return;
  }
  s->line = map->line;
  kl__free(s->path);
  if (!(s->path = kl__strdup(path))) diags->oom = true;
  for (size_t i = 0; i < map->count; i++) {
    const ynode *k = map->pairs[i].key, *v = map->pairs[i].value;
    char **dst = strcmp(k->value, "url") == 0       ? &s->url
                 : strcmp(k->value, "url_env") == 0 ? &s->url_env
                 : strcmp(k->value, "format") == 0  ? &s->format
                                                    : NULL;
    if (!dst) {
      const char *near = kl__suggest(k->value, keys, KL_ARRAY_SIZE(keys));
      bad(diags, path, file_text, k, "unknown key '%s' in webhook%s%s%s",
          k->value, near ? "; did you mean '" : " (url, url_env, format)",
          near ? near : "", near ? "'?" : "");
      continue;
    }
    if (v->kind != YNODE_SCALAR || !v->value[0]) {
      bad(diags, path, file_text, v, "webhook.%s is a non-empty text",
          k->value);
      continue;
    }
    if (dst == &s->format && !known_format(v->value)) {
      bad(diags, path, file_text, v,
          "unknown webhook format '%s' (generic, discord or slack)", v->value);
      continue;
    }
    if (dst == &s->url && strncmp(v->value, "http://", 7) &&
        strncmp(v->value, "https://", 8)) {
      bad(diags, path, file_text, v,
          "webhook.url is an http:// or https:// URL");
      continue;
    }
    kl__free(*dst);
    if (!(*dst = kl__strdup(v->value))) diags->oom = true;
  }
}

int kl_webhook_create(kl_webhook **out, const char *url, const char *format) {
  *out = NULL;
  if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "a webhook URL starts with http:// or https://");
  if (format && !known_format(format))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "unknown webhook format '%s' (generic, discord or slack)",
                     format);
  kl_webhook *w = kl__calloc(1, sizeof(*w));
  kl__secret_add(url); /* its token must never come back from a candidate */
  if (!w || !(w->url = kl__strdup(url)) ||
      !(w->format = kl__strdup(format ? format : "generic")) ||
      !(w->source = kl__strdup("caller")) || !(w->redacted = redact(url))) {
    kl_webhook_free(w);
    return kl__error_oom();
  }
  *out = w;
  return 0;
}

void kl_webhook_free(kl_webhook *w) {
  if (!w) return;
  kl__free(w->url);
  kl__free(w->format);
  kl__free(w->source);
  kl__free(w->redacted);
  kl__free(w);
}

const char *kl_webhook_format(const kl_webhook *w) {
  return w->format;
}
const char *kl_webhook_source(const kl_webhook *w) {
  return w->source;
}
const char *kl_webhook_redacted(const kl_webhook *w) {
  return w->redacted;
}
void kl_webhook_set_transport(kl_webhook *w, const kl_transport *t) {
  w->transport = t;
}

static void user_section(const ynode *value, const char *path,
                         const char *file_text, kl__diag_list *diags,
                         void *payload) {
  kl__webhook_settings_read(payload, value, path, file_text, diags);
}

/* The webhook of one layer: its url (or url_env's value) and format. */
static int from_settings(kl_webhook **out, const kl__webhook_settings *s,
                         const char *source) {
  const char *url = s->url;
  if (!url && s->url_env) {
    url = getenv(s->url_env);
    if (!url || !url[0])
      return kl__error_at(KL_EINVALID, KL_DOMAIN_NONE, s->path, s->line, 1,
                          NULL, "webhook.url_env names %s, which is not set",
                          s->url_env);
  }
  if (!url) return 0; /* a section with only a format */
  int rc = kl_webhook_create(out, url, s->format);
  if (rc == 0) {
    kl__free((*out)->source);
    if (!((*out)->source = kl__strdup(source))) {
      kl_webhook_free(*out);
      *out = NULL;
      rc = kl__error_oom();
    }
  }
  return rc;
}

/* The case's webhook: section: checked when the case loads (the case
 * keeps it; this module owns what it means), read here when used. */
static void check_case_section(const ynode *value, const char *path,
                               const char *file_text, kl__diag_list *diags) {
  kl__webhook_settings *s = NULL;
  kl__webhook_settings_read(&s, value, path, file_text, diags);
  kl__webhook_settings_free(s);
}

__attribute__((constructor)) static void own_case_section(void) {
  kl__case_section_checker("webhook", check_case_section);
}

static int read_case_section(kl__webhook_settings **out, const kl_case *c) {
  const char *path, *text;
  const ynode *n = kl__case_section(c, "webhook", &path, &text);
  *out = NULL;
  if (!n) return 0;
  kl__diag_list diags = {0};
  kl__webhook_settings_read(out, n, path, text, &diags);
  int rc = kl__diag_report(&diags, NULL, NULL);
  kl__diag_clear(&diags);
  return rc;
}

int kl_webhook_load(kl_webhook **out, const kl_case *c) {
  *out = NULL;
  const char *env_url = getenv("KL_WEBHOOK_URL");
  const char *env_format = getenv("KL_WEBHOOK_FORMAT");
  if (env_format && env_format[0] && !known_format(env_format))
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "KL_WEBHOOK_FORMAT: unknown format '%s' (generic, "
                     "discord or slack)",
                     env_format);
  kl__webhook_settings *user = NULL, *from_case = NULL;
  int rc;
  if ((rc = kl__user_config_section("webhook", user_section, &user)) < 0 ||
      (c && (rc = read_case_section(&from_case, c)) < 0))
    goto done;
  if (env_url && env_url[0]) {
    const char *format = env_format && env_format[0]      ? env_format
                         : from_case && from_case->format ? from_case->format
                         : user && user->format           ? user->format
                                                          : NULL;
    if ((rc = kl_webhook_create(out, env_url, format)) < 0) goto done;
    kl__free((*out)->source);
    if (!((*out)->source = kl__strdup("KL_WEBHOOK_URL"))) {
      rc = kl__error_oom();
      goto done;
    }
  } else if (from_case && (from_case->url || from_case->url_env)) {
    rc = from_settings(out, from_case, "case");
  } else if (user) {
    rc = from_settings(out, user, user->path ? user->path : "config");
  }
  if (rc < 0 || !*out || !env_format || !env_format[0]) goto done;
  kl__free((*out)->format);
  if (!((*out)->format = kl__strdup(env_format))) rc = kl__error_oom();
done:
  kl__webhook_settings_free(user);
  kl__webhook_settings_free(from_case);
  if (rc < 0) {
    kl_webhook_free(*out);
    *out = NULL;
  }
  return rc;
}

/* ---- messages
 * ----------------------------------------------------------------- */

static int message_text(kl_buf *b, const kl_webhook_message *m) {
  const char *cs = m->case_name ? m->case_name : "?";
  const char *run = m->run ? m->run : "-";
  if (strcmp(m->event, "run_start") == 0)
    return kl__buf_printf(b, "kernlab: run %s on %s started (proposer %s)", run,
                          cs, m->detail ? m->detail : "-");
  if (strcmp(m->event, "accepted") == 0)
    return kl__buf_printf(b,
                          "kernlab: %s run %s iteration %d ACCEPTED: x%.3f "
                          "[%.3f, %.3f] against the baseline (%.200s)",
                          cs, run, m->iteration, m->speedup, m->ci_low,
                          m->ci_high, m->detail ? m->detail : "-");
  if (strcmp(m->event, "run_end") == 0)
    return kl__buf_printf(b,
                          "kernlab: run %s on %s ended (%s) after %d "
                          "candidates: best x%.3f [%.3f, %.3f] against the "
                          "baseline",
                          run, cs, m->detail ? m->detail : "-", m->iteration,
                          m->speedup, m->ci_low, m->ci_high);
  return kl__buf_printf(b, "kernlab: a test message from kl webhook test%s%s",
                        m->case_name ? " for " : "",
                        m->case_name ? m->case_name : "");
}

static int message_body(kl_buf *b, const kl_webhook *w,
                        const kl_webhook_message *m) {
  kl_buf text = KL_BUF_INIT;
  message_text(&text, m);
  int rc = kl__buf_status(&text);
  if (rc < 0) return rc;
  if (strcmp(w->format, "discord") == 0) {
    kl__buf_puts(b, "{\"username\":\"kernlab\",\"content\":");
    kl__buf_json_string(b, text.ptr);
    kl__buf_putc(b, '}');
  } else if (strcmp(w->format, "slack") == 0) {
    kl__buf_puts(b, "{\"text\":");
    kl__buf_json_string(b, text.ptr);
    kl__buf_putc(b, '}');
  } else {
    kl__buf_puts(b, "{\"event\":");
    kl__buf_json_string(b, m->event);
    kl__buf_puts(b, ",\"case\":");
    kl__buf_json_string(b, m->case_name);
    kl__buf_puts(b, ",\"run\":");
    kl__buf_json_string(b, m->run);
    kl__buf_printf(b, ",\"iteration\":%d", m->iteration);
    if (m->speedup > 0)
      kl__buf_printf(b, ",\"speedup\":%.6g,\"ci\":[%.6g,%.6g]", m->speedup,
                     m->ci_low, m->ci_high);
    kl__buf_puts(b, ",\"detail\":");
    kl__buf_json_string(b, m->detail);
    kl__buf_puts(b, ",\"text\":");
    kl__buf_json_string(b, text.ptr);
    kl__buf_printf(b, ",\"kernlab\":\"%s\"}", KL_VERSION);
  }
  kl_buf_dispose(&text);
  return kl__buf_status(b);
}

/* An error text with any trace of the URL's path blotted out. */
static void scrub(char *text, const char *url) {
  const char *p = strstr(url, "://");
  const char *path = p ? strchr(p + 3, '/') : NULL;
  if (!path || strlen(path) < 2) return;
  for (char *hit; (hit = strstr(text, path + 1));)
    memset(hit, '*', strlen(path + 1));
}

int kl_webhook_send(const kl_webhook *w, const kl_webhook_message *m,
                    long *status) {
  if (status) *status = 0;
  if (!w || !m || !m->event)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                     "kl_webhook_send: no webhook or no event");
  const kl_transport *t = w->transport ? w->transport : kl_transport_curl();
  if (!t)
    return kl__error(KL_EUNSUPPORTED, KL_DOMAIN_NONE,
                     "webhook %s: kernlab was built without libcurl",
                     w->redacted);
  kl_buf body = KL_BUF_INIT;
  if (message_body(&body, w, m)) {
    kl_buf_dispose(&body);
    return kl__error_oom();
  }
  static const char *const headers[] = {"Content-Type: application/json",
                                        "User-Agent: kernlab/" KL_VERSION};
  kl_http_request req = {w->url,   headers,   KL_ARRAY_SIZE(headers),
                         body.ptr, body.size, 5000,
                         10000,    64 << 10};
  kl_http_response resp;
  memset(&resp, 0, sizeof(resp));
  int rc = t->send(t->ctx, &req, &resp);
  kl_buf_dispose(&body);
  if (status) *status = resp.status;
  if (rc < 0 || resp.error) {
    scrub(resp.error_text, w->url);
    kl_buf_dispose(&resp.body);
    return kl__error(KL_EIO, KL_DOMAIN_NONE, "webhook %s: %s", w->redacted,
                     resp.error_text[0] ? resp.error_text : "no answer");
  }
  if (resp.status < 200 || resp.status > 299) {
    char excerpt[121] = "";
    if (resp.body.ptr) {
      snprintf(excerpt, sizeof(excerpt), "%s", resp.body.ptr);
      for (char *q = excerpt; *q; q++)
        if (*q == '\n' || *q == '\r') *q = ' ';
      scrub(excerpt, w->url);
    }
    kl_buf_dispose(&resp.body);
    return kl__error(KL_EIO, KL_DOMAIN_NONE, "webhook %s: HTTP %ld%s%s",
                     w->redacted, resp.status, excerpt[0] ? ": " : "", excerpt);
  }
  kl_buf_dispose(&resp.body);
  return 0;
}
