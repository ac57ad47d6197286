/* The baseline kernel of {{name}}: a plain loop. */
void scale(float *y, const float *x, float alpha, int n) {
  for (int i = 0; i < n; i++)
    y[i] = alpha * x[i];
}
