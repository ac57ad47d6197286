/* The description kl-pyworker loads for a python case (python_case.c). */
#ifndef KL_HARNESS_PYTHON_CASE_H
#define KL_HARNESS_PYTHON_CASE_H

#include "../core/internal.h"
#include "kernlab/case.h"

/* The case's description as JSON, naming candidate_path as the file whose
 * forward runs (NULL: the module's own, the baseline). */
int kl__python_case_describe(kl_buf *out, const kl_case *c,
                             const char *candidate_path);

#endif /* KL_HARNESS_PYTHON_CASE_H */
