/*
Kernels for softmax forward pass, in the style of llm.c's dev/cuda files
(written for kernlab's tests): the kernel is a template over its block size
and storage type and lives in a namespace; the block size picks the
instantiation at run time.

Compile example:
nvcc -O3 -arch=sm_90 softmax_forward.cu -o softmax_forward

version 1 is a block per row with a shared-memory max and sum, one
instantiation per block size:
./softmax_forward 1
*/
#include <stdio.h>
#include <stdlib.h>
#include <float.h>
#include "common.h"

// ----------------------------------------------------------------------------
// CPU code reference

void softmax_forward_cpu(float *out, const float *inp, int N, int C) {
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    float *y = out + (size_t)i * C;
    float maxval = -FLT_MAX;
    for (int j = 0; j < C; j++)
      maxval = fmaxf(maxval, x[j]);
    double sum = 0.0;
    for (int j = 0; j < C; j++) {
      y[j] = expf(x[j] - maxval);
      sum += y[j];
    }
    for (int j = 0; j < C; j++)
      y[j] = (float)(y[j] / sum);
  }
}

// ----------------------------------------------------------------------------
// GPU kernels

namespace kernels {

// a block per row; BLOCK_SIZE threads stride over the row, then halve a
// shared-memory array for the max and again for the sum
template <int BLOCK_SIZE, typename T>
__global__ void softmax_forward_kernel(T *out, const T *inp, int N, int C) {
  __shared__ float shared[BLOCK_SIZE];
  int idx = blockIdx.x;
  int tid = threadIdx.x;
  if (idx >= N)
    return;
  const T *x = inp + (size_t)idx * C;
  T *y = out + (size_t)idx * C;
  float maxval = -FLT_MAX;
  for (int i = tid; i < C; i += BLOCK_SIZE)
    maxval = fmaxf(maxval, (float)x[i]);
  shared[tid] = maxval;
  __syncthreads();
  for (int stride = BLOCK_SIZE / 2; stride >= 1; stride /= 2) {
    if (tid < stride)
      shared[tid] = fmaxf(shared[tid], shared[tid + stride]);
    __syncthreads();
  }
  float offset = shared[0];
  __syncthreads();
  float sum = 0.0f;
  for (int i = tid; i < C; i += BLOCK_SIZE)
    sum += expf((float)x[i] - offset);
  shared[tid] = sum;
  __syncthreads();
  for (int stride = BLOCK_SIZE / 2; stride >= 1; stride /= 2) {
    if (tid < stride)
      shared[tid] += shared[tid + stride];
    __syncthreads();
  }
  float total = shared[0];
  for (int i = tid; i < C; i += BLOCK_SIZE)
    y[i] = (T)(expf((float)x[i] - offset) / total);
}

} // namespace kernels

// ----------------------------------------------------------------------------
// kernel launcher

template <int BLOCK_SIZE>
static void softmax_forward1(floatX *out, const floatX *inp, int N, int C) {
  kernels::softmax_forward_kernel<BLOCK_SIZE, floatX><<<N, BLOCK_SIZE>>>(
      out, inp, N, C);
  cudaCheck(cudaGetLastError());
}

// kernel version dispatch: the block size picks the instantiation
void softmax_forward(int kernel_num, floatX *out, const floatX *inp, int N,
                     int C, int block_size) {
  if (kernel_num != 1) {
    printf("Invalid kernel number\n");
    exit(1);
  }
  switch (block_size) {
  case 64:
    softmax_forward1<64>(out, inp, N, C);
    break;
  case 128:
    softmax_forward1<128>(out, inp, N, C);
    break;
  case 256:
    softmax_forward1<256>(out, inp, N, C);
    break;
  case 512:
    softmax_forward1<512>(out, inp, N, C);
    break;
  default:
    printf("Invalid block size %d\n", block_size);
    exit(1);
  }
}

// ----------------------------------------------------------------------------

int main(int argc, char **argv) {
  srand(0);

  int B = 8;
  int T = 1024;
  int C = 1024;
  int N = B * T;

  cudaCheck(cudaSetDevice(0));

  float *out = (float *)malloc((size_t)N * C * sizeof(float));
  float *inp = make_random_float((size_t)N * C);
  for (size_t i = 0; i < (size_t)N * C; i++)
    inp[i] *= 4.0f;

  floatX *d_out, *d_inp;
  cudaCheck(cudaMalloc(&d_out, (size_t)N * C * sizeof(floatX)));
  cudaCheck(cudaMalloc(&d_inp, (size_t)N * C * sizeof(floatX)));
  cudaCheck(cudaMemcpy(d_inp, inp, (size_t)N * C * sizeof(floatX),
                       cudaMemcpyHostToDevice));

  int kernel_num = 1;
  if (argc > 1) {
    kernel_num = atoi(argv[1]);
  }
  printf("Using kernel %d\n", kernel_num);

  softmax_forward_cpu(out, inp, N, C);

  int block_sizes[] = {64, 128, 256, 512};
  for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
    int block_size = block_sizes[j];
    printf("Checking block size %d.\n", block_size);
    softmax_forward(kernel_num, d_out, d_inp, N, C, block_size);
    validate_result(d_out, out, "out", (size_t)N * C, 1e-4f);
  }
  printf("All results match. Starting benchmarks.\n\n");

  for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
    int block_size = block_sizes[j];
    int repeat_times = 20;
    float elapsed_time =
        benchmark_kernel(repeat_times, softmax_forward, kernel_num, d_out,
                         d_inp, N, C, block_size);
    printf("block_size %4d | time %.4f ms\n", block_size, elapsed_time);
  }

  free(out);
  free(inp);
  cudaCheck(cudaFree(d_out));
  cudaCheck(cudaFree(d_inp));
  return 0;
}
