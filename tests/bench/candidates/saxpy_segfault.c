/* Writes through a null pointer. */
void saxpy(float *y, const float *x, float a, int n) {
  volatile float *p = 0;
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
  *p = 1.0f;
}
