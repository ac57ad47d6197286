/* The case's `timing:` section: how its kernel is timed, as the program it
 * comes from runs it.
 *
 *   timing:
 *     launch: graph   # stream (default) | graph: each sample replays the
 *                     # launch from a CUDA graph (cuda cases only)
 *
 * A kernel that its program launches from a CUDA graph pays no host launch
 * overhead there; timed from a stream it would, and a launch-bound
 * kernel's decision would then rest on the host. kl bench's --launch
 * overrides the key. */
#include <string.h>

#include "loader.h"

void kl__ld_read_timing(loader *ld, const ynode *root) {
  kl_case *c = ld->c;
  c->launch = KL_LAUNCH_STREAM;
  const ynode *t = kl__ld_map_get(root, "timing");
  if (!t || !kl__ld_want(ld, t, YNODE_MAP, "timing")) return;
  static const char *const keys[] = {"launch"};
  kl__ld_check_keys(ld, t, keys, KL_ARRAY_SIZE(keys), "timing");
  const ynode *n = kl__ld_map_get(t, "launch");
  if (!n || !kl__ld_scalar(ld, n, "timing.launch")) return;
  int launch = kl_launch_parse(n->value);
  if (launch < 0 || launch == KL_LAUNCH_BOTH) {
    kl__ld_err(ld, n,
               launch < 0 ? "timing.launch '%s': expected stream or graph"
                          : "timing.launch '%s': expected stream or graph (a "
                            "case times one way; kl bench and kl compare "
                            "--launch both time both)",
               n->value);
    return;
  }
  if (launch == KL_LAUNCH_GRAPH && ld->backend_ok &&
      c->backend != KL_BACKEND_CUDA) {
    kl__ld_err(ld, n,
               "timing.launch: graph replays a CUDA-C launch from a CUDA "
               "graph; a %s case launches otherwise (stream only)",
               kl_backend_name(c->backend));
    return;
  }
  c->launch = launch;
}

int kl_case_timing_launch(const kl_case *c) {
  return c ? c->launch : KL_LAUNCH_STREAM;
}
