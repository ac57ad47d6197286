/* {"op":"device"}: the CUDA device the worker sees, its clocks, memory
 * peak and L2, and the sandbox it runs in; with "context":1 it also makes
 * the device's primary context. The driver is opened at run time
 * (dlopen): a worker built with CUDA still runs host cases where there is
 * no driver. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_internal.h"

/* ---- devices (CUDA)
 * ---------------------------------------------------------- */

/* The device's primary context (the runtime and torch both use it),
 * retained once for the process's life and made current here. 0, or the
 * driver's error. */
static int primary_context(void *h, int dev) {
  typedef int (*fn)();
  static void *ctx;
  fn retain = (fn)dlsym(h, "cuDevicePrimaryCtxRetain"),
     set = (fn)dlsym(h, "cuCtxSetCurrent");
  if (!retain || !set) return -1;
  int rc = ctx ? 0 : retain(&ctx, dev);
  if (rc) ctx = NULL;
  return rc ? rc : set(ctx);
}

/* Device-to-device copy bandwidth in GB/s (bytes read plus bytes written),
 * the best of three 256 MiB copies timed with events; 0 when any call
 * fails. The driver's memory-clock attribute reads 0 on recent drivers, so
 * the roofline gate's bound is measured, once per worker, when asked
 * ({"op":"device","memory":1}). */
static double copy_gbps(void *h, int dev) {
  typedef int (*fn)();
  fn alloc = (fn)dlsym(h, "cuMemAlloc_v2"),
     mfree = (fn)dlsym(h, "cuMemFree_v2"),
     copy = (fn)dlsym(h, "cuMemcpyDtoDAsync_v2"),
     ev_create = (fn)dlsym(h, "cuEventCreate"),
     ev_record = (fn)dlsym(h, "cuEventRecord"),
     ev_sync = (fn)dlsym(h, "cuEventSynchronize"),
     ev_elapsed = (fn)dlsym(h, "cuEventElapsedTime"),
     ev_destroy = (fn)dlsym(h, "cuEventDestroy_v2");
  if (!alloc || !mfree || !copy || !ev_create || !ev_record || !ev_sync ||
      !ev_elapsed || !ev_destroy)
    return 0;
  void *e0 = NULL, *e1 = NULL;
  unsigned long long a = 0, b = 0;
  size_t bytes = (size_t)256 << 20;
  double best = 0;
  if (primary_context(h, dev) || alloc(&a, bytes) || alloc(&b, bytes) ||
      ev_create(&e0, 0) || ev_create(&e1, 0))
    goto done;
  for (int i = 0; i < 4; i++) {
    float ms = 0;
    if (ev_record(e0, NULL) || copy(b, a, bytes, NULL) || ev_record(e1, NULL) ||
        ev_sync(e1) || ev_elapsed(&ms, e0, e1))
      goto done;
    double gbps = 2.0 * (double)bytes / (ms * 1e6);
    if (i > 0 && ms > 0 && gbps > best) best = gbps;
  }
done:
  if (e0) ev_destroy(e0);
  if (e1) ev_destroy(e1);
  if (a) mfree(a);
  if (b) mfree(b);
  return best;
}

/* Device dev's UUID, as NVML and CUDA_VISIBLE_DEVICES name it; "" when
 * the driver cannot say. */
static void device_uuid(void *h, int dev, char *uuid, size_t n) {
  int (*cu_uuid)(unsigned char *, int) =
      (int (*)(unsigned char *, int))dlsym(h, "cuDeviceGetUuid_v2");
  unsigned char u[16];
  uuid[0] = 0;
  if (cu_uuid && cu_uuid(u, dev) == 0)
    snprintf(uuid, n,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
             u[11], u[12], u[13], u[14], u[15]);
}

