/* The proposers: tune, llm and replay.
 *
 * tune searches a space of configurations: the case's tunables plus the
 * ones the current best kernel declares itself (`// @tunable NAME: a, b`),
 * every configuration a full assignment, keyed with the kernel's hash so a
 * configuration is never measured twice for one kernel. Strategies:
 * exhaustive (in order), random (a seeded draw from the untried ones, so a
 * replay or resume draws the same), and bandit, model-guided: each value of
 * each tunable is scored by the mean log speedup (against the baseline) of
 * the configurations measured with it, failures counting as a heavy loss,
 * plus an exploration bonus that shrinks with how often it was tried; the
 * untried configuration with the best summed score goes next.
 *
 * llm builds the prompt, asks the provider and parses the reply; when the
 * current best came from the model and declares tunables, tune takes the
 * next turns on that kernel (at most 8), so rewriting and parameter search
 * share one loop and one ledger. replay hands back, in order, what a
 * recorded run tried: its replies (parsed again) or its kernels, with
 * their configurations. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "run_internal.h"

void kl__run_proposal_dispose(proposal *p) {
  kl__free(p->source);
  kl__strv_free(p->config);
  kl__free(p->memo);
  kl__free(p->prompt);
  kl__free(p->reply);
  kl__free(p->invalid);
  memset(p, 0, sizeof(*p));
}

/* ---- the space ------------------------------------------------------------
 */

#define MAX_DIMS 16
#define MAX_VALUES 32
#define MAX_CONFIGS 100000

typedef struct space {
  size_t ndims;
  char *names[MAX_DIMS];
  char *values[MAX_DIMS][MAX_VALUES];
  size_t nvalues[MAX_DIMS];
  size_t total;
} space;

static void space_free(space *s) {
  for (size_t d = 0; d < s->ndims; d++) {
    kl__free(s->names[d]);
    for (size_t v = 0; v < s->nvalues[d]; v++)
      kl__free(s->values[d][v]);
  }
  memset(s, 0, sizeof(*s));
}

static int space_find(const space *s, const char *name) {
  for (size_t d = 0; d < s->ndims; d++)
    if (strcmp(s->names[d], name) == 0) return (int)d;
  return -1;
}

/* Lines `// @tunable NAME: v1, v2, ...` (or inside a block comment). */
static int add_declared(space *s, const char *source) {
  for (const char *p = strstr(source, "@tunable"); p;
       p = strstr(p + 1, "@tunable")) {
    const char *q = p + strlen("@tunable");
    while (*q == ' ' || *q == '\t')
      q++;
    const char *name = q;
    while (isalnum((unsigned char)*q) || *q == '_')
      q++;
    size_t nlen = (size_t)(q - name);
    while (*q == ' ' || *q == '\t')
      q++;
    if (nlen == 0 || nlen > 63 || *q != ':' || s->ndims >= MAX_DIMS) continue;
    char nm[64];
    memcpy(nm, name, nlen);
    nm[nlen] = '\0';
    if (space_find(s, nm) >= 0) continue;
    size_t d = s->ndims;
    if (!(s->names[d] = kl__strdup(nm))) return kl__error_oom();
    s->ndims++;
    q++;
    const char *eol = strchr(q, '\n');
    if (!eol) eol = q + strlen(q);
    while (q < eol && s->nvalues[d] < MAX_VALUES) {
      while (q < eol && (*q == ' ' || *q == ',' || *q == '\t'))
        q++;
      const char *v = q;
      while (q < eol && *q != ',' && *q != ' ' && *q != '\t' && *q != '*')
        q++;
      if (q > v &&
          !(s->values[d][s->nvalues[d]++] = kl__strndup(v, (size_t)(q - v))))
        return kl__error_oom();
      if (q < eol && *q == '*') break; /* the end of a block comment */
    }
    if (s->nvalues[d] == 0) { /* a declaration without values */
      kl__free(s->names[d]);
      s->ndims--;
    }
  }
  return 0;
}

static int space_build(space *s, const kl_case *c, const char *source) {
  memset(s, 0, sizeof(*s));
  for (size_t i = 0; i < kl_case_tunable_count(c) && s->ndims < MAX_DIMS; i++) {
    size_t d = s->ndims++;
    if (!(s->names[d] = kl__strdup(kl_case_tunable_name(c, i))))
      return kl__error_oom();
    for (size_t j = 0; j < kl_case_tunable_value_count(c, i) && j < MAX_VALUES;
         j++)
      if (!(s->values[d][s->nvalues[d]++] =
                kl__strdup(kl_case_tunable_value(c, i, j))))
        return kl__error_oom();
  }
  int rc = add_declared(s, source);
  if (rc < 0) return rc;
  s->total = s->ndims ? 1 : 0;
  for (size_t d = 0; d < s->ndims; d++) {
    s->total *= s->nvalues[d];
    if (s->total > MAX_CONFIGS) s->total = MAX_CONFIGS;
  }
  return 0;
}

