// A program that links cuBLAS for real: y = gelu(x W + b), the GEMM by
// cuBLASLt and the bias and GELU by a kernel of its own, one thread per row
// (uncoalesced: the kernel to make faster). Written for kernlab's tests in
// the way such programs are written; nothing here knows of kernlab.
//
// Build: make (nvcc -O3 gemm_gelu.cu -lcublasLt -o gemm_gelu)
// Run:   ./gemm_gelu [iterations]   (exits 1 when the result is wrong)
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_OK(call)                                                        \
  do {                                                                       \
    cudaError_t e_ = (call);                                                 \
    if (e_ != cudaSuccess) {                                                 \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                     \
              cudaGetErrorString(e_));                                       \
      exit(1);                                                               \
    }                                                                        \
  } while (0)
#define LT_OK(call)                                                          \
  do {                                                                       \
    cublasStatus_t s_ = (call);                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                       \
      fprintf(stderr, "%s:%d: cublasLt status %d\n", __FILE__, __LINE__,     \
              (int)s_);                                                      \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

static cublasLtHandle_t lt;

// c (m x n) = a (m x k) b (k x n), column-major, fp32, through cuBLASLt.
static void gemm(float *c, const float *a, const float *b, int m, int n,
                 int k) {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  LT_OK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  LT_OK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m));
  LT_OK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k));
  LT_OK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
  const float one = 1.0f, zero = 0.0f;
  LT_OK(cublasLtMatmul(lt, op, &one, a, la, b, lb, &zero, c, lc, c, lc, NULL,
                       NULL, 0, 0));
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
}

__device__ float gelu(float v) {
  return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}

// out[r][c] = gelu(x[r][c] + bias[c]) for a row-major rows x cols: one
// thread per row, walking its columns.
__global__ void bias_gelu_rows(float *out, const float *x, const float *bias,
                               int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  for (int c = 0; c < cols; c++)
    out[(size_t)r * cols + c] = gelu(x[(size_t)r * cols + c] + bias[c]);
}

static float *device_random(size_t n, float scale) {
  float *h = (float *)malloc(n * sizeof(float)), *d;
  for (size_t i = 0; i < n; i++) h[i] = scale * ((float)rand() / RAND_MAX - 0.5f);
  CUDA_OK(cudaMalloc(&d, n * sizeof(float)));
  CUDA_OK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
  free(h);
  return d;
}

int main(int argc, char **argv) {
  int iterations = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 50;
  // tokens x hidden (row-major) is hidden x tokens column-major: the GEMM
  // computes (W^T x^T) = (x W)^T as cuBLAS sees it
  const int tokens = 4096, in = 1024, hidden = 1024;
  srand(1);
  LT_OK(cublasLtCreate(&lt));
  float *x = device_random((size_t)tokens * in, 1.0f);
  float *w = device_random((size_t)in * hidden, 0.05f);
  float *bias = device_random(hidden, 1.0f), *h, *y;
  CUDA_OK(cudaMalloc(&h, (size_t)tokens * hidden * sizeof(float)));
  CUDA_OK(cudaMalloc(&y, (size_t)tokens * hidden * sizeof(float)));
  for (int it = 0; it < iterations; it++) {
    gemm(h, w, x, hidden, tokens, in);
    bias_gelu_rows<<<(tokens + 127) / 128, 128>>>(y, h, bias, tokens, hidden);
  }
  CUDA_OK(cudaDeviceSynchronize());
  // check a few rows against the host
  float *hh = (float *)malloc((size_t)tokens * hidden * sizeof(float));
  float *hy = (float *)malloc((size_t)tokens * hidden * sizeof(float));
  float *hb = (float *)malloc(hidden * sizeof(float));
  CUDA_OK(cudaMemcpy(hh, h, (size_t)tokens * hidden * sizeof(float),
                     cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(hy, y, (size_t)tokens * hidden * sizeof(float),
                     cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(hb, bias, hidden * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int r = 0; r < tokens; r += 97)
    for (int c = 0; c < hidden; c++) {
      float v = hh[(size_t)r * hidden + c] + hb[c];
      float want = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
      if (fabsf(hy[(size_t)r * hidden + c] - want) > 1e-4f * (1 + fabsf(want))) bad++;
    }
  printf("%d iterations of %d x %d x %d: %s\n", iterations, tokens, in, hidden,
         bad ? "WRONG" : "ok");
  cublasLtDestroy(lt);
  return bad ? 1 : 0;
}
