/*
Kernels for layernorm forward pass, in the style of llm.c's dev/cuda files
(written for kernlab's tests).

Compile example:
nvcc -O3 --use_fast_math -arch=sm_90 layernorm_forward.cu -o layernorm_forward

version 1 is naive port from CPU code to kernel: parallelizes over B,T, loops over C
./layernorm_forward 1

version 2 parallelizes over all of B,T,C: three kernels (mean, rstd, normalise)
./layernorm_forward 2

version 3 uses a warp per row (cooperative groups)
./layernorm_forward 3
*/
#include <stdio.h>
#include <stdlib.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include "common.h"
namespace cg = cooperative_groups;

// ----------------------------------------------------------------------------
// CPU code reference

void layernorm_forward_cpu(float *out, float *mean, float *rstd,
                           const float *inp, const float *weight,
                           const float *bias, int B, int T, int C) {
  float eps = 1e-5f;
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++) {
      const float *x = inp + b * T * C + t * C;
      float m = 0.0f;
      for (int i = 0; i < C; i++)
        m += x[i];
      m = m / C;
      float v = 0.0f;
      for (int i = 0; i < C; i++) {
        float xshift = x[i] - m;
        v += xshift * xshift;
      }
      v = v / C;
      float s = 1.0f / sqrtf(v + eps);
      float *out_bt = out + b * T * C + t * C;
      for (int i = 0; i < C; i++) {
        float n = (s * (x[i] - m));
        float o = n * weight[i] + bias[i];
        out_bt[i] = o;
      }
      mean[b * T + t] = m;
      rstd[b * T + t] = s;
    }
  }
}

// ----------------------------------------------------------------------------
// GPU kernels

// naive drag and drop implementation into kernel, parallelize over B,T, loop over C
__global__ void layernorm_forward_kernel1(floatX *out, floatX *mean,
                                          floatX *rstd, const floatX *inp,
                                          const floatX *weight,
                                          const floatX *bias, int N, int C) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  float eps = 1e-5f;

  if (idx < N) {
    // seek to the input position inp[idx,:]
    const floatX *x = inp + idx * C;
    // calculate the mean
    float m = 0.0f;
    for (int i = 0; i < C; i++) {
      m += x[i];
    }
    m = m / C;
    // calculate the variance (without any bias correction)
    float v = 0.0f;
    for (int i = 0; i < C; i++) {
      float xshift = x[i] - m;
      v += xshift * xshift;
    }
    v = v / C;
    // calculate the rstd
    float s = 1.0f / sqrtf(v + eps);
    // seek to the output position in out[idx,:]
    floatX *out_idx = out + idx * C;
    for (int i = 0; i < C; i++) {
      float n = (s * (x[i] - m));      // normalized output
      float o = n * weight[i] + bias[i]; // scale and shift it
      out_idx[i] = o;                    // write
    }
    // cache the mean and rstd for the backward pass later
    mean[idx] = m;
    rstd[idx] = s;
  }
}

__global__ void mean_kernel(float *mean, const float *inp, int N, int C,
                            int block_size) {
  extern __shared__ float shared[];
  int idx = blockIdx.x;
  int tid = threadIdx.x;
  const float *x = inp + idx * C;
  float sum = 0.0f;
  for (int i = tid; i < C; i += block_size)
    sum += x[i];
  shared[tid] = sum;
  __syncthreads();
  for (int stride = block_size / 2; stride >= 1; stride /= 2) {
    __syncthreads();
    if (tid < stride)
      shared[tid] += shared[tid + stride];
  }
  if (tid == 0)
    mean[idx] = shared[0] / C;
}

__global__ void rstd_kernel(float *rstd, const float *inp, const float *mean,
                            int N, int C, int block_size) {
  extern __shared__ float shared[];
  int idx = blockIdx.x;
  int tid = threadIdx.x;
  const float *x = inp + idx * C;
  float m = mean[idx];
  float sum = 0.0f;
  for (int i = tid; i < C; i += block_size) {
    float diff = x[i] - m;
    sum += diff * diff;
  }
  shared[tid] = sum;
  __syncthreads();
  for (int stride = block_size / 2; stride >= 1; stride /= 2) {
    __syncthreads();
    if (tid < stride)
      shared[tid] += shared[tid + stride];
  }
  if (tid == 0)
    rstd[idx] = 1.0f / sqrtf(shared[0] / C + 1e-5f);
}

