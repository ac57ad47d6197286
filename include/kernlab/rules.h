/** @file kernlab/rules.h  Rules and skills: from metrics to a diagnosis.
 *
 * A rule set is data: YAML files of rules, each
 *   {id, severity: high|medium|low, when, finding, action, skill, group}
 * where `when` is an expression (kernlab/expr.h) over metric names (catalog
 * names, Nsight Compute names, raw CUPTI names) and `finding` and `action`
 * are templates that print values: "L2 hit rate {l2_hit_rate_pct:.0f}%".
 * The default set lives in the share folder (its rules folder); user files are
 * added on top, and a user rule with an id already in the set replaces it.
 * Skills are short markdown notes (skills/<id>.md) a rule points to; each
 * starts with a `**Signal**:` line. See docs/rules.md.
 *
 * Evaluating a rule set against a profile gives a diagnosis: the profile's
 * verdict, the rules that fired (most severe first, then by how far past
 * its threshold), and the rules that could not be evaluated because a
 * metric they read was not collected -- never counted as passed.
 *
 * Threads: a rule set is not changed once loaded: kl_rules_evaluate only
 * reads it, so one set may serve several threads at once; each diagnosis
 * is its caller's.
 */
#ifndef KERNLAB_RULES_H
#define KERNLAB_RULES_H

#include "common.h"
#include "profile.h"

KL_BEGIN_DECLS

typedef enum kl_severity {
  KL_SEVERITY_LOW = 1,
  KL_SEVERITY_MEDIUM = 2,
  KL_SEVERITY_HIGH = 3
} kl_severity;
/** "high", "medium", "low"; "unknown" otherwise. */
KL_EXTERN(const char *) kl_severity_name(kl_severity s);

typedef struct kl_rules kl_rules; /* opaque */

#define KL_RULES_OPTIONS_VERSION 1
typedef struct kl_rules_options {
  unsigned version;   /**< KL_RULES_OPTIONS_VERSION */
  kl_diag_fn on_diag; /**< called for every error of a file, by position */
  void *payload;      /**< passed to on_diag */
} kl_rules_options;
#define KL_RULES_OPTIONS_INIT                                                  \
  { KL_RULES_OPTIONS_VERSION, NULL, NULL }
/** Fill *opts with the defaults of the fields its `version` knows
 *  (KL_RULES_OPTIONS_VERSION when built against this header) and nothing
 *  past them: a program built against an older, smaller struct is
 *  never overrun. @return 0, KL_EINVALID for an unknown version. */
KL_EXTERN(int) kl_rules_options_init(kl_rules_options *opts, unsigned version);

/** An empty rule set that knows the default skills (share/kernlab/skills).
 *  @return 0, KL_ENOTFOUND (no share folder), KL_EINVALID (a bad skill
 *  file), KL_ENOMEM. */
KL_EXTERN(int) kl_rules_create(kl_rules **out, const kl_rules_options *opts);
KL_EXTERN(void) kl_rules_free(kl_rules *rs);

/** Add the default rule files (every .yaml file in share/kernlab/rules, by
 * name). */
KL_EXTERN(int) kl_rules_add_defaults(kl_rules *rs);
/** Add a rule file. Every error is reported (file:line:column, through
 *  on_diag; the first one is the last error) and the set is left as it was.
 *  @return 0, KL_EINVALID, KL_ENOTFOUND, KL_EIO, KL_ENOMEM. */
KL_EXTERN(int) kl_rules_add_file(kl_rules *rs, const char *path);
/** The same from text; `path` names it in messages. */
KL_EXTERN(int)
kl_rules_add_string(kl_rules *rs, const char *yaml, const char *path);
/** Add skills from a folder of <id>.md files; an id already known is
 *  replaced. Rules added later may point at them. */
KL_EXTERN(int) kl_rules_add_skills(kl_rules *rs, const char *dir);

/** One rule; strings borrowed from the set. */
typedef struct kl_rule_info {
  size_t size; /**< KL_RULE_INFO_INIT sets it; nothing is written past it */
  const char *id;
  kl_severity severity;
  const char *when, *finding, *action; /**< as written */
  const char *skill;                   /**< NULL when it names none */
  const char *group;
  const char *path; /**< the file it came from */
  int line;         /**< where its entry starts */
} kl_rule_info;
#define KL_RULE_INFO_INIT KL_SIZED_INIT(kl_rule_info)
KL_EXTERN(size_t) kl_rules_count(const kl_rules *rs);
KL_EXTERN(int) kl_rules_get(kl_rule_info *out, const kl_rules *rs, size_t i);

