/** @file kernlab/prompt.h  What goes to a language model and what comes
 *  back.
 *
 * A reply to a kernel-rewriting prompt must carry the complete kernel
 * section and one `MEMO:` line naming the idea it tries. kl_reply_parse
 * takes the code out of the reply (a fenced block, a block between
 * `// BEGIN KERNEL` and `// END KERNEL`, or a reply that is nothing but
 * code) and turns it down, with the reason, when it would waste a build:
 * no code, elisions ("rest unchanged", a line of "..."), stubs (TODO,
 * "not implemented"), non-ASCII characters in the code, an entry point
 * whose signature differs from the case's, several blocks that each define
 * the entry point, or no MEMO line. A rejected reply is not an error: the
 * reason goes back to the model with the next prompt.
 */
#ifndef KERNLAB_PROMPT_H
#define KERNLAB_PROMPT_H

#include "case.h"
#include "common.h"

KL_BEGIN_DECLS

typedef struct kl_reply kl_reply; /* opaque */

/** Parse a reply against the case's entry point and signature (read from
 *  its baseline kernel). @return 0 (see kl_reply_ok), KL_ENOMEM, or the
 *  code of reading the baseline. */
KL_EXTERN(int) kl_reply_parse(kl_reply **out, const char *text,
                              const kl_case *c);
KL_EXTERN(void) kl_reply_free(kl_reply *r);
/** Nonzero when the reply carries usable code and a memo. */
KL_EXTERN(int) kl_reply_ok(const kl_reply *r);
/** Why it was turned down (one line, with a line number where there is
 *  one), or NULL. */
KL_EXTERN(const char *) kl_reply_reason(const kl_reply *r);
/** The kernel section (NULL when none was found). */
KL_EXTERN(const char *) kl_reply_code(const kl_reply *r);
/** The text after "MEMO:" (NULL when none). */
KL_EXTERN(const char *) kl_reply_memo(const kl_reply *r);

KL_END_DECLS

#endif /* KERNLAB_PROMPT_H */
