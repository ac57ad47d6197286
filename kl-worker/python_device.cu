/* The Python worker's device library (libkernlab-device.so): the cold-cache
 * flush and the SM clock probe of the CUDA harness (cuda_probes.inc, the
 * same text), on a stream the caller names (a torch or CuPy stream: the
 * runtime's and the driver's stream handles are one). The Python worker's
 * plugins call these from their flush, clock_mark, flush_mark and
 * clock_read, so the CUPTI timer cuts a Python candidate's samples at the
 * same markers as a CUDA candidate's; kl-worker's calibration times the
 * probe alone (op_calibrate.c). Built as PTX for compute_75: the driver
 * compiles it for the device at load. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_probes.inc"

#define KL_DEVICE_API extern "C" __attribute__((visibility("default")))

static char last_error[512];

KL_DEVICE_API int kl_device_flush(void *stream) {
  return klh_flush_on((cudaStream_t)stream, last_error, sizeof(last_error));
}

/* Each plugin reads back only its own probes (the sampler pairs them with
 * its samples): one ring per plugin, never freed (plugins live as long as
 * the worker). NULL when out of memory. */
KL_DEVICE_API void *kl_device_probes_new(void) {
  return calloc(1, sizeof(klh_probe_ring));
}

KL_DEVICE_API int kl_device_clock_mark(void *probes, void *stream,
                                       int spin_ns) {
  return klh_clock_mark_on((klh_probe_ring *)probes, (cudaStream_t)stream,
                           spin_ns, last_error, sizeof(last_error));
}

KL_DEVICE_API int kl_device_flush_mark(void *probes, void *stream) {
  return klh_flush_mark_on((klh_probe_ring *)probes, (cudaStream_t)stream,
                           last_error, sizeof(last_error));
}

KL_DEVICE_API int kl_device_clock_read(void *probes, double *mhz,
                                       uint64_t max, uint64_t *n) {
  return klh_clock_read_all((klh_probe_ring *)probes, mhz, max, n, last_error,
                            sizeof(last_error));
}

/* Wait for the device (the worker's calibration, op_calibrate.c, times
 * the probe with nothing else queued). */
KL_DEVICE_API int kl_device_sync(void) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return 0;
  snprintf(last_error, sizeof(last_error), "%s", cudaGetErrorString(e));
  return 1;
}

KL_DEVICE_API const char *kl_device_error(void) { return last_error; }
