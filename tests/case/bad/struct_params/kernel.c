void k(void) {}
