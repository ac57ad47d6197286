#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>
int kl__sandbox_enter(const char *dir);
int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  char dir[] = "/tmp/sbxXXXXXX";
  mkdtemp(dir);
  if (!strcmp(mode, "nnp")) prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (!strcmp(mode, "nofile")) { struct rlimit r = {1024, 1024}; setrlimit(RLIMIT_NOFILE, &r); }
  if (!strcmp(mode, "cpu")) { struct rlimit r = {3600, 3610}; setrlimit(RLIMIT_CPU, &r); }
  if (!strcmp(mode, "fsize")) { struct rlimit r = {1ull<<30, 1ull<<30}; setrlimit(RLIMIT_FSIZE, &r); }
  if (!strcmp(mode, "cwd")) chdir(dir);
  if (!strcmp(mode, "all")) printf("enter %d\n", kl__sandbox_enter(dir));
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  int (*init)(unsigned) = dlsym(h, "cuInit");
  printf("%s: cuInit %d\n", mode, init(0));
  return 0;
}
