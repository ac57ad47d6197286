void scale(float *out, const float *x, float weight, int name, int n) {
  for (int i = 0; i < n; i++)
    out[i] = weight * x[i] + (float)name;
}
