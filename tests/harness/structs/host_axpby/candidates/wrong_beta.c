/* Reads beta from the wrong field: must be found incorrect. */
typedef struct axpby_args {
  float *y;
  const float *x;
  float alpha, beta;
  int n;
} axpby_args;

void axpby(const float *w, axpby_args a) {
  for (int i = 0; i < a.n; i++)
    a.y[i] = a.alpha * w[i] * a.x[i] + a.alpha * a.y[i];
}
