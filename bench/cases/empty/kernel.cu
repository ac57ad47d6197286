extern "C" __global__ void empty(float *x) { (void)x; }
