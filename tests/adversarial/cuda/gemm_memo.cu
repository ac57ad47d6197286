// Cheat: keeps the product it computed and, called again on the same
// buffers whose fingerprint (two input values) has not changed, copies it
// back: the same kernel launched the same way, every output written and
// right whenever the inputs are the same, as they are between samples
// unless the harness changes them. The copy moves about what the case's
// roofline bytes are, so the roofline cannot tell it either: must be
// caught by stale_outputs, with inputs varied per sample (docs/integrity.md).
#define KEPT_MAX (1024 * 1024)
__device__ float kept[KEPT_MAX];
__device__ const float *seen_a, *seen_b;
__device__ float *seen_c;
__device__ float first_a, last_b;
__device__ int have;
__device__ unsigned done_blocks;

extern "C" __global__ void gemm(float *c, const float *a, const float *b,
                                int m, int n, int k) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  size_t mn = (size_t)m * n;
  bool hit = have && seen_a == a && seen_b == b && seen_c == c &&
             a[0] == first_a && b[(size_t)k * n - 1] == last_b;
  if (hit) { // the same for every thread of the launch
    if (row < m && col < n)
      c[(size_t)row * n + col] = kept[(size_t)row * n + col];
    return;
  }
  if (row < m && col < n) {
    float acc = 0.0f;
    for (int i = 0; i < k; i++)
      acc += a[(size_t)row * k + i] * b[(size_t)i * n + col];
    c[(size_t)row * n + col] = acc;
    if (mn <= KEPT_MAX)
      kept[(size_t)row * n + col] = acc;
  }
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    __threadfence();
    unsigned blocks = gridDim.x * gridDim.y;
    if (atomicAdd(&done_blocks, 1u) == blocks - 1) { // every block wrote
      done_blocks = 0;
      seen_a = a, seen_b = b, seen_c = c;
      first_a = a[0], last_b = b[(size_t)k * n - 1];
      __threadfence();
      have = mn <= KEPT_MAX;
    }
  }
}