/* Configuration `index` in mixed radix, the first tunable varying slowest. */
static char **space_config(const space *s, size_t index) {
  char **cfg = kl__calloc(s->ndims + 1, sizeof(*cfg));
  size_t digits[MAX_DIMS];
  for (size_t d = s->ndims; d-- > 0;) {
    digits[d] = index % s->nvalues[d];
    index /= s->nvalues[d];
  }
  for (size_t d = 0; cfg && d < s->ndims; d++) {
    kl_buf b = KL_BUF_INIT;
    if (kl__buf_printf(&b, "%s=%s", s->names[d], s->values[d][digits[d]]) < 0) {
      kl__strv_free(cfg);
      return NULL;
    }
    cfg[d] = kl__buf_detach(&b);
  }
  return cfg;
}

/* The value a configuration gives a tunable, or NULL. */
static const char *config_value(char *const *cfg, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; cfg && cfg[i]; i++)
    if (strncmp(cfg[i], name, n) == 0 && cfg[i][n] == '=')
      return cfg[i] + n + 1;
  return NULL;
}

/* A configuration's assignment to every dimension, where the one given
 * leaves a tunable unset: the tunable's current (first) value. */
int kl__run_full_config(char ***out, const kl_case *c, const char *source,
                        char *const *given) {
  space s;
  int rc = space_build(&s, c, source);
  *out = NULL;
  if (rc == 0) {
    char **cfg = kl__calloc(s.ndims + 1, sizeof(*cfg));
    for (size_t d = 0; cfg && d < s.ndims; d++) {
      const char *v = config_value(given, s.names[d]);
      if (!v)
        v = d < kl_case_tunable_count(c) ? kl_case_tunable_current(c, d)
                                         : s.values[d][0];
      kl_buf b = KL_BUF_INIT;
      if (kl__buf_printf(&b, "%s=%s", s.names[d], v) < 0) {
        kl__strv_free(cfg);
        cfg = NULL;
        break;
      }
      cfg[d] = kl__buf_detach(&b);
    }
    if (!cfg) rc = kl__error_oom();
    *out = cfg;
  }
  space_free(&s);
  return rc;
}

static bool tried(const kl_run *r, const char *key) {
  if (r->st.baseline_key && strcmp(r->st.baseline_key, key) == 0) return true;
  for (size_t i = 0; i < r->st.nattempts; i++)
    if (r->st.attempts[i].key && strcmp(r->st.attempts[i].key, key) == 0)
      return true;
  for (size_t i = 0; i < r->ninflight; i++)
    if (strcmp(r->inflight[i], key) == 0) return true;
  return false;
}

/* The bandit's score of one configuration (see the top of the file). */
static double bandit_score(const kl_run *r, const space *s, char *const *cfg,
                           const char *hash_prefix) {
  double score = 0;
  for (size_t d = 0; d < s->ndims; d++) {
    const char *v = config_value(cfg, s->names[d]);
    double sum = 0;
    int n = 0, total = 0;
    for (size_t i = 0; i < r->st.nattempts; i++) {
      const kl__attempt *a = &r->st.attempts[i];
      if (!a->key || strncmp(a->key, hash_prefix, 16) != 0) continue;
      total++;
      const char *av = config_value(a->config, s->names[d]);
      if (!av || !v || strcmp(av, v) != 0) continue;
      n++;
      bool timed = a->outcome == KL_OUTCOME_ACCEPTED ||
                   a->outcome == KL_OUTCOME_REJECTED;
      sum += timed ? a->log_vs_base : -1.0;
    }
    double mean = n ? sum / n : 0;
    score += mean + 0.3 * sqrt(log((double)total + 2.0) / (n + 1.0));
  }
  return score;
}

