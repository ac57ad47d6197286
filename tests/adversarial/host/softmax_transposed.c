/* Wrong where the output is square: the right softmax, stored transposed
 * (column-major). Right at the other shape. */
#include <math.h>
#include <stdlib.h>

void softmax(float *out, const float *x, int rows, int cols) {
  float *t = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
  if (!t) return;
  for (int r = 0; r < rows; r++) {
    const float *in = x + (long)r * cols;
    float m = in[0];
    for (int c = 1; c < cols; c++)
      m = in[c] > m ? in[c] : m;
    double s = 0;
    for (int c = 0; c < cols; c++)
      s += exp((double)in[c] - m);
    for (int c = 0; c < cols; c++)
      t[(long)r * cols + c] = (float)(exp((double)in[c] - m) / s);
  }
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++)
      out[rows == cols ? (long)c * rows + r : (long)r * cols + c] =
          t[(long)r * cols + c];
  free(t);
}
