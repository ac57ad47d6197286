/* y[i] = x[i] after REPEAT * 64 dependent steps of acc = acc/2 + x/2,
 * exact for the inputs' range: a kernel whose time the tunable sets. */
#ifndef REPEAT
#define REPEAT 16
#endif

void repeat(float *y, const float *x, int n) {
  for (int i = 0; i < n; i++) {
    float v = x[i], acc = v;
    for (int r = 0; r < REPEAT * 64; r++)
      acc = acc * 0.5f + v * 0.5f;
    y[i] = acc;
  }
}
