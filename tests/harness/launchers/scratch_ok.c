/* Uses two workspace regions the same way in every launch: a copy of x
 * scaled by a, then y += that copy. */
void kernlab_launch(float *y, const float *x, float a, int n,
                    const kl_launch_ctx *ctx) {
  float *t = ctx->scratch(ctx, (uint64_t)n * sizeof(float));
  int *mark = ctx->scratch(ctx, 64);
  if (!t || !mark) return;
  mark[0] = ctx->shape;
  for (int i = 0; i < n; i++)
    t[i] = a * x[i];
  for (int i = 0; i < n; i++)
    y[i] += t[i];
}
