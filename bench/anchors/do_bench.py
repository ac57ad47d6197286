"""Anchor: triton.testing.do_bench on the same copy kernel (via CuPy).
Prints JSON lines: median of do_bench's medians over REPEATS calls, their
relative SD, and the wall time per call. usage: do_bench.py N REPEATS"""
import json
import statistics
import sys
import time

import cupy
import torch
import triton.testing

n = int(sys.argv[1])
repeats = int(sys.argv[2])
src = r'''extern "C" __global__ void copy(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}'''
kernel = cupy.RawKernel(src, "copy")
x = cupy.zeros(n, dtype=cupy.float32)
y = cupy.empty_like(x)
grid = ((n + 255) // 256,)
stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)


def fn():
    with stream:
        kernel(grid, (256,), (y, x, cupy.int32(n)))


meds, walls = [], []
for _ in range(repeats):
    t0 = time.perf_counter()
    ms = triton.testing.do_bench(fn, return_mode="median")
    walls.append(time.perf_counter() - t0)
    meds.append(ms * 1000.0)
print(json.dumps({"anchor": "triton_do_bench", "n": n,
                  "median_us": statistics.median(meds),
                  "rsd_pct": 100 * statistics.stdev(meds) / statistics.mean(meds),
                  "repeats": repeats,
                  "wall_per_measurement_ms": 1000 * statistics.median(walls)}))
