/* A device plugin's launch captured once in a CUDA graph and replayed, as
 * a program under CUDA graphs runs it (the time request's "launch":
 * "graph"; docs/integrity.md).
 *
 * Capture: the instance's stream is put in capture mode (thread-local:
 * an allocation, a synchronisation or a launch on the legacy default
 * stream made while capturing fails the capture instead of running), the
 * launch runs through the launch guard as any timed launch (so the launch
 * contract and the timed_work gate judge it: what the graph holds is what
 * the capture launched), and the graph is checked before it is
 * instantiated: it holds work, and every kernel the launch ran is one of
 * its nodes (a kernel launched on a stream that was not forked from the
 * instance's runs at capture instead of joining the graph; replaying the
 * rest would time less than the launch does). A capture that fails says
 * why in the terms a kernel engineer fixes: which call, and that a
 * launcher under graphs launches on ctx->stream.
 *
 * Replay: cuGraphLaunch on the sampling's shared stream, inside the launch
 * guard's window so that copies and memsets the graph holds count as the
 * sample's work. The graph keeps the buffers' addresses it was captured
 * with, so an instance's graph lives as long as its buffers: the timer
 * makes one per placement set and frees them with the sets.
 *
 * The driver is reached through dlsym, as op_device.c does, so the worker
 * keeps no link to libcuda. */
#ifdef KL_HAVE_CUPTI
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_internal.h"

struct klw_graph {
  CUgraph graph;
  CUgraphExec exec;
};

static struct {
  bool tried, ok;
  CUresult (*begin)(CUstream, CUstreamCaptureMode);
  CUresult (*end)(CUstream, CUgraph *);
  CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*launch)(CUgraphExec, CUstream);
  CUresult (*exec_destroy)(CUgraphExec);
  CUresult (*destroy)(CUgraph);
  CUresult (*nodes)(CUgraph, CUgraphNode *, size_t *);
  CUresult (*node_type)(CUgraphNode, CUgraphNodeType *);
  CUresult (*error_string)(CUresult, const char **);
} drv;

static char why_not[256]; /* why the driver's graph API is not here */

static bool driver(char *err, size_t errlen) {
  if (drv.tried) {
    if (!drv.ok) snprintf(err, errlen, "%s", why_not);
    return drv.ok;
  }
  drv.tried = true;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    snprintf(why_not, sizeof(why_not), "libcuda.so.1: %s", dlerror());
    snprintf(err, errlen, "%s", why_not);
    return false;
  }
  const struct {
    void **slot;
    const char *name;
  } syms[] = {{(void **)&drv.begin, "cuStreamBeginCapture_v2"},
              {(void **)&drv.end, "cuStreamEndCapture"},
              {(void **)&drv.instantiate, "cuGraphInstantiateWithFlags"},
              {(void **)&drv.launch, "cuGraphLaunch"},
              {(void **)&drv.exec_destroy, "cuGraphExecDestroy"},
              {(void **)&drv.destroy, "cuGraphDestroy"},
              {(void **)&drv.nodes, "cuGraphGetNodes"},
              {(void **)&drv.node_type, "cuGraphNodeGetType"},
              {(void **)&drv.error_string, "cuGetErrorString"}};
  for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
    if (!(*syms[i].slot = dlsym(h, syms[i].name))) {
      snprintf(why_not, sizeof(why_not), "the CUDA driver lacks %s",
               syms[i].name);
      snprintf(err, errlen, "%s", why_not);
      return false; /* the handle stays open: the worker holds the driver */
    }
  drv.ok = true;
  return true;
}

static const char *cu_text(CUresult r) {
  const char *s = NULL;
  if (drv.error_string) drv.error_string(r, &s);
  return s ? s : "unknown CUDA error";
}

/* The graph's work: its nodes, and of them the kernels. */
static int count_nodes(CUgraph g, size_t *all, size_t *kernels) {
  size_t n = 0;
  *all = *kernels = 0;
  if (drv.nodes(g, NULL, &n) != CUDA_SUCCESS) return -1;
  *all = n;
  if (n == 0) return 0;
  CUgraphNode *nodes = calloc(n, sizeof(*nodes));
  if (!nodes) return -1;
  int rc = drv.nodes(g, nodes, &n) == CUDA_SUCCESS ? 0 : -1;
  for (size_t i = 0; i < n && rc == 0; i++) {
    CUgraphNodeType t;
    if (drv.node_type(nodes[i], &t) != CUDA_SUCCESS)
      rc = -1;
    else if (t == CU_GRAPH_NODE_TYPE_KERNEL)
      (*kernels)++;
  }
  free(nodes);
  return rc;
}

