/* The sandbox of candidate code (core/sandbox.c) and the redactor
 * (core/secrets.c), piece by piece: the environment's allow-list, the
 * seccomp fallback for the network (first: the network method is probed
 * once per process, so this test forces it before anything else probes),
 * a child in the sandbox (no network, no reads in the home, writes only in
 * its folder), a child that cannot enter it, and redaction of every form
 * a secret takes, and the sweep of folders whose maker is gone. End to end:
 * tests/sandbox/test_leak.py. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/internal.h"
#include "core/sandbox.h"

static char scratch[64];

static int landlock(void) {
  long v = syscall(444, NULL, 0, 1u);
  return v > 0 ? (int)v : 0;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* The exit status of a forked child running fn. */
static int in_child(int (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(fn());
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- the network: the seccomp fallback (first) ------------------------------
 */

static int seccomp_child(void) {
  setenv("KL_SANDBOX_NET", "seccomp", 1);
  kl__sandbox_spec spec = {.dir = scratch};
  kl__sandbox sb;
  if (kl__sandbox_prepare(&sb, &spec) < 0) return 10;
  if (!strstr(sb.describe, "\"network\":\"seccomp\"")) return 11;
  if (kl__sandbox_enter(&sb) < 0) return 12;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s >= 0 || errno != EACCES) return 13;
  s = socket(AF_INET6, SOCK_DGRAM, 0);
  if (s >= 0 || errno != EACCES) return 14;
  s = socket(AF_UNIX, SOCK_STREAM, 0); /* the driver's */
  if (s < 0) return 15;
  close(s);
#ifdef __NR_io_uring_setup
  if (syscall(__NR_io_uring_setup, 1, NULL) != -1 || errno != ENOSYS) return 16;
#endif
  return 0;
}

static void test_sandbox__seccomp_fallback_refuses_inet_sockets(void **state) {
  (void)state;
  assert_int_equal(in_child(seccomp_child), 0);
}

/* ---- the environment -------------------------------------------------------
 */

static void test_sandbox__environment_is_an_allow_list(void **state) {
  (void)state;
  setenv("FOO_API_KEY", "sk-foo-0123456789", 1);
  setenv("OPENAI_API_KEY", "sk-proj-0123456789", 1);
  setenv("KL_WEBHOOK_URL", "https://example.com/hooks/0123456789abcdef", 1);
  setenv("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1", 1);
  setenv("RANDOM_SETTING", "1", 1);
  setenv("CUDA_INJECTION64_PATH", "/tmp/inject.so", 1);
  setenv("CUDA_MODULE_LOADING", "LAZY", 1);
  setenv("LC_ALL", "C", 1);
  setenv("OMP_NUM_THREADS", "2", 1);
  const char *env[] = {"EXTRA=1", "OMP_NUM_THREADS=1", NULL};
  kl__sandbox_spec spec = {.dir = scratch, .env = env, .limits = true};
  kl__sandbox sb;
  assert_int_equal(kl__sandbox_prepare(&sb, &spec), 0);
  char home[128], tmp[128];
  snprintf(home, sizeof(home), "HOME=%s", scratch);
  snprintf(tmp, sizeof(tmp), "TMPDIR=%s", scratch);
  const char *want[] = {"CUDA_MODULE_LOADING=LAZY", "LC_ALL=C", "EXTRA=1",
                        "OMP_NUM_THREADS=1",        home,       tmp};
  const char *never[] = {
      "FOO_API_KEY=",     "OPENAI_API_KEY=", "KL_WEBHOOK_URL=",
      "SSH_AUTH_SOCK=",   "RANDOM_SETTING=", "CUDA_INJECTION64_PATH=",
      "OMP_NUM_THREADS=2"};
  bool path = false;
  for (char **e = sb.envp; *e; e++) {
    path |= strncmp(*e, "PATH=", 5) == 0;
    for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
      if (strncmp(*e, never[i], strlen(never[i])) == 0)
        fail_msg("%s passed into the sandbox", *e);
  }
  assert_true(path || !getenv("PATH"));
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    bool found = false;
    for (char **e = sb.envp; *e; e++)
      found |= strcmp(*e, want[i]) == 0;
    if (!found) fail_msg("%s is not in the sandbox's environment", want[i]);
  }
  assert_int_equal(kl__sandbox_setenv(&sb, "EXTRA=2"), 0);
  int extra = 0;
  for (char **e = sb.envp; *e; e++)
    extra += strncmp(*e, "EXTRA=", 6) == 0
                 ? (strcmp(*e, "EXTRA=2") == 0 ? 1 : 100)
                 : 0;
  assert_int_equal(extra, 1);
  kl__sandbox_dispose(&sb);
  assert_true(kl__sandbox_env_allowed("PATH"));
  assert_true(kl__sandbox_env_allowed("CUDA_VISIBLE_DEVICES"));
  /* where a Python case's kernel language may be installed */
  assert_true(kl__sandbox_env_allowed("PYTHONPATH"));
  assert_false(kl__sandbox_env_allowed("CUDA_API_TOKEN"));
  assert_false(kl__sandbox_env_allowed("HOME")); /* its own, never ours */
}

