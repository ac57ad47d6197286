/*
Kernels for a scaled residual forward pass, out = scale * inp1 + inp2, in
the style of llm.c's dev/cuda files (written for kernlab's tests): the
kernel takes its buffers and sizes in one struct passed by value, as a
params struct usually is (its int sits between two pointers, so the struct
has padding).

Compile example:
nvcc -O3 -arch=sm_90 residual_forward.cu -o residual_forward

version 1 is a thread per element:
./residual_forward 1
*/
#include <stdio.h>
#include <stdlib.h>
#include "common.h"

// ----------------------------------------------------------------------------
// CPU code reference

void residual_forward_cpu(float *out, const float *inp1, const float *inp2,
                          float scale, int N) {
  for (int i = 0; i < N; i++)
    out[i] = scale * inp1[i] + inp2[i];
}

// ----------------------------------------------------------------------------
// GPU kernels

struct ResidualParams {
  floatX *out;
  int N;
  const floatX *inp1;
  const floatX *inp2;
  float scale;
};

// a thread per element
__global__ void residual_forward_kernel1(ResidualParams p) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < p.N)
    p.out[idx] = (floatX)(p.scale * (float)p.inp1[idx] + (float)p.inp2[idx]);
}

// ----------------------------------------------------------------------------
// kernel launcher

void residual_forward1(floatX *out, const floatX *inp1, const floatX *inp2,
                       float scale, int N, const int block_size) {
  ResidualParams p;
  p.out = out;
  p.N = N;
  p.inp1 = inp1;
  p.inp2 = inp2;
  p.scale = scale;
  const int grid_size = ceil_div(N, block_size);
  residual_forward_kernel1<<<grid_size, block_size>>>(p);
  cudaCheck(cudaGetLastError());
}

// kernel version dispatch
void residual_forward(int kernel_num, floatX *out, const floatX *inp1,
                      const floatX *inp2, float scale, int N,
                      const int block_size) {
  switch (kernel_num) {
  case 1:
    residual_forward1(out, inp1, inp2, scale, N, block_size);
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
  int N = B * T * C;
  float scale = 0.5f;

  cudaCheck(cudaSetDevice(0));

  float *out = (float *)malloc((size_t)N * sizeof(float));
  float *inp1 = make_random_float((size_t)N);
  float *inp2 = make_random_float((size_t)N);

  floatX *d_out, *d_inp1, *d_inp2;
  cudaCheck(cudaMalloc(&d_out, (size_t)N * sizeof(floatX)));
  cudaCheck(cudaMalloc(&d_inp1, (size_t)N * sizeof(floatX)));
  cudaCheck(cudaMalloc(&d_inp2, (size_t)N * sizeof(floatX)));
  cudaCheck(cudaMemcpy(d_inp1, inp1, (size_t)N * sizeof(floatX),
                       cudaMemcpyHostToDevice));
  cudaCheck(cudaMemcpy(d_inp2, inp2, (size_t)N * sizeof(floatX),
                       cudaMemcpyHostToDevice));

  int kernel_num = 1;
  if (argc > 1) {
    kernel_num = atoi(argv[1]);
  }
  printf("Using kernel %d\n", kernel_num);

  residual_forward_cpu(out, inp1, inp2, scale, N);

  int block_sizes[] = {64, 128, 256, 512, 1024};
  for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
    int block_size = block_sizes[j];
    printf("Checking block size %d.\n", block_size);
    residual_forward(kernel_num, d_out, d_inp1, d_inp2, scale, N, block_size);
    validate_result(d_out, out, "out", (size_t)N, 1e-5f);
  }
  printf("All results match. Starting benchmarks.\n\n");

  for (int j = 0; j < sizeof(block_sizes) / sizeof(int); j++) {
    int block_size = block_sizes[j];
    int repeat_times = 100;
    float elapsed_time =
        benchmark_kernel(repeat_times, residual_forward, kernel_num, d_out,
                         d_inp1, d_inp2, scale, N, block_size);
    printf("block_size %4d | time %.4f ms\n", block_size, elapsed_time);
  }

  free(out);
  free(inp1);
  free(inp2);
  cudaCheck(cudaFree(d_out));
  cudaCheck(cudaFree(d_inp1));
  cudaCheck(cudaFree(d_inp2));
  return 0;
}
