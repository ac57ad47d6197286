// Shared helpers of the kernels in this folder, in the style of llm.c's
// dev/cuda/common.h (written for kernlab's tests; nothing here knows of
// kernlab). floatX is the storage type: float unless built with
// -DENABLE_BF16 (then __nv_bfloat16; this test builds the float version).
#pragma once
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#if defined(ENABLE_BF16)
#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;
#elif defined(ENABLE_FP16)
#include <cuda_fp16.h>
typedef half floatX;
#else
typedef float floatX;
#endif

template <class T> __host__ __device__ T ceil_div(T dividend, T divisor) {
  return (dividend + divisor - 1) / divisor;
}

inline void cuda_check(cudaError_t error, const char *file, int line) {
  if (error != cudaSuccess) {
    printf("[CUDA ERROR] at file %s:%d:\n%s\n", file, line,
           cudaGetErrorString(error));
    exit(EXIT_FAILURE);
  }
}
#define cudaCheck(err) (cuda_check(err, __FILE__, __LINE__))

inline float *make_random_float(size_t n) {
  float *arr = (float *)malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++)
    arr[i] = ((float)rand() / (float)RAND_MAX) * 2.0f - 1.0f;
  return arr;
}

template <class D, class T>
void validate_result(D *device_result, const T *cpu_reference, const char *name,
                     size_t num_elements, T tolerance = 1e-4) {
  D *out_gpu = (D *)malloc(num_elements * sizeof(D));
  cudaCheck(cudaMemcpy(out_gpu, device_result, num_elements * sizeof(D),
                       cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < num_elements; i++) {
    if (fabs(cpu_reference[i] - (T)out_gpu[i]) >
        tolerance + fabs(cpu_reference[i]) * 1e-3) {
      printf("Mismatch of %s at %zu: CPU_ref: %f vs GPU: %f\n", name, i,
             (double)cpu_reference[i], (double)out_gpu[i]);
      free(out_gpu);
      exit(EXIT_FAILURE);
    }
  }
  free(out_gpu);
}

template <class Kernel, class... KernelArgs>
float benchmark_kernel(int repeats, Kernel kernel, KernelArgs &&...args) {
  cudaEvent_t start, stop;
  cudaCheck(cudaEventCreate(&start));
  cudaCheck(cudaEventCreate(&stop));
  cudaCheck(cudaEventRecord(start, nullptr));
  for (int i = 0; i < repeats; i++)
    kernel(std::forward<KernelArgs>(args)...);
  cudaCheck(cudaEventRecord(stop, nullptr));
  cudaCheck(cudaEventSynchronize(stop));
  float elapsed_time;
  cudaCheck(cudaEventElapsedTime(&elapsed_time, start, stop));
  return elapsed_time / repeats;
}
