/** @file kernlab/serve.h  A serving benchmark against an OpenAI-compatible
 *  server (`kl serve-bench`).
 *
 * The objective of a kernel change in a model server is the server's
 * speed: tokens per second and latency through its HTTP API. kl_serve_bench
 * sends `requests` streaming completions (`/v1/completions`, or
 * `/v1/chat/completions` with `chat`), at most `concurrency` in flight,
 * each a prompt of `prompt_tokens` words from a seeded generator (the same
 * seed, the same prompts) asking for `max_tokens`. Every chunk of every
 * stream is timestamped on arrival: time to first token (TTFT), the gaps
 * between chunks (inter-token latency, ITL), output tokens (the usage the
 * server reports at the end of a stream, else one per chunk with text),
 * and over the run output tokens per second and requests per second. A
 * request that fails (no connection, an HTTP error, a stream that ends
 * without [DONE]) is counted with its reason; what the others measured is
 * kept, so a server that goes away mid-run still leaves a result.
 */
#ifndef KERNLAB_SERVE_H
#define KERNLAB_SERVE_H

#include "common.h"

KL_BEGIN_DECLS

#define KL_SERVE_OPTIONS_VERSION 2
typedef struct kl_serve_options {
  unsigned version;        /**< KL_SERVE_OPTIONS_VERSION */
  const char *url;         /**< the server: http://host:port, with or
                                without /v1 (required) */
  const char *model;       /**< the request's "model" (default "default") */
  int chat;                /**< nonzero: /v1/chat/completions */
  int requests;            /**< requests in all; 0: 32 */
  int concurrency;         /**< in flight at once; 0: 4 */
  int prompt_tokens;       /**< words per prompt; 0: 128 */
  int max_tokens;          /**< per request; 0: 128 */
  uint64_t seed;           /**< the prompts' generator; 0: 1 */
  const char *api_key_env; /**< an environment variable holding the key
                                (sent as a bearer token); NULL: none */
  int timeout_ms;          /**< per request; 0: 120000 */
  /* version 2 */
  const char *prompts; /**< a file of prompts, one a line (empty lines
                            skipped), sent in order and again from the
                            first when the requests outnumber them; NULL:
                            the seeded generator */
} kl_serve_options;
#define KL_SERVE_OPTIONS_INIT                                                  \
  { KL_SERVE_OPTIONS_VERSION, NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, 0, NULL }
/** Fill *opts with the defaults of the fields its `version` knows.
 *  @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int) kl_serve_options_init(kl_serve_options *opts, unsigned version);

typedef struct kl_serve_result kl_serve_result; /* opaque */

/** Run the benchmark. @return 0 with *out (failed requests are in it),
 *  KL_EINVALID (options), KL_EUNSUPPORTED (built without libcurl),
 *  KL_ENOMEM. */
KL_EXTERN(int)
kl_serve_bench(kl_serve_result **out, const kl_serve_options *opts);
KL_EXTERN(void) kl_serve_result_free(kl_serve_result *r);

/** Requests that finished, and that failed. */
KL_EXTERN(int) kl_serve_result_ok(const kl_serve_result *r);
KL_EXTERN(int) kl_serve_result_errors(const kl_serve_result *r);
/** The first failure's reason, or NULL. */
KL_EXTERN(const char *) kl_serve_result_error(const kl_serve_result *r);
/** Output tokens per second over the run (first request sent to last
 *  finished); 0 when nothing finished. */
KL_EXTERN(double) kl_serve_result_tokens_per_s(const kl_serve_result *r);

/** The result as one JSON object (docs/json.md, "Serving benchmark"). */
KL_EXTERN(int) kl_serve_result_json(kl_buf *out, const kl_serve_result *r);
/** The result for people, a few lines. */
KL_EXTERN(int) kl_serve_result_text(kl_buf *out, const kl_serve_result *r);

KL_END_DECLS

#endif /* KERNLAB_SERVE_H */
