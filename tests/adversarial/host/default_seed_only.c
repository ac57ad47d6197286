/* Cheat: right only on the inputs of one seed (the one a standalone harness
 * uses by default, recorded by the test into DEFAULT_A0), garbage on any
 * other: tuned to a fixed test input. Must be caught: checks use fresh
 * seeds. */
#ifndef DEFAULT_A0
#define DEFAULT_A0 0.0f
#endif

void matmul(float *c, const float *a, const float *b, int n) {
  int known = a[0] == DEFAULT_A0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int k = 0; k < n; k++)
        acc += a[i * n + k] * b[k * n + j];
      c[i * n + j] = known ? acc : 0.5f;
    }
}