/* ---- a child in the sandbox
 * ---------------------------------------------------- */

static char home[160], secret[200], allowed[200], outside[200];

static int confined_child(void) {
  setenv("HOME", home, 1);
  const char *readable[] = {allowed, NULL};
  kl__sandbox_spec spec = {
      .dir = scratch, .readable = readable, .limits = true};
  kl__sandbox sb;
  if (kl__sandbox_prepare(&sb, &spec) < 0) return 20;
  if (kl__sandbox_enter(&sb) < 0) return 21;
  /* no network: a socket, if any, reaches nothing */
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s >= 0) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(9);
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0 ||
        errno == ECONNREFUSED)
      return 22;
    close(s);
  }
  char cwd[4096];
  if (!getcwd(cwd, sizeof(cwd)) || strcmp(cwd, scratch) != 0) return 23;
  int fd = open("mine.txt", O_WRONLY | O_CREAT, 0644); /* its folder */
  if (fd < 0) return 24;
  close(fd);
  if (landlock() > 0) {
    if (open(secret, O_RDONLY) >= 0 || errno != EACCES)
      return 25; /* the home is hidden */
    if ((fd = open(allowed, O_RDONLY)) < 0)
      return 26; /* ... but what it must read there */
    close(fd);
    if (open(outside, O_WRONLY | O_CREAT, 0644) >= 0)
      return 27; /* no writes outside its folder */
    if ((fd = open("/etc/hostname", O_RDONLY)) < 0 && errno == EACCES)
      return 28; /* the system stays readable */
    if (fd >= 0) close(fd);
  }
  return 0;
}

static void test_sandbox__child_reaches_no_network_and_no_home(void **state) {
  (void)state;
  snprintf(home, sizeof(home), "%s-home", scratch);
  snprintf(secret, sizeof(secret), "%s/id_rsa", home);
  snprintf(allowed, sizeof(allowed), "%s/toolchain.txt", home);
  snprintf(outside, sizeof(outside), "%s-outside.txt", scratch);
  assert_int_equal(mkdir(home, 0700), 0);
  write_text(secret, "PRIVATE KEY\n");
  write_text(allowed, "a header\n");
  int rc = in_child(confined_child);
  if (rc) fail_msg("the sandboxed child failed check %d", rc);
  char *was = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", home, 1);
  assert_true(kl__sandbox_hidden(secret));
  assert_false(kl__sandbox_hidden("/usr"));
  if (was) setenv("HOME", was, 1);
  free(was);
  unlink(secret);
  unlink(allowed);
  rmdir(home);
  unlink(outside);
}

/* A child that cannot enter its sandbox (its folder is gone) is an error
 * of kl__run_io, never a program's exit status; nor is a missing program. */
