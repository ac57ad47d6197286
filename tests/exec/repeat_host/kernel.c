/* y[i] = x[i], after sleeping REPEAT milliseconds: a kernel whose time the
 * tunable alone sets. It sleeps rather than computes so that its time
 * does not hang on how much CPU it gets: on a loaded 2-core machine
 * under sanitizers a computing kernel's samples are stretched by
 * whatever else runs, a sleeping one's only by a wake-up's latency. */
#include <time.h>

#ifndef REPEAT
#define REPEAT 16
#endif

void repeat(float *y, const float *x, int n) {
  struct timespec ts = {0, REPEAT * 1000000L};
  while (nanosleep(&ts, &ts) != 0)
    ;
  for (int i = 0; i < n; i++)
    y[i] = x[i];
}