static int propose_tune(kl_run *r, proposal *p, const char *strategy) {
  space s;
  int rc = space_build(&s, r->c, r->st.best_source);
  if (rc < 0 || s.total == 0) {
    space_free(&s);
    return rc < 0 ? rc : 1;
  }
  char hash[65];
  kl__run_source_hash(r->st.best_source,
                      hash); /* once, not per configuration */
  char *best_key = kl__run_key(hash, r->st.best_config);
  if (!best_key) {
    space_free(&s);
    return kl__error_oom();
  }
  size_t *open = kl__calloc(s.total, sizeof(*open));
  size_t nopen = 0;
  for (size_t i = 0; open && i < s.total; i++) {
    char **cfg = space_config(&s, i);
    char *key = cfg ? kl__run_key(hash, cfg) : NULL;
    if (!key) {
      kl__strv_free(cfg);
      kl__free(open);
      open = NULL;
      break;
    }
    if (strcmp(key, best_key) != 0 && !tried(r, key)) open[nopen++] = i;
    kl__free(key);
    kl__strv_free(cfg);
  }
  if (!open) {
    kl__free(best_key);
    space_free(&s);
    return kl__error_oom();
  }
  rc = 1;
  if (nopen > 0) {
    size_t pick = open[0];
    if (strcmp(strategy, "random") == 0) {
      pick =
          open[kl__derive_seed(r->seed, (uint64_t)r->next_iteration) % nopen];
    } else if (strcmp(strategy, "bandit") == 0) {
      double best = -INFINITY;
      for (size_t k = 0; k < nopen; k++) {
        char **cfg = space_config(&s, open[k]);
        if (!cfg) break;
        double sc = bandit_score(r, &s, cfg, best_key);
        if (sc > best) {
          best = sc;
          pick = open[k];
        }
        kl__strv_free(cfg);
      }
    }
    p->proposer = "tune";
    p->config = space_config(&s, pick);
    p->memo = p->config ? kl__strv_join(p->config, " ") : NULL;
    rc = p->config && p->memo ? 0 : kl__error_oom();
  }
  kl__free(open);
  kl__free(best_key);
  space_free(&s);
  return rc;
}

/* ---- llm -------------------------------------------------------------------
 */

/* The prompt's Prior art: the knowledge entries that match the rules
 * fired on the best's profiles (any shape) and the case; *out NULL when
 * none match. */
#define PRIOR_ART_CHARS 4000
static int prior_art(char **out, const kl_run *r, const kl_profile_list *best) {
  *out = NULL;
  if (!r->knowledge) return 0;
  char **ids = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  size_t nshapes = best && r->o.rules ? kl_profile_list_count(best) : 0;
  for (size_t s = 0; rc == 0 && s < nshapes; s++) {
    kl_diagnosis *d = NULL;
    const kl_profile *prof = kl_profile_list_get(best, s);
    if (!prof || kl_rules_evaluate(&d, r->o.rules, prof) < 0) {
      kl_error_clear(); /* a shape without a diagnosis fires nothing */
      continue;
    }
    for (size_t i = 0; rc == 0 && i < kl_diagnosis_fired_count(d); i++) {
      kl_finding f = KL_FINDING_INIT;
      bool seen = kl_diagnosis_fired(&f, d, i) < 0 || !f.id;
      for (size_t k = 0; !seen && k < n; k++)
        seen = strcmp(ids[k], f.id) == 0;
      if (seen) continue;
      if (KL__GROW(ids, cap, n + 1) < 0 || !(ids[n] = kl__strdup(f.id)))
        rc = kl__error_oom();
      else
        n++;
    }
    kl_diagnosis_free(d);
  }
  kl_error_clear();
  kl_buf b = KL_BUF_INIT;
  if (rc == 0 &&
      (rc = kl_knowledge_prior_art(&b, r->knowledge, r->c,
                                   (const char *const *)ids, n,
                                   PRIOR_ART_CHARS)) == 0 &&
      b.size && !(*out = kl__buf_detach(&b)))
    rc = kl__error_oom();
  kl_buf_dispose(&b);
  for (size_t k = 0; k < n; k++)
    kl__free(ids[k]);
  kl__free(ids);
  return rc;
}