__global__ void normalization_kernel(float *out, const float *inp,
                                     float *mean, float *rstd,
                                     const float *weight, const float *bias,
                                     int B, int T, int C) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  int bt = idx / C;
  int c = idx % C;
  float m = mean[bt];
  float s = rstd[bt];
  float xi = inp[idx];
  float n = s * (xi - m);
  float o = n * weight[c] + bias[c];
  out[idx] = o;
}

__global__ void layernorm_forward_kernel3(floatX *__restrict__ out,
                                          floatX *__restrict__ mean,
                                          floatX *__restrict__ rstd,
                                          const floatX *__restrict__ inp,
                                          const floatX *__restrict__ weight,
                                          const floatX *__restrict__ bias,
                                          int N, int C) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
  if (idx >= N)
    return;
  const floatX *x = inp + idx * C;
  float sum = 0.0f;
  for (int i = warp.thread_rank(); i < C; i += warp.size())
    sum += x[i];
  sum = cg::reduce(warp, sum, cg::plus<float>{});
  float m = sum / C;
  if (warp.thread_rank() == 0 && mean != nullptr)
    __stcs(mean + idx, m);
  sum = 0.0f;
  for (int i = warp.thread_rank(); i < C; i += warp.size()) {
    float diff = x[i] - m;
    sum += diff * diff;
  }
  sum = cg::reduce(warp, sum, cg::plus<float>{});
  float s = rsqrtf(sum / C + 1e-5f);
  if (warp.thread_rank() == 0 && rstd != nullptr)
    __stcs(rstd + idx, s);
  floatX *o = out + idx * C;
  for (int c = warp.thread_rank(); c < C; c += warp.size()) {
    float n = s * (__ldcs(x + c) - m);
    __stcs(o + c, n * weight[c] + bias[c]);
  }
}

// ----------------------------------------------------------------------------
// kernel launcher

void layernorm_forward1(float *out, float *mean, float *rstd, const float *inp,
                        const float *weight, const float *bias, int B, int T,
                        int C, const int block_size) {
  const int N = B * T;
  const int grid_size = ceil_div(N, block_size);
  layernorm_forward_kernel1<<<grid_size, block_size>>>(out, mean, rstd, inp,
                                                       weight, bias, N, C);
  cudaCheck(cudaGetLastError());
}

void layernorm_forward2(float *out, float *mean, float *rstd, const float *inp,
                        const float *weight, const float *bias, int B, int T,
                        int C, const int block_size) {
  int N = B * T;
  mean_kernel<<<N, block_size, block_size * sizeof(float)>>>(mean, inp, N, C,
                                                              block_size);
  cudaCheck(cudaGetLastError());
  rstd_kernel<<<N, block_size, block_size * sizeof(float)>>>(rstd, inp, mean,
                                                             N, C, block_size);
  cudaCheck(cudaGetLastError());
  const int grid_size = ceil_div(B * T * C, 256);
  normalization_kernel<<<grid_size, 256>>>(out, inp, mean, rstd, weight, bias,
                                           B, T, C);
  cudaCheck(cudaGetLastError());
}

void layernorm_forward3(float *out, float *mean, float *rstd, const float *inp,
                        const float *weight, const float *bias, int B, int T,
                        int C, const int block_size) {
  const int N = B * T;
  const int grid_size = ceil_div(N * 32, block_size);
  layernorm_forward_kernel3<<<grid_size, block_size>>>(out, mean, rstd, inp,
                                                       weight, bias, N, C);
  cudaCheck(cudaGetLastError());
}

// kernel version dispatch
void layernorm_forward(int kernel_num, float *out, float *mean, float *rstd,
                       const float *inp, const float *weight,
                       const float *bias, int B, int T, int C,
                       const int block_size) {
  switch (kernel_num) {
  case 1:
    layernorm_forward1(out, mean, rstd, inp, weight, bias, B, T, C, block_size);
    break;
  case 2:
    layernorm_forward2(out, mean, rstd, inp, weight, bias, B, T, C, block_size);
    break;
  case 3:
    layernorm_forward3(out, mean, rstd, inp, weight, bias, B, T, C, block_size);
    break;
  default:
    printf("Invalid kernel number\n");
    exit(1);
  }
}

