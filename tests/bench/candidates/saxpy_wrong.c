/* Wrong: drops the a factor. */
void saxpy(float *y, const float *x, float a, int n) {
  (void)a;
  for (int i = 0; i < n; i++)
    y[i] = x[i] + y[i];
}
