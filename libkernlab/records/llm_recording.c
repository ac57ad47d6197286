/* A run's recording of its model exchanges, RUN/llm/: NNNN.prompt.txt (the
 * system prompt, a "===== user =====" line, the user prompt) and
 * NNNN.reply.txt, numbered from 0001 in the order they were asked. The llm
 * module writes it as it asks (kl__llm_recording_write) and the replay
 * provider reads the replies back in order (kl__llm_recording_next): one
 * writer, one reader, as for every record.
 *
 * A prompt with no reply beside it is a recording stopped between the two;
 * its resumed run went on at the next number, so the reader steps over it.
 * A write never replaces an earlier exchange: the next free number is
 * taken. */
#include <stdio.h>

#include "records.h"

static int numbered(char *out, size_t n, const char *dir, int i,
                    const char *what) {
  return snprintf(out, n, "%s/%04d.%s.txt", dir, i, what) < (int)n
             ? 0
             : kl__error(KL_EINVALID, KL_DOMAIN_NONE, "%s: path too long", dir);
}

int kl__llm_recording_next(kl_buf *reply, const char *dir, int *replayed) {
  char path[4096];
  int rc = numbered(path, sizeof(path), dir, *replayed + 1, "reply");
  if (rc < 0) return rc;
  for (int k = *replayed + 1; !kl__is_file(path); k++) {
    char prompt[4096];
    if ((rc = numbered(prompt, sizeof(prompt), dir, k, "prompt")) < 0)
      return rc;
    if (!kl__is_file(prompt) ||
        (rc = numbered(path, sizeof(path), dir, k + 1, "reply")) < 0)
      break;
    if (kl__is_file(path)) *replayed = k;
  }
  if (rc < 0) return rc;
  if (!kl__is_file(path))
    return kl__error(KL_ENOTFOUND, KL_DOMAIN_NONE,
                     "replay: no recorded reply #%d in %s (the recording has "
                     "%d)",
                     *replayed + 1, dir, *replayed);
  kl_buf b = KL_BUF_INIT;
  if ((rc = kl__read_file(&b, path)) < 0) return rc;
  (*replayed)++;
  kl__buf_give(reply, &b);
  return 0;
}

int kl__llm_recording_write(const char *dir, int *recorded, const char *system,
                            const char *user, const kl_buf *reply) {
  char path[4096];
  kl_buf prompt = KL_BUF_INIT;
  int i = *recorded + 1;
  kl__buf_printf(&prompt, "%s\n\n===== user =====\n\n%s", system, user);
  int rc;
  if ((rc = kl__buf_status(&prompt)) < 0 || (rc = kl__mkdir_p(dir)) < 0)
    goto done;
  /* the next free number: a resumed run's folder has the earlier ones */
  for (;; i++) {
    if ((rc = numbered(path, sizeof(path), dir, i, "prompt")) < 0) goto done;
    if (!kl__is_file(path)) break;
  }
  if ((rc = kl__record_new_file(path, prompt.ptr, prompt.size)) < 0 ||
      (rc = numbered(path, sizeof(path), dir, i, "reply")) < 0 ||
      (rc = kl__record_new_file(path, reply->ptr ? reply->ptr : "",
                                reply->size)) < 0)
    goto done;
  *recorded = i;
done:
  kl_buf_dispose(&prompt);
  return rc;
}