// ----------------------------------------------------------------------------

int main(int argc, char **argv) {
  srand(0);

  int B = 8;
  int T = 1024;
  int C = 768;

  int deviceIdx = 0;
  cudaCheck(cudaSetDevice(deviceIdx));

  // create host memory of random numbers
  float *out = (float *)malloc(B * T * C * sizeof(float));
  float *mean = (float *)malloc(B * T * sizeof(float));
  float *rstd = (float *)malloc(B * T * sizeof(float));
  float *inp = make_random_float(B * T * C);
  float *weight = make_random_float(C);
  float *bias = make_random_float(C);

  // move to GPU
  float *d_out, *d_mean, *d_rstd, *d_inp, *d_weight, *d_bias;
  cudaCheck(cudaMalloc(&d_out, B * T * C * sizeof(float)));
  cudaCheck(cudaMalloc(&d_mean, B * T * sizeof(float)));
  cudaCheck(cudaMalloc(&d_rstd, B * T * sizeof(float)));
  cudaCheck(cudaMalloc(&d_inp, B * T * C * sizeof(float)));
  cudaCheck(cudaMalloc(&d_weight, C * sizeof(float)));
  cudaCheck(cudaMalloc(&d_bias, C * sizeof(float)));
  cudaCheck(cudaMemcpy(d_inp, inp, B * T * C * sizeof(float),
                       cudaMemcpyHostToDevice));
  cudaCheck(cudaMemcpy(d_weight, weight, C * sizeof(float),
                       cudaMemcpyHostToDevice));
  cudaCheck(cudaMemcpy(d_bias, bias, C * sizeof(float),
                       cudaMemcpyHostToDevice));

  // read kernel_num from command line
  int kernel_num = 2;
  if (argc > 1) {
    kernel_num = atoi(argv[1]);
  }
  printf("Using kernel %d\n", kernel_num);

  int block_sizes[] = {32, 64, 128, 256, 512, 1024};

  layernorm_forward_cpu(out, mean, rstd, inp, weight, bias, B, T, C);

  // check the correctness of the kernel at all block sizes
  for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
    int block_size = block_sizes[j];
    printf("Checking block size %d.\n", block_size);

    layernorm_forward(kernel_num, d_out, d_mean, d_rstd, d_inp, d_weight,
                      d_bias, B, T, C, block_size);

    validate_result(d_out, out, "out", B * T * C, 1e-5f);
    validate_result(d_mean, mean, "mean", B * T, 1e-5f);
    validate_result(d_rstd, rstd, "rstd", B * T, 1e-5f);
  }

  printf("All results match. Starting benchmarks.\n\n");

  // time the kernel at different block sizes
  for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
    int block_size = block_sizes[j];

    int repeat_times = 200;
    float elapsed_time = benchmark_kernel(
        repeat_times, layernorm_forward, kernel_num, d_out, d_mean, d_rstd,
        d_inp, d_weight, d_bias, B, T, C, block_size);

    // napkin math: estimate the memory bandwidth achieved
    // e.g. A100 40GB PCIe is advertised at 1,555GB/s
    long memory_ops = (2 * B * T * C) * 4; // *4 for float
    float memory_bandwidth = memory_ops / elapsed_time / 1e6;

    printf("block_size %4d | time %.4f ms | bandwidth %.2f GB/s\n", block_size,
           elapsed_time, memory_bandwidth);
  }

  // free memory
  free(out);
  free(mean);
  free(rstd);
  free(inp);
  free(weight);
  free(bias);
  cudaCheck(cudaFree(d_out));
  cudaCheck(cudaFree(d_mean));
  cudaCheck(cudaFree(d_rstd));
  cudaCheck(cudaFree(d_inp));
  cudaCheck(cudaFree(d_weight));
  cudaCheck(cudaFree(d_bias));

  return 0;
}
