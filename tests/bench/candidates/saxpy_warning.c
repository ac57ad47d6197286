/* Correct, and compiles with a warning (line 6, given by every compiler
 * and version, unlike a pointer-type one that GCC 14 made an error): kl
 * must show it though the build went through. */
void saxpy(float *y, const float *x, float a, int n) {
  for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];
#warning "a candidate's own warning"
}
