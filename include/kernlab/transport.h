/** @file kernlab/transport.h  The HTTP transport under the LLM providers:
 *  a public extension point.
 *
 * Providers build a request and hand it to a transport; the default one is
 * libcurl (kl_transport_curl). An embedder with its own HTTP stack, or a
 * test, passes another kl_transport in kl_llm_config. A transport sends
 * one request and fills the response; it never retries (the provider
 * decides that from the status) and never logs the headers, which carry
 * the API key.
 */
#ifndef KERNLAB_TRANSPORT_H
#define KERNLAB_TRANSPORT_H

#include "common.h"

KL_BEGIN_DECLS

typedef struct kl_http_request {
  const char *url;
  const char *const *headers; /**< "Name: value" lines */
  size_t nheaders;
  const char *body; /**< POSTed as is (JSON) */
  size_t body_len;
  long connect_timeout_ms;   /**< 0: the transport's default */
  long timeout_ms;           /**< the whole exchange; 0: none */
  size_t max_response_bytes; /**< a longer body is an error */
} kl_http_request;

typedef struct kl_http_response {
  long status;          /**< HTTP status; 0 when none was received */
  kl_buf body;          /**< the response body (the caller disposes) */
  double retry_after_s; /**< the Retry-After header in seconds; < 0: none */
  int error;            /**< 0, or KL_ETIMEOUT / KL_EIO when no
                             response arrived, KL_EINVALID when it
                             was too large */
  char error_text[256]; /**< what went wrong, without headers or keys */
} kl_http_response;

typedef struct kl_transport {
  /** Send one request. Returns 0 when the exchange finished (whatever the
   *  status), or a negative code with resp->error and error_text set. */
  int (*send)(void *ctx, const kl_http_request *req, kl_http_response *resp);
  void *ctx;
} kl_transport;

/** The libcurl transport; NULL when kernlab was built without libcurl
 *  (kl_features() lacks KL_FEATURE_HTTP). */
KL_EXTERN(const kl_transport *) kl_transport_curl(void);

KL_END_DECLS

#endif /* KERNLAB_TRANSPORT_H */
