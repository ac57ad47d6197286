/* The baseline of the test's host_softmax case: each row's softmax. */
#include <math.h>

void softmax(float *out, const float *x, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *in = x + (long)r * cols;
    float *o = out + (long)r * cols;
    float m = in[0];
    for (int c = 1; c < cols; c++)
      m = in[c] > m ? in[c] : m;
    double s = 0;
    for (int c = 0; c < cols; c++)
      s += exp((double)in[c] - m);
    for (int c = 0; c < cols; c++)
      o[c] = (float)(exp((double)in[c] - m) / s);
  }
}
