// A persistent kernel, with its own launch: as many blocks as the device
// keeps resident at once (the occupancy API's answer times ctx->sms), each
// walking the vectors with a grid stride in float4 steps. The case's launch
// would start one thread per element.
#define THREADS 256

__global__ void vector_add_persistent(float *c, const float *a, const float *b,
                                      int n) {
  int stride = gridDim.x * THREADS, n4 = n / 4;
  const float4 *a4 = (const float4 *)a, *b4 = (const float4 *)b;
  float4 *c4 = (float4 *)c;
  for (int i = blockIdx.x * THREADS + threadIdx.x; i < n4; i += stride) {
    float4 x = a4[i], y = b4[i];
    c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  for (int i = n4 * 4 + blockIdx.x * THREADS + threadIdx.x; i < n; i += stride)
    c[i] = a[i] + b[i];
}

extern "C" void kernlab_launch(float *c, const float *a, const float *b, int n,
                               const kl_launch_ctx *ctx) {
  static int per_sm; /* a property of the kernel, asked once */
  if (!per_sm &&
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &per_sm, vector_add_persistent, THREADS, 0) != cudaSuccess)
    per_sm = 1;
  vector_add_persistent<<<per_sm * ctx->sms, THREADS, 0,
                          (cudaStream_t)ctx->stream>>>(c, a, b, n);
}
