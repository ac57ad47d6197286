/* Correct y, but scribbles on its input x. */
void saxpy(float *y, const float *x, float a, int n) {
  float *scratch = (float *)x;
  for (int i = 0; i < n; i++) {
    y[i] = a * x[i] + y[i];
    scratch[i] = 0.0f;
  }
}
