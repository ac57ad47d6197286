/* Cheat: computes nothing and hands back whatever its output buffer held
 * before it ran, hoping it is the oracle's result left behind from the
 * check (a freed buffer reused, as in harnesses that allocate the
 * candidate's output where the reference's was). The harness poisons
 * outputs before every launch, so nothing left over can pass: caught as
 * unwritten output. */
void matmul(float *c, const float *a, const float *b, int n) {
  (void)c;
  (void)a;
  (void)b;
  (void)n;
}
