/* Honest: the softmax of each row in float, another order of work than the
 * baseline's (a single pass keeps a running max and rescales the sum). */
#include <math.h>

void softmax(float *out, const float *x, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *in = x + (long)r * cols;
    float *o = out + (long)r * cols;
    float m = -INFINITY, s = 0;
    for (int c = 0; c < cols; c++) {
      float v = in[c];
      if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
      } else {
        s += expf(v - m);
      }
    }
    for (int c = 0; c < cols; c++)
      o[c] = expf(in[c] - m) / s;
  }
}
