/* Calls exit() in the middle of a request. */
#include <stdio.h>
#include <stdlib.h>
void saxpy(float *y, const float *x, float a, int n) {
  (void)y;
  (void)x;
  (void)a;
  (void)n;
  fprintf(stderr, "candidate: giving up\n");
  exit(7);
}