static void test_sandbox__a_child_that_cannot_start_is_an_error(void **state) {
  (void)state;
  char gone[128];
  snprintf(gone, sizeof(gone), "%s/gone", scratch);
  kl__sandbox_spec spec = {.dir = gone};
  kl__sandbox sb;
  assert_int_equal(kl__sandbox_prepare(&sb, &spec), 0);
  kl__run_extras io;
  memset(&io, 0, sizeof(io));
  io.sandbox = &sb;
  kl__run_result res;
  const char *argv[] = {"true", NULL};
  assert_int_equal(kl__run_io(&res, argv, NULL, 10000, 4096, &io), KL_EIO);
  assert_non_null(strstr(kl_error_last()->message, "sandbox"));
  kl_buf_dispose(&res.output);
  kl__sandbox_dispose(&sb);
  const char *missing[] = {"kl-no-such-program-here", NULL};
  assert_int_equal(kl__run_io(&res, missing, NULL, 10000, 4096, NULL),
                   KL_ENOTFOUND);
  kl_buf_dispose(&res.output);
  /* a program of its own that exits 127 ran */
  const char *sh[] = {"sh", "-c", "exit 127", NULL};
  assert_int_equal(kl__run_io(&res, sh, NULL, 10000, 4096, NULL), 0);
  assert_int_equal(res.exit_code, 127);
  kl_buf_dispose(&res.output);
}

/* ---- the redactor
 * ----------------------------------------------------------------- */

static void test_secrets__names(void **state) {
  (void)state;
  const char *yes[] = {"ANTHROPIC_API_KEY", "OPENAI_API_KEY",
                       "HF_TOKEN",          "KL_WEBHOOK_URL",
                       "DB_PASSWORD",       "AWS_SECRET_ACCESS_KEY",
                       "GITHUB_TOKEN",      "my_service_key"};
  const char *no[] = {"PATH",         "HOME", "KEYBOARD",
                      "MONKEY",       "LANG", "CUDA_VISIBLE_DEVICES",
                      "SSH_AUTH_SOCK"};
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
    if (!kl__secret_name(yes[i]))
      fail_msg("%s is not taken for a secret", yes[i]);
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
    if (kl__secret_name(no[i])) fail_msg("%s is taken for a secret", no[i]);
}

static void test_secrets__every_form_is_blotted_out(void **state) {
  (void)state;
  kl__secret_add("sk-test-0123456789abcdef");
  kl__secret_add("https://hooks.example.com/services/T000/B000/"
                 "XXXXXXXXXXXXXXXXXXXXXXXX");
  kl__secret_add("pa\"ss\\word-1234");
  kl__secret_add("short"); /* a word, not a secret */
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(
      kl__buf_puts(&b,
                   "key sk-test-0123456789abcdef; url "
                   "https:\\/\\/hooks.example.com\\/services\\/T000\\/B000\\/"
                   "XXXXXXXXXXXXXXXXXXXXXXXX; token alone "
                   "XXXXXXXXXXXXXXXXXXXXXXXX; json \"pa\\\"ss\\\\word-1234\"; "
                   "a short word"),
      0);
  assert_int_equal(kl__redact(&b), 0);
  assert_null(strstr(b.ptr, "sk-test-0123456789abcdef"));
  assert_null(strstr(b.ptr, "XXXXXXXXXXXXXXXXXXXXXXXX"));
  assert_null(strstr(b.ptr, "word-1234"));
  assert_non_null(strstr(b.ptr, "key [redacted];"));
  assert_non_null(strstr(b.ptr, "a short word"));
  kl_buf_dispose(&b);
  char line[64] = "it printed sk-test-0123456789abcdef!";
  kl__redact_inplace(line, sizeof(line));
  assert_string_equal(line, "it printed [redacted]!");
  char *copy = kl__redact_dup("x sk-test-0123456789abcdef y");
  assert_string_equal(copy, "x [redacted] y");
  kl__free(copy);
}

/* The environment's secrets: found by name, and blanked in the block
 * /proc/self/environ shows while getenv still finds them. */
static void test_secrets__environment_block_is_blanked(void **state) {
  (void)state;
  char text[65536];
  int fd = open("/proc/self/environ", O_RDONLY);
  assert_true(fd >= 0);
  ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  assert_true(n > 0);
  kl__secrets_hide_environ();
  assert_string_equal(getenv("KL_TEST_SECRET_TOKEN"), "tok-0123456789abcdef");
  fd = open("/proc/self/environ", O_RDONLY);
  assert_true(fd >= 0);
  n = read(fd, text, sizeof(text) - 1);
  close(fd);
  for (ssize_t i = 0; i < n; i++)
    if (text[i] == '\0') text[i] = '\n';
  text[n > 0 ? n : 0] = '\0';
  assert_null(strstr(text, "tok-0123456789abcdef"));
  assert_non_null(strstr(text, "KL_TEST_SECRET_TOKEN="));
  kl_buf b = KL_BUF_INIT;
  assert_int_equal(kl__buf_puts(&b, "value tok-0123456789abcdef"), 0);
  assert_int_equal(kl__redact(&b), 0);
  assert_string_equal(b.ptr, "value [redacted]");
  kl_buf_dispose(&b);
}

