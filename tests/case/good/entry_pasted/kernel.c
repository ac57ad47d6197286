#define NAMED(t) saxpy_##t

void NAMED(f32)(float *y, const float *x, float a, int n) {
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
}
