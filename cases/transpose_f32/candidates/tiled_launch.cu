// Shared-memory tiled transpose with its own launch: one 32x8 block per
// 32x32 tile, so the grid is ceil_div(cols, 32) x ceil_div(rows, 32). (The
// tiled.cu candidate keeps the case's launch, which has four times as many
// row blocks, and has to return early from three quarters of them.)
#define TILE 32

__global__ void transpose_tiles(float *out, const float *in, int rows,
                                int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int k = 0; k < TILE; k += 8)
    if (x < cols && y + k < rows)
      tile[threadIdx.y + k][threadIdx.x] = in[(size_t)(y + k) * cols + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int k = 0; k < TILE; k += 8)
    if (x < rows && y + k < cols)
      out[(size_t)(y + k) * rows + x] = tile[threadIdx.x][threadIdx.y + k];
}

extern "C" void kernlab_launch(float *out, const float *in, int rows, int cols,
                               const kl_launch_ctx *ctx) {
  dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
  transpose_tiles<<<grid, dim3(TILE, 8), 0, (cudaStream_t)ctx->stream>>>(
      out, in, rows, cols);
}