/* The folders of makers that are gone are swept; every other folder, file
 * or link is left, and so is what a link in a swept folder points to
 * (core/sandbox_dir.c). */
static void test_sandbox__folders_of_gone_makers_are_swept(void **state) {
  (void)state;
  char boot[9];
  unsigned long long ns;
  long pid;
  assert_true(kl__sandbox_dir_owner("kl-worker-97196232-4026531836-123-AbC123",
                                    boot, &ns, &pid));
  assert_true(ns == 4026531836ULL && pid == 123);
  assert_string_equal(boot, "97196232");
  assert_true(
      kl__sandbox_dir_owner("kl-w-0a1b2c3d-7-1-AbC123", boot, &ns, &pid));
  static const char *const not_ours[] = {
      "kl-worker-AbC123",                                /* the old form */
      "kl-pyworker-parent-AbC123",                       /* lasting */
      "kl--97196232-4026531836-123-AbC123",              /* no what */
      "kl-worker-4026531836-123-AbC123",                 /* no boot */
      "kl-worker-9719623-4026531836-123-AbC123",         /* 7 digits */
      "kl-worker-97196232-0-123-AbC123",                 /* namespace 0 */
      "kl-worker-97196232-4026531836-0-AbC123",          /* pid 0 */
      "kl-worker-97196232-4026531836-4294967297-AbC123", /* > INT_MAX */
      "kl-worker-97196232-4026531836-123-AbC12",         /* short suffix */
      "kx-worker-97196232-4026531836-123-AbC123",
  };
  for (size_t i = 0; i < sizeof(not_ours) / sizeof(not_ours[0]); i++)
    assert_false(kl__sandbox_dir_owner(not_ours[i], boot, &ns, &pid));

  char root[128], path[256], inner[320];
  snprintf(root, sizeof(root), "%s/tmp", scratch);
  assert_int_equal(mkdir(root, 0700), 0);
  assert_int_equal(setenv("TMPDIR", root, 1), 0);
  char *mine = NULL;
  assert_int_equal(kl__sandbox_dir_named(&mine, "worker"), 0);
  if (!kl__sandbox_dir_owner(strrchr(mine, '/') + 1, boot, &ns, &pid)) {
    kl__sandbox_dir_remove(mine); /* no /proc: nothing is swept */
    kl__free(mine);
    unsetenv("TMPDIR");
    skip();
  }
  assert_int_equal(pid, (long)getpid());

  pid_t gone = fork();
  assert_true(gone >= 0);
  if (gone == 0) _exit(0);
  assert_int_equal(waitpid(gone, NULL, 0), gone);
  char other_boot[9];
  snprintf(other_boot, sizeof(other_boot), "%s", boot);
  other_boot[0] = other_boot[0] == 'f' ? '0' : 'f';
  snprintf(path, sizeof(path), "%s/target.txt", scratch);
  write_text(path, "kept\n");
  struct {
    const char *name;
    const char *boot;
    unsigned long long ns;
    long pid;
    bool swept;
  } dirs[] = {
      {"Gone01", boot, ns, gone, true},
      {"Alive1", boot, ns, (long)getppid(), false},
      {"Other1", boot, ns + 1, gone, false},   /* another namespace */
      {"Other2", other_boot, ns, gone, false}, /* another machine */
  };
  for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
    snprintf(path, sizeof(path), "%s/kl-worker-%s-%llu-%ld-%s", root,
             dirs[i].boot, dirs[i].ns, dirs[i].pid, dirs[i].name);
    assert_int_equal(mkdir(path, 0700), 0);
  }
  /* what a worker leaves: folders in folders, one it cannot list, one it
   * cannot write to, a link out */
  snprintf(path, sizeof(path), "%s/kl-worker-%s-%llu-%ld-Gone01", root, boot,
           ns, (long)gone);
  snprintf(inner, sizeof(inner), "%s/a", path);
  assert_int_equal(mkdir(inner, 0700), 0);
  snprintf(inner, sizeof(inner), "%s/a/b.txt", path);
  write_text(inner, "left\n");
  snprintf(inner, sizeof(inner), "%s/ro", path);
  assert_int_equal(mkdir(inner, 0700), 0);
  snprintf(inner, sizeof(inner), "%s/ro/c.txt", path);
  write_text(inner, "left\n");
  snprintf(inner, sizeof(inner), "%s/ro", path);
  assert_int_equal(chmod(inner, 0500), 0);
  snprintf(inner, sizeof(inner), "%s/locked", path);
  assert_int_equal(mkdir(inner, 0000), 0);
  snprintf(inner, sizeof(inner), "%s/link", path);
  snprintf(path, sizeof(path), "%s/target.txt", scratch);
  assert_int_equal(symlink(path, inner), 0);
  /* the old form; a file and a link of the swept form are not folders */
  snprintf(path, sizeof(path), "%s/kl-worker-Old001", root);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof(path), "%s/kl-worker-%s-%llu-%ld-File01", root, boot,
           ns, (long)gone);
  write_text(path, "a file\n");
  snprintf(path, sizeof(path), "%s/kl-worker-%s-%llu-%ld-Link01", root, boot,
           ns, (long)gone);
  assert_int_equal(symlink(scratch, path), 0);

  assert_int_equal(kl__sandbox_dir_sweep(root), 1);
  struct stat st;
  for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
    snprintf(path, sizeof(path), "%s/kl-worker-%s-%llu-%ld-%s", root,
             dirs[i].boot, dirs[i].ns, dirs[i].pid, dirs[i].name);
    assert_int_equal(lstat(path, &st) == 0, !dirs[i].swept);
  }
  snprintf(path, sizeof(path), "%s/kl-worker-Old001", root);
  assert_int_equal(lstat(path, &st), 0);
  snprintf(path, sizeof(path), "%s/kl-worker-%s-%llu-%ld-File01", root, boot,
           ns, (long)gone);
  assert_int_equal(lstat(path, &st), 0);
  snprintf(path, sizeof(path), "%s/kl-worker-%s-%llu-%ld-Link01", root, boot,
           ns, (long)gone);
  assert_int_equal(lstat(path, &st), 0);
  snprintf(path, sizeof(path), "%s/target.txt", scratch);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(stat(scratch, &st), 0);
  assert_int_equal(stat(mine, &st), 0); /* this process's own */
  kl__sandbox_dir_remove(mine);
  assert_int_equal(stat(mine, &st) == 0, 0);
  kl__free(mine);
  unsetenv("TMPDIR");
}

