// A small "real program" for kl observe and kl export: it launches
// scale_add at several configurations (2-D blocks, different scalars),
// through <<<>>> and through cudaLaunchKernel, plus a fill kernel, and with
// --check compares one result with the CPU. Nothing in it knows kernlab.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(x)                                                              \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

__global__ void fill(float *p, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = v + (float)(i % 7);
}

// out = alpha * x + y over a rows x cols matrix, one thread per element;
// threadIdx.x walks down the rows, so a warp touches 32 different rows.
__global__ void scale_add(float *out, const float *x, const float *y,
                          float alpha, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  int c = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols)
    out[(size_t)r * cols + c] = alpha * x[(size_t)r * cols + c] +
                                y[(size_t)r * cols + c];
}

struct config {
  int rows, cols, bx, by, times;
  float alpha;
};

int main(int argc, char **argv) {
  bool check = argc > 1 && strcmp(argv[1], "--check") == 0;
  const config configs[] = {{4096, 4096, 32, 8, 12, 0.5f},
                            {2048, 8192, 32, 8, 6, -1.25f},
                            {1024, 1024, 16, 16, 20, 2.0f},
                            {8192, 512, 64, 4, 8, 0.5f},
                            {300, 200, 32, 4, 30, 3.0f}};
  size_t most = 0;
  for (const config &c : configs)
    most = std::max(most, (size_t)c.rows * c.cols);
  float *out, *x, *y;
  CHECK(cudaMalloc(&out, most * sizeof(float)));
  CHECK(cudaMalloc(&x, most * sizeof(float)));
  CHECK(cudaMalloc(&y, most * sizeof(float)));
  fill<<<(unsigned)((most + 255) / 256), 256>>>(x, 1.0f, (int)most);
  fill<<<(unsigned)((most + 255) / 256), 256>>>(y, 0.25f, (int)most);
  int k = 0;
  for (const config &c : configs) {
    dim3 block(c.bx, c.by);
    dim3 grid((c.rows + c.bx - 1) / c.bx, (c.cols + c.by - 1) / c.by);
    for (int t = 0; t < c.times; t++, k++) {
      if (k % 2 == 0) {
        scale_add<<<grid, block>>>(out, x, y, c.alpha, c.rows, c.cols);
      } else {
        float alpha = c.alpha;
        int rows = c.rows, cols = c.cols;
        void *args[] = {&out, &x, &y, &alpha, &rows, &cols};
        CHECK(cudaLaunchKernel((const void *)scale_add, grid, block, args, 0,
                               0));
      }
    }
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  if (check) { /* the last configuration's result against the CPU */
    const config &c = configs[sizeof configs / sizeof *configs - 1];
    size_t n = (size_t)c.rows * c.cols;
    std::vector<float> h(n);
    CHECK(cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
      int r = (int)(i / c.cols), col = (int)(i % c.cols);
      size_t j = (size_t)r * c.cols + col;
      float want = c.alpha * (1.0f + (float)(j % 7)) + (0.25f + (float)(j % 7));
      if (fabsf(h[i] - want) > 1e-4f * fabsf(want) + 1e-5f) {
        fprintf(stderr, "check: element %zu is %g, want %g\n", i, h[i], want);
        return 1;
      }
    }
    printf("check: ok\n");
  }
  CHECK(cudaFree(out));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  return 0;
}