int klw_device_identity(char *uuid, size_t n, int *driver) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  uuid[0] = 0;
  *driver = 0;
  if (!h) return -1;
  int (*cu_init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
  int (*cu_get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
  int (*cu_version)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
  int dev = 0;
  if (!cu_init || cu_init(0) != 0 || !cu_get || cu_get(&dev, 0) != 0) return -1;
  device_uuid(h, dev, uuid, n);
  if (cu_version) cu_version(driver);
  return uuid[0] ? 0 : -1;
}

/* The driver is opened at run time: a worker built with CUDA must still run
 * host cases where there is no driver. */
void klw_op_device(json_object *req) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(1));
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  int count = 0;
  char name[256] = "", why[256] = "", uuid[48] = "";
  int clock_khz = 0, sms = 0, mem_khz = 0, bus_bits = 0, l2 = 0;
  double copy = 0;
  if (!h) {
    snprintf(why, sizeof(why), "no CUDA driver (libcuda.so.1: %s)", dlerror());
  } else {
    int (*cu_init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*cu_count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
    int (*cu_get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
    int (*cu_name)(char *, int, int) =
        (int (*)(char *, int, int))dlsym(h, "cuDeviceGetName");
    int (*cu_attr)(int *, int, int) =
        (int (*)(int *, int, int))dlsym(h, "cuDeviceGetAttribute");
    int rc = cu_init ? cu_init(0) : -1;
    if (rc != 0) {
      snprintf(why, sizeof(why), "cuInit failed (CUDA error %d)", rc);
    } else if (!cu_count || cu_count(&count) != 0 || count == 0) {
      snprintf(why, sizeof(why), "the driver sees no CUDA device");
      count = 0;
    } else {
      int dev = 0;
      if (cu_get && cu_get(&dev, 0) == 0) {
        if (cu_name) cu_name(name, sizeof(name), dev);
        device_uuid(h, dev, uuid, sizeof(uuid));
        if (cu_attr) {
          cu_attr(&clock_khz, 13 /* CLOCK_RATE */, dev);
          cu_attr(&sms, 16 /* MULTIPROCESSOR_COUNT */, dev);
          cu_attr(&mem_khz, 36 /* MEMORY_CLOCK_RATE */, dev);
          cu_attr(&bus_bits, 37 /* GLOBAL_MEMORY_BUS_WIDTH */, dev);
          cu_attr(&l2, 38 /* L2_CACHE_SIZE */, dev);
          /* only for the roofline gate, and only where the driver gives
           * no memory clock: 512 MiB and a few copies, once per worker */
          static double measured = -1;
          if (klw_get_int(req, "memory", 0) && mem_khz * bus_bits == 0 &&
              measured < 0)
            measured = copy_gbps(h, dev);
          copy = measured > 0 ? measured : 0;
        }
        /* a worker started ahead of its evaluation makes the context now,
         * not in its first check */
        if (klw_get_int(req, "context", 0)) primary_context(h, dev);
      }
    }
  }
  json_object_object_add(o, "count", json_object_new_int(count));
  json_object_object_add(o, "name", json_object_new_string(name));
  json_object_object_add(o, "uuid", json_object_new_string(uuid));
  json_object_object_add(o, "max_sm_clock_mhz",
                         json_object_new_double(clock_khz / 1000.0));
  json_object_object_add(o, "sms", json_object_new_int(sms));
  /* double data rate: two transfers per memory clock; where the driver
   * gives no clock, what a device copy achieves */
  double peak = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  json_object_object_add(o, "memory_peak_gbps",
                         json_object_new_double(peak > copy ? peak : copy));
  json_object_object_add(o, "copy_gbps", json_object_new_double(copy));
  json_object_object_add(o, "l2_bytes", json_object_new_double(l2));
  json_object_object_add(
      o, "sandbox",
      json_object_new_string(
          getenv("KL_WORKER_SANDBOX") ? getenv("KL_WORKER_SANDBOX") : "none"));
  json_object_object_add(o, "why", json_object_new_string(why));
  json_object_object_add(
      o, "visible_devices",
      json_object_new_string(getenv("CUDA_VISIBLE_DEVICES")
                                 ? getenv("CUDA_VISIBLE_DEVICES")
                                 : ""));
  klw_reply(o);
}
