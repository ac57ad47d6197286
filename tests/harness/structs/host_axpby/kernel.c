/* y = alpha * w .* x + beta * y, with the vectors and the coefficients
 * passed in one struct by value, as a params struct usually is; the loop
 * runs in chunks of CHUNK elements (a tunable). */
#ifndef CHUNK
#define CHUNK 4096
#endif

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
  for (int b = 0; b < a.n; b += CHUNK) {
    int e = a.n - b < CHUNK ? a.n : b + CHUNK;
    for (int i = b; i < e; i++)
      a.y[i] = term(a.alpha, w[i], a.x[i], a.beta, a.y[i]);
  }
}
