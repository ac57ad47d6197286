// Baseline: each thread moves one element; a warp reads 32 consecutive
// floats of a row but writes 32 floats `rows` apart (uncoalesced stores).
extern "C" __global__ void transpose(float *out, const float *in, int rows,
                                     int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols)
    out[(size_t)c * rows + r] = in[(size_t)r * cols + c];
}
