// A block per row, with its own launch: the case's launch gives a thread
// per row, so this candidate brings a launcher (kernlab/plugin.h) that
// launches one 256-thread block per row instead. Each thread keeps an
// online max and sum over a strided slice of the row; warps merge them
// with shuffles and the block through shared memory; a second pass writes
// the outputs with coalesced stores.
#define THREADS 256

__device__ __forceinline__ void merge(float &m, float &s, float mo, float so) {
  float m2 = fmaxf(m, mo);
  s = s * __expf(m - m2) + so * __expf(mo - m2);
  m = m2;
}

__global__ void softmax_block_row(float *out, const float *x, int cols) {
  __shared__ float sm[THREADS / 32], ss[THREADS / 32];
  const float *xr = x + (size_t)blockIdx.x * cols;
  float m = -INFINITY, s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += THREADS)
    merge(m, s, xr[c], 1.0f);
  for (int off = 16; off > 0; off >>= 1)
    merge(m, s, __shfl_xor_sync(0xffffffffu, m, off),
          __shfl_xor_sync(0xffffffffu, s, off));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sm[warp] = m;
    ss[warp] = s;
  }
  __syncthreads();
  m = sm[0];
  s = ss[0];
  for (int w = 1; w < THREADS / 32; w++)
    merge(m, s, sm[w], ss[w]);
  float inv = 1.0f / s;
  float *outr = out + (size_t)blockIdx.x * cols;
  for (int c = threadIdx.x; c < cols; c += THREADS)
    outr[c] = __expf(xr[c] - m) * inv;
}

extern "C" void kernlab_launch(float *out, const float *x, int rows, int cols,
                               const kl_launch_ctx *ctx) {
  softmax_block_row<<<rows, THREADS, 0, (cudaStream_t)ctx->stream>>>(out, x,
                                                                     cols);
}