/** One skill; strings borrowed from the set. */
typedef struct kl_skill_info {
  size_t size; /**< KL_SKILL_INFO_INIT sets it; nothing is written past it */
  const char *id;
  const char *signal; /**< the text after "**Signal**:" */
  const char *text;   /**< the whole note */
  const char *path;
} kl_skill_info;
#define KL_SKILL_INFO_INIT KL_SIZED_INIT(kl_skill_info)
KL_EXTERN(size_t) kl_rules_skill_count(const kl_rules *rs);
KL_EXTERN(int) kl_rules_skill(kl_skill_info *out, const kl_rules *rs, size_t i);
/** The skill catalog a prompt carries: one line per skill,
 *  "- <id>: <signal>". */
KL_EXTERN(int) kl_rules_skill_catalog(kl_buf *out, const kl_rules *rs);

/* ---- diagnosis ------------------------------------------------------------
 */

typedef struct kl_diagnosis kl_diagnosis; /* opaque, owns its strings */

/** Evaluate every rule against a profile. @return 0, KL_ENOMEM. */
KL_EXTERN(int)
kl_rules_evaluate(kl_diagnosis **out, const kl_rules *rs, const kl_profile *p);
KL_EXTERN(void) kl_diagnosis_free(kl_diagnosis *d);

KL_EXTERN(kl_bottleneck) kl_diagnosis_bottleneck(const kl_diagnosis *d);
/** The profile's verdict line. */
KL_EXTERN(const char *) kl_diagnosis_verdict(const kl_diagnosis *d);

/** A rule that fired. */
typedef struct kl_finding {
  size_t size; /**< KL_FINDING_INIT sets it; nothing is written past it */
  const char *id;
  kl_severity severity;
  const char *group;
  const char *finding; /**< the template with the values filled in */
  const char *action;
  const char *skill;     /**< NULL when the rule names none */
  double margin;         /**< how far past its threshold the main comparison
                              of `when` is: |a - b| / max(|a|, |b|), 0..1 */
  const char *without;   /**< the metrics the profile lacked, ", "-separated,
                              when `when` held whatever their values (a rule
                              decides on what is present); NULL otherwise */
  const char *stand_ins; /**< values it read that were stand-ins for what
                              kernlab measures, "name: source; ..." (an
                              ncu export's nearest metric); NULL when none */
} kl_finding;
#define KL_FINDING_INIT KL_SIZED_INIT(kl_finding)
/** Fired rules, most severe first, then by margin, then in rule order. */
KL_EXTERN(size_t) kl_diagnosis_fired_count(const kl_diagnosis *d);
KL_EXTERN(int)
kl_diagnosis_fired(kl_finding *out, const kl_diagnosis *d, size_t i);

/** A rule that could not be evaluated. */
typedef struct kl_unevaluated {
  size_t size; /**< KL_UNEVALUATED_INIT sets it; nothing is written past it */
  const char *id;
  const char *missing; /**< the names not collected, ", "-separated, or
                            NULL when evaluation failed for another reason */
  const char *reason;  /**< one line: "missing: a, b" or the error */
} kl_unevaluated;
#define KL_UNEVALUATED_INIT KL_SIZED_INIT(kl_unevaluated)
KL_EXTERN(size_t) kl_diagnosis_unevaluated_count(const kl_diagnosis *d);
KL_EXTERN(int)
kl_diagnosis_unevaluated(kl_unevaluated *out, const kl_diagnosis *d, size_t i);
/** Rules that were evaluated and did not fire. */
KL_EXTERN(size_t) kl_diagnosis_passed_count(const kl_diagnosis *d);
/** Nsight Compute's own advice on the profile (kl_profile_advice), ranked
 *  by its estimated speedup. *agrees (when given) is the fired rule of this
 *  diagnosis that names the same problem, or NULL; *covers, when none
 *  agrees, the rule naming it that could not be evaluated on these metrics
 *  (ncu saw what the export does not carry), or NULL. The advice is the
 *  diagnosis's; NULL past the end. */
KL_EXTERN(size_t) kl_diagnosis_advice_count(const kl_diagnosis *d);
KL_EXTERN(const kl_ncu_advice *)
kl_diagnosis_advice(const kl_diagnosis *d, size_t i, const char **agrees,
                    const char **covers);

/** The full text of the fired rules' skills, at most `max` distinct ones
 *  (a prompt uses 5), in the order of kl_diagnosis_fired. */
KL_EXTERN(int)
kl_diagnosis_skills(kl_buf *out, const kl_diagnosis *d, const kl_rules *rs,
                    size_t max);

/** {"bottleneck", "verdict", "fired": [{"id", "severity", "group",
 *  "finding", "action", "skill", "margin"}...], "not_evaluated": [{"id",
 *  "missing": [...], "reason"}...], "passed": [ids]} */
KL_EXTERN(int) kl_diagnosis_json(kl_buf *out, const kl_diagnosis *d);

KL_END_DECLS

#endif /* KERNLAB_RULES_H */
