/* Sections of case.yaml that another module owns and reads (llm:,
 * webhook:): the case keeps them as written. A module that owns one
 * registers a checker when the library loads (a constructor), and
 * kl_case_load then reports that section's mistakes with the case's own;
 * the case never calls into its owners. All the owners see of a case. */
#ifndef KL_CASE_SECTION_H
#define KL_CASE_SECTION_H

#include "../core/internal.h"
#include "kernlab/case.h"

struct ynode;

typedef void (*kl__case_section_fn)(const struct ynode *value, const char *path,
                                    const char *file_text,
                                    kl__diag_list *diags);
void kl__case_section_checker(const char *name, kl__case_section_fn fn);
/* The section `name` of c (NULL when it has none), and where it was read:
 * the file's path and text, for located messages. */
const struct ynode *kl__case_section(const kl_case *c, const char *name,
                                     const char **path, const char **text);

#endif /* KL_CASE_SECTION_H */
