void f(void) {}
