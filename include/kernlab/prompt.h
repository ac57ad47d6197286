/** @file kernlab/prompt.h  What goes to a language model and what comes
 *  back.
 *
 * A prompt has two blocks. The system block is stable within a run, so a
 * provider can cache it: the rules of the game, the skill catalog, the full
 * text of the skills that fired on the baseline, patterns that worked on
 * other cases, this case's memory. The user block changes every iteration:
 * program.md, the current best kernel, its signature and launch geometry,
 * the bottleneck verdict, fired findings and actions, a compact metric
 * table, per-shape times and roofline position, and this run's attempts.
 * Every section has a token budget (tokens estimated as characters / 4);
 * what does not fit is cut from its least important end and the prompt
 * says so. The kernel itself is never cut: a cut kernel would invite the
 * elisions the reply parser turns down.
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
#include "profile.h"
#include "rules.h"

KL_BEGIN_DECLS

typedef struct kl_reply kl_reply; /* opaque */

/** Parse a reply against the case's entry point and signature (read from
 *  its baseline kernel). @return 0 (see kl_reply_ok), KL_ENOMEM, or the
 *  code of reading the baseline. */
KL_EXTERN(int)
kl_reply_parse(kl_reply **out, const char *text, const kl_case *c);
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

/* ---- prompts ---------------------------------------------------------------
 */

/** One shape's profile (from a report or recorded metrics). */
typedef struct kl_prompt_shape {
  const char *name;
  const kl_profile *profile; /**< may be NULL: no profile at this shape */
} kl_prompt_shape;

/** One earlier attempt of this run. */
typedef struct kl_prompt_attempt {
  int iteration;
  const char *memo;    /**< the reply's MEMO, or NULL */
  const char *verdict; /**< "faster", "same", "slower", "INCORRECT", ... */
  double speedup;      /**< against the best so far; 0 when not timed */
  const char *reason;  /**< why it was rejected, or NULL */
} kl_prompt_attempt;

#define KL_PROMPT_INPUTS_VERSION 2
typedef struct kl_prompt_inputs {
  unsigned version;              /**< KL_PROMPT_INPUTS_VERSION */
  const kl_case *c;              /**< required */
  const kl_rules *rules;         /**< skills and findings; NULL: none */
  const kl_prompt_shape *shapes; /**< profiles per shape; may be empty */
  size_t nshapes;
  const char *best_code; /**< NULL: the baseline kernel */
  const kl_prompt_attempt *attempts;
  size_t nattempts;
  const char *patterns; /**< what worked on other cases, or NULL */
  const char *memory;   /**< this case's memory from earlier runs, or NULL */
  int iteration;        /**< 1-based; labels the user block */
  double budget_scale;  /**< multiplies every section's budget; 0 = 1 */
  /* version 2 */
  const char *devlog;    /**< the tail of the case's devlog.md, or NULL */
  const char *prior_art; /**< knowledge entries that match (kl_knowledge_
                              prior_art), or NULL */
} kl_prompt_inputs;
#define KL_PROMPT_INPUTS_INIT                                                  \
  {                                                                            \
    KL_PROMPT_INPUTS_VERSION, NULL, NULL, NULL, 0, NULL, NULL, 0, NULL, NULL,  \
        1, 0, NULL, NULL                                                       \
  }
/** Fill *in with the defaults of the fields its `version` knows
 *  (KL_PROMPT_INPUTS_VERSION when built against this header) and nothing
 *  past them. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int) kl_prompt_inputs_init(kl_prompt_inputs *in, unsigned version);

typedef struct kl_prompt kl_prompt; /* opaque */

/** Assemble a prompt. @return 0, KL_EINVALID (no case), KL_EIO (a case
 *  file cannot be read), KL_ENOMEM. */
KL_EXTERN(int) kl_prompt_build(kl_prompt **out, const kl_prompt_inputs *in);
KL_EXTERN(void) kl_prompt_free(kl_prompt *p);
/** The system block (stable within a run) and the user block. */
KL_EXTERN(const char *) kl_prompt_system(const kl_prompt *p);
KL_EXTERN(const char *) kl_prompt_user(const kl_prompt *p);

/** One section as sent. */
typedef struct kl_prompt_section_info {
  size_t size; /**< KL_PROMPT_SECTION_INFO_INIT sets it; nothing is written past
                  it */
  const char *name; /**< "rules", "skill_catalog", "best_kernel", ... */
  int system;       /**< 1: in the system block, 0: in the user block */
  size_t chars;     /**< as sent */
  size_t tokens;    /**< estimated: chars / 4, rounded up */
  size_t budget;    /**< its budget in tokens */
  size_t cut_chars; /**< characters left out to fit (0: none) */
} kl_prompt_section_info;
#define KL_PROMPT_SECTION_INFO_INIT KL_SIZED_INIT(kl_prompt_section_info)
KL_EXTERN(size_t) kl_prompt_section_count(const kl_prompt *p);
KL_EXTERN(int)
kl_prompt_section(kl_prompt_section_info *out, const kl_prompt *p, size_t i);
/** {"system": ..., "user": ..., "sections": [{"name", "block", "chars",
 *  "tokens", "budget", "cut_chars"}], "tokens": total} */
KL_EXTERN(int) kl_prompt_json(kl_buf *out, const kl_prompt *p);

KL_END_DECLS

#endif /* KERNLAB_PROMPT_H */
