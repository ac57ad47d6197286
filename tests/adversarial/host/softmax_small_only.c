/* Wrong at large shapes only: right where a row has at most 1024 elements
 * (the square shape), the uniform 1/cols beyond (the wide one). */
#include <math.h>

void softmax(float *out, const float *x, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *in = x + (long)r * cols;
    float *o = out + (long)r * cols;
    if (cols > 1024) {
      for (int c = 0; c < cols; c++)
        o[c] = 1.0f / (float)cols;
      continue;
    }
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
