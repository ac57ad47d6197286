/* How busy the machine was while something was measured: what other
 * processes took of its CPUs, and the load average.
 *
 * A mark reads the machine's busy and total CPU time (/proc/stat's first
 * line: busy is user, nice, system, irq, softirq and steal, since time a
 * hypervisor gave elsewhere was not ours either), the worker's own CPU
 * time (/proc/PID/stat, all its threads) and this process's (getrusage).
 * Between two marks, busy time that was neither is other processes': in
 * CPUs' worth, 1.0 is one CPU kept busy throughout. Linux only; elsewhere,
 * or where /proc cannot be read, the mark is not valid and nothing is
 * said. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

static bool read_machine(double *busy_s, double *total_s) {
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return false;
  unsigned long long v[8] = {0};
  int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
  fclose(f);
  if (got < 4) return false;
  double hz = (double)sysconf(_SC_CLK_TCK);
  if (!(hz > 0)) return false;
  /* user nice system idle iowait irq softirq steal */
  unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  *busy_s = (double)busy / hz;
  *total_s = (double)(busy + v[3] + v[4]) / hz;
  return true;
}

/* utime + stime of process pid, in seconds (all its threads). */
static bool read_process(int pid, double *cpu_s) {
  char path[64], line[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  size_t n = fread(line, 1, sizeof(line) - 1, f);
  fclose(f);
  line[n] = '\0';
  const char *p = strrchr(line, ')'); /* the name may hold spaces */
  unsigned long long ut = 0, st = 0;
  /* after ") ": state, then fields 4..13, then utime (14) and stime (15) */
  if (!p ||
      sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ut, &st) != 2)
    return false;
  double hz = (double)sysconf(_SC_CLK_TCK);
  *cpu_s = hz > 0 ? (double)(ut + st) / hz : 0;
  return hz > 0;
}

void kl__load_mark(kl__load *m, int worker_pid) {
  memset(m, 0, sizeof(*m));
  struct rusage ru;
  m->valid = read_machine(&m->busy_s, &m->total_s) &&
             (worker_pid <= 0 || read_process(worker_pid, &m->worker_s)) &&
             getrusage(RUSAGE_SELF, &ru) == 0;
  if (m->valid)
    m->self_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  m->wall_ms = kl__now_ms();
}

bool kl__load_between(const kl__load *a, const kl__load *b, double *others_cpus,
                      double *cpus, double *loadavg) {
  *others_cpus = *cpus = *loadavg = 0;
  double wall = (b->wall_ms - a->wall_ms) / 1000.0;
  if (!a->valid || !b->valid || wall < 0.05) return false;
  double total = b->total_s - a->total_s;
  double others = (b->busy_s - a->busy_s) - (b->worker_s - a->worker_s) -
                  (b->self_s - a->self_s);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  *cpus = online > 0 ? (double)online : total / wall;
  *others_cpus = others > 0 ? others / wall : 0;
  if (*others_cpus > *cpus) *others_cpus = *cpus;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", loadavg) != 1) *loadavg = 0;
    fclose(f);
  }
  return true;
}
