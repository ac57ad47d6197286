#!/usr/bin/env python3
"""Where a ctest suite's CPU goes: every test's wall time and user+sys CPU,
its orphans included (bench/README.md, issue 46, part 4).

A test's own rusage misses the CPU of processes it leaves behind (kl does
not wait for the workers it tells to quit, a Python worker's parent idles
on), so each test runs under a child subreaper (PR_SET_CHILD_SUBREAPER)
that reaps every descendant, orphans included, and reports
RUSAGE_CHILDREN. Tests run JOBS at a time, longest COST first, as ctest
would, and tests that share a RESOURCE_LOCK one at a time.
usage: ci_cpu.py BUILD_DIR [JOBS] [REGEX]   (prints a table, slowest CPU
first, and the totals)
"""
import concurrent.futures
import ctypes
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time


def one(argv):
    """Run argv as a subreaper; print 'wall cpu rc' when every descendant
    has exited (those left 120 s after the test's own process are killed)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    t0 = time.monotonic()
    p = subprocess.Popen(argv)
    rc = p.wait()
    deadline = time.monotonic() + 120
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            continue
        if time.monotonic() > deadline:
            for d in os.listdir("/proc"):
                try:
                    with open("/proc/%s/stat" % d) as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                    if ppid == os.getpid():
                        os.kill(int(d), 9)
                except (OSError, ValueError, IndexError):
                    pass
        time.sleep(0.05)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    sys.stderr.flush()
    print("KLCPU %.1f %.1f %d" % (time.monotonic() - t0,
                                  ru.ru_utime + ru.ru_stime, rc))


def main():
    if sys.argv[1] == "--one":
        return one(sys.argv[2:])
    build = os.path.abspath(sys.argv[1])
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 2 * os.cpu_count()
    pat = re.compile(sys.argv[3] if len(sys.argv) > 3 else "")
    spec = json.loads(subprocess.run(
        ["ctest", "--show-only=json-v1"], cwd=build, check=True,
        capture_output=True, text=True).stdout)
    tests = []
    for t in spec["tests"]:
        if not pat.search(t["name"]):
            continue
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        tests.append((t["name"], t["command"], props))
    tests.sort(key=lambda t: -float(t[2].get("COST", 0)))
    locks = {}
    results = []

    def run(name, cmd, props):
        env = dict(os.environ)
        for kv in props.get("ENVIRONMENT", []):
            k, v = kv.split("=", 1)
            env[k] = v
        held = [locks.setdefault(r, threading.Lock())
                for r in sorted(props.get("RESOURCE_LOCK", []))]
        for lk in held:
            lk.acquire()
        try:
            p = subprocess.run([sys.executable, __file__, "--one"] + cmd,
                               cwd=props.get("WORKING_DIRECTORY", build),
                               env=env, capture_output=True, text=True)
        finally:
            for lk in held:
                lk.release()
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("KLCPU")]
        wall, cpu, rc = line[-1].split()[1:] if line else ("0", "0", "-1")
        results.append((name, float(wall), float(cpu), int(rc)))
        print("%-28s %7s s wall %7s s CPU rc %s" % (name, wall, cpu, rc),
              flush=True)

    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for f in [pool.submit(run, *t) for t in tests]:
            f.result()
    wall = time.monotonic() - t0
    print("\n%-28s %9s %9s" % ("test", "wall s", "CPU s"))
    for name, w, c, rc in sorted(results, key=lambda r: -r[2]):
        print("%-28s %9.1f %9.1f%s" % (name, w, c,
                                        "" if rc in (0, 77) else "  FAILED"))
    print("%-28s %9.1f %9.1f  (%d tests, %d jobs)" % (
        "total", wall, sum(r[2] for r in results), len(results), jobs))


if __name__ == "__main__":
    main()
