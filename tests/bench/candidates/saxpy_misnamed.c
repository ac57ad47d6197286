/* Correct, but named saxpy_fast: the harness's call of saxpy declares
 * nothing, which must be a COMPILE_ERROR saying so (GCC before 14 only
 * warns, and the plugin then failed to load: an undefined symbol). */
void saxpy_fast(float *y, const float *x, float a, int n) {
  for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}