static const char *const graph_rule =
    "under --launch graph a launcher must queue all its work on ctx->stream "
    "(or streams forked from it and joined back), without allocating or "
    "synchronising";

int klw_graph_capture(const kl_plugin *pl, void *inst, klw_graph **out,
                      char *err, size_t errlen) {
  *out = NULL;
  if (!driver(err, errlen)) return KLW_GRAPH_ENV;
  CUstream stream = (CUstream)pl->stream(inst);
  CUresult r = drv.begin(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (r != CUDA_SUCCESS) {
    snprintf(err, errlen, "CUDA graph capture could not start: %s", cu_text(r));
    return KLW_GRAPH_ENV;
  }
  int launch_rc = klw_launch(pl, inst);
  /* the launch's words before the capture's end can replace them */
  char launch_err[320];
  snprintf(launch_err, sizeof(launch_err), "%s",
           launch_rc ? klw_launch_error(pl, inst) : "");
  CUgraph g = NULL;
  r = drv.end(stream, &g);
  if (launch_rc && strstr(launch_err, "the launch called")) {
    /* the launch contract's own words: the gate's verdict stands */
    snprintf(err, errlen, "%s", launch_err);
    if (g) drv.destroy(g);
    return KLW_GRAPH_LAUNCH;
  }
  if (launch_rc || r != CUDA_SUCCESS) {
    snprintf(err, errlen,
             "the launch cannot be captured in a CUDA graph: %s (a launch on "
             "the legacy default stream, stream 0, or a call a capture "
             "forbids); %s",
             launch_rc ? launch_err : cu_text(r), graph_rule);
    if (g) drv.destroy(g);
    return KLW_GRAPH_LAUNCH;
  }
  size_t all = 0, kernels = 0;
  const klw_launch_kernels *ran = klw_last_launch_kernels();
  if (count_nodes(g, &all, &kernels) < 0) {
    snprintf(err, errlen, "the captured CUDA graph cannot be read");
    drv.destroy(g);
    return KLW_GRAPH_ENV;
  }
  if (all == 0 || (ran && ran->total > kernels)) {
    snprintf(err, errlen,
             "the CUDA graph captured %zu of the %llu kernel%s the launch "
             "ran: the others went to a stream outside the capture; %s",
             kernels, ran ? (unsigned long long)ran->total : 0ull,
             ran && ran->total == 1 ? "" : "s", graph_rule);
    drv.destroy(g);
    return KLW_GRAPH_LAUNCH;
  }
  klw_graph *kg = calloc(1, sizeof(*kg));
  if (!kg) {
    snprintf(err, errlen, "out of memory");
    drv.destroy(g);
    return KLW_GRAPH_ENV;
  }
  kg->graph = g;
  if ((r = drv.instantiate(&kg->exec, g, 0)) != CUDA_SUCCESS) {
    snprintf(err, errlen, "the captured CUDA graph cannot be instantiated: %s",
             cu_text(r));
    klw_graph_free(kg);
    return KLW_GRAPH_ENV;
  }
  *out = kg;
  return 0;
}

static klw_graph *replaying;
static void *replay_stream;

static int replay_now(void) {
  CUresult r = drv.launch(replaying->exec, (CUstream)replay_stream);
  return r == CUDA_SUCCESS ? 0 : (int)r;
}

int klw_graph_replay(klw_graph *g, void *stream, char *err, size_t errlen) {
  replaying = g;
  replay_stream = stream;
  int r = klw_launch_window(replay_now);
  if (r) {
    snprintf(err, errlen, "CUDA graph launch: %s", cu_text((CUresult)r));
    return -1;
  }
  return 0;
}

void klw_graph_free(klw_graph *g) {
  if (!g) return;
  if (g->exec) drv.exec_destroy(g->exec);
  if (g->graph) drv.destroy(g->graph);
  free(g);
}
#endif /* KL_HAVE_CUPTI */