static int propose_llm(kl_run *r, proposal *p) {
  kl_prompt_attempt *att = kl__calloc(r->st.nattempts + 1, sizeof(*att));
  kl_prompt_shape *shapes = NULL;
  kl_prompt *pr = NULL;
  kl_reply *rep = NULL;
  kl_buf reply = KL_BUF_INIT, code = KL_BUF_INIT;
  char *art = NULL; /* Prior art */
  int rc = 0;
  if (!att) return kl__error_oom();
  for (size_t i = 0; i < r->st.nattempts; i++) {
    att[i].iteration = r->st.attempts[i].iteration;
    att[i].memo = r->st.attempts[i].memo;
    att[i].verdict = kl_outcome_name(r->st.attempts[i].outcome);
    att[i].speedup = r->st.attempts[i].speedup;
    att[i].reason = r->st.attempts[i].reason;
  }
  const kl_profile_list *best =
      r->best_profiles ? r->best_profiles : r->base_profiles;
  size_t nshapes = best ? kl_profile_list_count(best) : 0;
  if (nshapes && !(shapes = kl__calloc(nshapes, sizeof(*shapes)))) {
    rc = kl__error_oom();
    goto done;
  }
  for (size_t i = 0; i < nshapes; i++) {
    shapes[i].name = kl_profile_list_name(best, i);
    shapes[i].profile = kl_profile_list_get(best, i);
  }
  /* the best as measured: its settings come from kernlab as -D defines */
  char *cfg = kl__strv_join(r->st.best_config, " ");
  if (!cfg ||
      (cfg[0] && kl__buf_printf(&code,
                                "// kernlab builds this kernel "
                                "with -D %s (do not #define "
                                "them yourself)\n",
                                cfg) < 0) ||
      kl__buf_puts(&code, r->st.best_source) < 0) {
    kl__free(cfg);
    rc = kl__error_oom();
    goto done;
  }
  kl__free(cfg);
  kl_prompt_inputs in = KL_PROMPT_INPUTS_INIT;
  in.c = r->c;
  in.rules = r->o.rules;
  in.shapes = shapes;
  in.nshapes = nshapes;
  in.best_code = code.ptr;
  in.attempts = att;
  in.nattempts = r->st.nattempts;
  in.memory = r->memory_text;
  in.devlog = r->devlog_text;
  in.iteration = r->next_iteration;
  if ((rc = prior_art(&art, r, best)) < 0) goto done;
  in.prior_art = art;
  if ((rc = kl_prompt_build(&pr, &in)) < 0) goto done;
  kl_buf both = KL_BUF_INIT;
  if (kl__buf_printf(&both, "=== system ===\n%s\n=== user ===\n%s",
                     kl_prompt_system(pr), kl_prompt_user(pr)) < 0) {
    rc = kl__error_oom();
    goto done;
  }
  p->prompt = kl__buf_detach(&both);
  kl_llm_usage u = KL_LLM_USAGE_INIT;
  if ((rc = kl_llm_complete(r->llm, kl_prompt_system(pr), kl_prompt_user(pr),
                            &reply, &u)) < 0) {
    if (rc != KL_ENOMEM)
      rc = 2; /* the provider failed: the run stops, resumable */
    goto done;
  }
  p->proposer = "llm";
  p->usd = u.cost_usd;
  p->tokens_in = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
  p->tokens_out = u.output_tokens;
  p->reply = kl__strdup(reply.ptr ? reply.ptr : "");
  if (!p->reply || (rc = kl_reply_parse(&rep, p->reply, r->c)) < 0) {
    rc = rc < 0 ? rc : kl__error_oom();
    goto done;
  }
  if (kl_reply_ok(rep)) {
    p->source = kl__strdup(kl_reply_code(rep));
    p->memo = kl__strdup(kl_reply_memo(rep));
    if (!p->source || !p->memo) rc = kl__error_oom();
  } else {
    p->invalid = kl__strdup(kl_reply_reason(rep));
    p->memo = kl__strdup(kl_reply_memo(rep) ? kl_reply_memo(rep)
                                            : "(no usable reply)");
    if (!p->invalid || !p->memo) rc = kl__error_oom();
  }
done:
  kl_reply_free(rep);
  kl_prompt_free(pr);
  kl_buf_dispose(&reply);
  kl_buf_dispose(&code);
  kl__free(shapes);
  kl__free(att);
  kl__free(art);
  return rc;
}

/* ---- replay ----------------------------------------------------------------
 */

