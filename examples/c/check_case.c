/* Embedding example: load a case with libkernlab and print its shapes.
 * Build against an installed kernlab:
 *   cc check_case.c $(pkg-config --cflags --libs kernlab)
 * or with CMake: find_package(kernlab) and link kernlab::kernlab. */
#include <stdio.h>

#include <kernlab/kernlab.h>

static int print_diag(const kl_error *e, void *payload) {
  (void)payload;
  fprintf(stderr, "%s\n", e->message);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CASE\n", argv[0]);
    return 2;
  }
  if (kl_version_number() != KL_VERSION_NUMBER) {
    fprintf(stderr, "libkernlab %s, headers %s\n", kl_version_string(),
            KL_VERSION);
    return 1;
  }
  kl_case_options opts = KL_CASE_OPTIONS_INIT;
  opts.on_diag = print_diag;
  kl_case *c;
  if (kl_case_load(&c, argv[1], &opts) != 0) return 2;
  printf("%s: %zu params, %zu shapes\n", kl_case_name(c),
         kl_case_param_count(c), kl_case_shape_count(c));
  for (size_t s = 0; s < kl_case_shape_count(c); s++)
    printf("  %s: %lld bytes of buffers\n", kl_case_shape_name(c, s),
           (long long)kl_case_buffer_bytes(c, s));
  kl_case_free(c);
  return 0;
}
