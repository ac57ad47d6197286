/* The same loop, four elements a step, the struct's fields read once. */
typedef struct axpby_args {
  float *y;
  const float *x;
  float alpha, beta;
  int n;
} axpby_args;

/* one element: a helper a candidate keeps (the standalone harness holds
 * the baseline's and the candidate's, each under its own name) */
static inline float term(float al, float w, float x, float be, float y) {
  return al * w * x + be * y;
}

void axpby(const float *w, axpby_args a) {
  float *restrict y = a.y;
  const float *restrict x = a.x;
  const float al = a.alpha, be = a.beta;
  int i = 0;
  for (; i + 4 <= a.n; i += 4)
    for (int k = 0; k < 4; k++)
      y[i + k] = term(al, w[i + k], x[i + k], be, y[i + k]);
  for (; i < a.n; i++)
    y[i] = term(al, w[i], x[i], be, y[i]);
}
