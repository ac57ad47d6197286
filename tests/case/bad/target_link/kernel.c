void f(float *x, int n) { (void)x; (void)n; }