static int setup(void **state) {
  (void)state;
  snprintf(scratch, sizeof(scratch), "/tmp/kl-test-sandbox-XXXXXX");
  if (!mkdtemp(scratch)) return -1;
  char *real = realpath(scratch, NULL);
  snprintf(scratch, sizeof(scratch), "%s", real);
  free(real);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kl__sandbox_dir_remove(scratch);
  return 0;
}

int main(int argc, char **argv) {
  /* a secret in this process's own environment block, from its start */
  if (argc < 2 || strcmp(argv[1], "--with-secret") != 0) {
    setenv("KL_TEST_SECRET_TOKEN", "tok-0123456789abcdef", 1);
    char *args[] = {argv[0], (char *)"--with-secret", NULL};
    execv("/proc/self/exe", args);
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sandbox__seccomp_fallback_refuses_inet_sockets),
      cmocka_unit_test(test_sandbox__environment_is_an_allow_list),
      cmocka_unit_test(test_sandbox__child_reaches_no_network_and_no_home),
      cmocka_unit_test(test_sandbox__a_child_that_cannot_start_is_an_error),
      cmocka_unit_test(test_secrets__names),
      cmocka_unit_test(test_secrets__every_form_is_blotted_out),
      cmocka_unit_test(test_secrets__environment_block_is_blanked),
      cmocka_unit_test(test_sandbox__folders_of_gone_makers_are_swept),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
