/* Writes NaN into the first element: a loose comparison would pass it. */
#include <math.h>
void saxpy(float *y, const float *x, float a, int n) {
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
  if (n > 0)
    y[0] = NAN;
}