static int propose_replay(kl_run *r, proposal *p) {
  kl__recorded_proposal rec;
  int rc = kl__recorded_proposal_read(&rec, r->replay_dir, r->next_iteration,
                                      r->kernel_ext);
  if (rc != 0) return rc; /* 1: the recording has nothing more */
  p->proposer = "replay";
  if ((rec.config && !(p->config = kl__config_from_json(rec.config))) ||
      (rec.memo && !(p->memo = kl__strdup(rec.memo)))) {
    rc = kl__error_oom();
  } else if (rec.reply) { /* a reply is parsed again */
    kl_reply *rep = NULL;
    if (!(p->reply = kl__strdup(rec.reply)) ||
        (rc = kl_reply_parse(&rep, p->reply, r->c)) < 0) {
      rc = rc < 0 ? rc : kl__error_oom();
    } else {
      if (kl_reply_ok(rep))
        p->source = kl__strdup(kl_reply_code(rep));
      else
        p->invalid = kl__strdup(kl_reply_reason(rep));
      kl_reply_free(rep);
      if (!p->source && !p->invalid) rc = kl__error_oom();
    }
  } else if (!(p->source = kl__strdup(rec.kernel))) { /* as it was measured */
    rc = kl__error_oom();
  }
  kl__recorded_dispose(&rec);
  if (rc < 0) kl__run_proposal_dispose(p);
  return rc;
}

/* ---- dispatch ---------------------------------------------------------------
 */

/* Tune turns owed to the best kernel: it came from the model, declares
 * tunables of its own, and fewer than 8 of its configurations were tried. */
static bool tune_turn(const kl_run *r) {
  if (!strstr(r->st.best_source, "@tunable")) return false;
  char hash[65];
  kl__run_source_hash(r->st.best_source, hash);
  int n = 0;
  for (size_t i = 0; i < r->st.nattempts; i++)
    n += r->st.attempts[i].key && strncmp(r->st.attempts[i].key, hash, 16) == 0;
  return n < 8;
}

/* The caller's proposer: a kernel and a memo per call. */
static int propose_custom(kl_run *r, proposal *p) {
  kl_buf src = KL_BUF_INIT, memo = KL_BUF_INIT;
  kl_error_clear();
  int rc = r->o.propose(&src, &memo, r->st.best_source, r->next_iteration,
                        r->o.propose_payload);
  if (rc == 1 || rc < 0 || !src.ptr || !src.size) {
    kl_buf_dispose(&src);
    kl_buf_dispose(&memo);
    if (rc == 1) return 1;
    if (rc >= 0)
      kl__error(KL_EINVALID, KL_DOMAIN_NONE,
                "the custom proposer returned no kernel");
    else if (!kl_error_last() || !kl_error_last()->message)
      kl__error(KL_EUSER, KL_DOMAIN_NONE, "the custom proposer failed (%d)",
                rc);
    return 3;
  }
  p->proposer = "custom";
  p->source = kl__strndup(src.ptr, src.size);
  p->memo = memo.ptr && memo.size ? kl__strndup(memo.ptr, memo.size)
                                  : kl__strdup("custom proposal");
  kl_buf_dispose(&src);
  kl_buf_dispose(&memo);
  if (!p->source || !p->memo) return kl__error_oom();
  for (char *q = p->memo; *q; q++) /* one line */
    if (*q == '\n' || *q == '\r') *q = ' ';
  return 0;
}

/* An outside agent's candidates, from the case's inbox (records/inbox.c),
 * waited for until one comes, the inbox says STOP (1: exhausted) or a
 * budget is reached or the run is stopped (4). */
static int propose_agent(kl_run *r, proposal *p) {
  char *source = NULL, *memo = NULL;
  int rc;
  while ((rc = kl__inbox_take(&source, &memo, r->case_dir, r->dir,
                              r->next_iteration)) == 2) {
    if (kl__run_budget_reached(r)) return 4;
    struct timespec pause = {0, 200 * 1000000L};
    nanosleep(&pause, NULL);
  }
  if (rc != 0) return rc;
  p->proposer = "agent";
  p->source = source;
  p->memo = memo && memo[0] ? memo : kl__strdup("agent proposal");
  if (p->memo != memo) kl__free(memo);
  if (!p->memo) return kl__error_oom();
  for (char *q = p->memo; *q; q++) /* one line */
    if (*q == '\n' || *q == '\r') *q = ' ';
  return 0;
}

int kl__run_propose(kl_run *r, proposal *p) {
  memset(p, 0, sizeof(*p));
  if (strcmp(r->proposer, "custom") == 0) return propose_custom(r, p);
  if (strcmp(r->proposer, "agent") == 0) return propose_agent(r, p);
  if (strcmp(r->proposer, "replay") == 0) return propose_replay(r, p);
  if (strcmp(r->proposer, "tune") == 0) return propose_tune(r, p, r->strategy);
  if (!r->llm)
    return kl__error(KL_EINVALID, KL_DOMAIN_NONE, "no language model");
  if (tune_turn(r)) {
    int rc = propose_tune(r, p, "exhaustive");
    if (rc != 1) return rc;
  }
  return propose_llm(r, p);
}
