/** @file kernlab/webhook.h  Notifications: a message to a webhook when a
 *  run starts, when a candidate is accepted, and when the run ends.
 *
 * Three formats: "generic" (a JSON object with the event's fields),
 * "discord" ({"content": text}) and "slack" ({"text": text}). Where the
 * webhook comes from, highest first: the environment (KL_WEBHOOK_URL, and
 * KL_WEBHOOK_FORMAT), the case's `webhook:` section, the user config
 * file's `webhook:` section; each section takes `url` or `url_env` (the
 * name of a variable holding it) and `format`. A webhook URL carries its
 * token, so it is a secret: kernlab never writes or prints it, only its
 * scheme and host (kl_webhook_redacted). A failing webhook never fails a
 * run: the run records what was attempted and sent, and why not.
 *
 * Threads: a kl_webhook is used by one thread at a time.
 */
#ifndef KERNLAB_WEBHOOK_H
#define KERNLAB_WEBHOOK_H

#include "case.h"
#include "common.h"
#include "transport.h"

KL_BEGIN_DECLS

typedef struct kl_webhook kl_webhook; /* opaque: where and how to notify */

/** The configured webhook for case `c` (NULL: no case section). *out is
 *  NULL when none is configured. @return 0, KL_EINVALID (a bad config
 *  section, located; an unknown KL_WEBHOOK_FORMAT; a url_env naming an
 *  unset variable), KL_ENOMEM */
KL_EXTERN(int) kl_webhook_load(kl_webhook **out, const kl_case *c);
/** A webhook from a URL (http or https) and a format (NULL: "generic"). */
KL_EXTERN(int)
kl_webhook_create(kl_webhook **out, const char *url, const char *format);
KL_EXTERN(void) kl_webhook_free(kl_webhook *w);
/** "generic", "discord" or "slack". */
KL_EXTERN(const char *) kl_webhook_format(const kl_webhook *w);
/** Where it was configured: "KL_WEBHOOK_URL", "case", the config file's
 *  path, or "caller". */
KL_EXTERN(const char *) kl_webhook_source(const kl_webhook *w);
/** The URL without its path and query ("https://hooks.slack.com/..."):
 *  safe to print. */
KL_EXTERN(const char *) kl_webhook_redacted(const kl_webhook *w);
/** Send through another transport (tests); NULL: libcurl. */
KL_EXTERN(void) kl_webhook_set_transport(kl_webhook *w, const kl_transport *t);

/** One notification. */
typedef struct kl_webhook_message {
  const char *event; /**< "run_start", "accepted", "run_end", "test" */
  const char *case_name, *run;
  int iteration; /**< accepted: the candidate's; run_end: candidates */
  double speedup, ci_low, ci_high; /**< accepted: against the baseline;
                                        run_end: the best; 0: none */
  const char *detail; /**< accepted: the memo; run_end: the stop reason;
                           run_start: the proposer */
} kl_webhook_message;

/** Send one message (5 s to connect, 10 s in all, no retry: a slow
 *  receiver must not hold up a run). *status gets the HTTP status (0 when
 *  none came back). @return 0 when the receiver answered 2xx; KL_EIO
 *  with a one-line message (no URL path) otherwise. */
KL_EXTERN(int)
kl_webhook_send(const kl_webhook *w, const kl_webhook_message *m, long *status);

KL_END_DECLS

#endif /* KERNLAB_WEBHOOK_H */
