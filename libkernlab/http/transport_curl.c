/* The libcurl transport: one POST, the body capped, Retry-After read from
 * the headers, timeouts for connecting and for the whole exchange.
 * curl_global_init runs once per process (pthread_once); each request uses
 * its own easy handle, so the transport is safe from several threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/internal.h"
#include "kernlab/transport.h"

#ifdef KL_HAVE_CURL
#include <curl/curl.h>
#include <pthread.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_setup(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
}

typedef struct sink {
  kl_http_response *resp;
  size_t cap;
  bool too_big;
  bool oom;
} sink;

static size_t on_body(char *data, size_t size, size_t n, void *ud) {
  sink *s = ud;
  size_t len = size * n;
  if (s->resp->body.size + len > s->cap) {
    s->too_big = true;
    return 0; /* aborts the transfer */
  }
  if (kl__buf_put(&s->resp->body, data, len) < 0) {
    s->oom = true;
    return 0;
  }
  return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud) {
  sink *s = ud;
  size_t len = size * n;
  if (len > 12 && strncasecmp(data, "retry-after:", 12) == 0) {
    char buf[64];
    size_t k = len - 12 < sizeof(buf) - 1 ? len - 12 : sizeof(buf) - 1;
    memcpy(buf, data + 12, k);
    buf[k] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end != buf && v >= 0)
      s->resp->retry_after_s = v; /* an HTTP date is ignored */
  }
  return len;
}

static int curl_send(void *ctx, const kl_http_request *req,
                     kl_http_response *resp) {
  (void)ctx;
  pthread_once(&curl_once, curl_setup);
  resp->status = 0;
  resp->retry_after_s = -1;
  resp->error = 0;
  resp->error_text[0] = '\0';
  CURL *h = curl_easy_init();
  if (!h) {
    resp->error = KL_ENOMEM;
    snprintf(resp->error_text, sizeof(resp->error_text),
             "curl_easy_init failed");
    return KL_ENOMEM;
  }
  struct curl_slist *hdrs = NULL;
  for (size_t i = 0; i < req->nheaders; i++) {
    struct curl_slist *more = curl_slist_append(hdrs, req->headers[i]);
    if (!more) {
      curl_slist_free_all(hdrs);
      curl_easy_cleanup(h);
      resp->error = KL_ENOMEM;
      return KL_ENOMEM;
    }
    hdrs = more;
  }
  sink s = {resp,
            req->max_response_bytes ? req->max_response_bytes : (size_t)8 << 20,
            false, false};
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_URL, req->url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &s);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   req->connect_timeout_ms > 0 ? req->connect_timeout_ms
                                               : 10000L);
  if (req->timeout_ms > 0)
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms);
  CURLcode cc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  int rc = 0;
  if (s.oom) {
    resp->error = rc = KL_ENOMEM;
    snprintf(resp->error_text, sizeof(resp->error_text), "out of memory");
  } else if (s.too_big) {
    resp->error = rc = KL_EINVALID;
    snprintf(resp->error_text, sizeof(resp->error_text),
             "the response is larger than %zu bytes", s.cap);
  } else if (cc == CURLE_OPERATION_TIMEDOUT) {
    resp->error = rc = KL_ETIMEOUT;
    snprintf(resp->error_text, sizeof(resp->error_text), "timed out: %.200s",
             errbuf[0] ? errbuf : curl_easy_strerror(cc));
  } else if (cc != CURLE_OK) {
    resp->error = rc = KL_EIO;
    snprintf(resp->error_text, sizeof(resp->error_text), "%s",
             errbuf[0] ? errbuf : curl_easy_strerror(cc));
  }
  resp->status = rc ? 0 : status;
  return rc;
}

static const kl_transport curl_transport = {curl_send, NULL};

const kl_transport *kl_transport_curl(void) {
  return &curl_transport;
}

#else

const kl_transport *kl_transport_curl(void) {
  return NULL;
}

#endif
