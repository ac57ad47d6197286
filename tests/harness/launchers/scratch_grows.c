/* Breaks the launch contract: asks for a larger workspace in every launch. */
void kernlab_launch(float *y, const float *x, float a, int n,
                    const kl_launch_ctx *ctx) {
  static uint64_t bytes = 1024;
  bytes *= 2;
  float *t = ctx->scratch(ctx, bytes);
  (void)t;
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
}
