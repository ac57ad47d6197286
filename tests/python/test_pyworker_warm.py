#!/usr/bin/env python3
"""The warm Python worker (libkernlab/worker/zygote.c) on the host (ctest
label unit), with tests/python/cases/saxpy_py (no numpy needed):

  warm     two kl bench commands are served by workers forked from one
           parent (kl-pyworker --zygote), which outlives them; both correct
  sandbox  a candidate forked by that parent, probing at import: kl's fake
           secrets are not in its environment, the fake key file in kl's
           home is unreadable, its parent's /proc/PID/environ holds no
           secret, the parent's abstract socket and a loopback listener are
           unreachable; it says what it found and raises: CRASHED, and no
           secret is in kl's output or at the listener
  crash    a candidate that kills itself with SIGKILL: CRASHED, "killed by
           signal 9" (the status comes back through the parent)
  off      KERNLAB_PYWORKER_WARM=0: no parent is started, the worker is
           exec'd, and the result is the same
  idle     the parent leaves by itself once idle (KERNLAB_PYWORKER_IDLE_S),
           its private folder removed
A machine whose sandbox has no network namespace of its own (the seccomp
fallback) takes no warm path: then only `off` and the results are checked.
usage: test_pyworker_warm.py KL SOURCE_DIR
"""
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, scratch  # noqa: E402

KL, SRC = os.path.abspath(sys.argv[1]), sys.argv[2]
CASE = os.path.join(SRC, "tests", "python", "cases", "saxpy_py")
TMP, ENV = scratch(SRC, "kl-pyworker-warm-")
OTHER = "other-" + secrets.token_hex(16)
MARKER = "FAKE-PRIVATE-KEY-" + secrets.token_hex(16)
home = os.path.join(TMP, "home")
os.makedirs(home + "/.ssh")
KEYFILE = home + "/.ssh/id_rsa"
with open(KEYFILE, "w") as f:
    f.write("%s\n" % MARKER)
# a parent of this test's own: a parent serves one worker program (its
# path and file), so a copy of kl-pyworker beside links to its libraries
# and modules has one no other command shares; it leaves 30 s after its last worker
# (so that no load between two commands of this test can outlast it)
LIBEXEC = os.path.join(os.path.dirname(os.path.dirname(KL)), "libexec",
                       "kernlab")
MINE = os.path.join(TMP, "libexec")
os.makedirs(MINE)
shutil.copy2(os.path.join(LIBEXEC, "kl-pyworker"), MINE)
for lib in os.listdir(LIBEXEC):  # its libraries and its modules
    if lib.endswith(".so") or lib.endswith(".py"):
        os.symlink(os.path.join(LIBEXEC, lib), os.path.join(MINE, lib))
ENV = dict(ENV, HOME=home, KL_TEST_SECRET=OTHER, KERNLAB_PYWORKER_IDLE_S="30",
           KERNLAB_PYWORKER=os.path.join(MINE, "kl-pyworker"))
ENV.pop("KERNLAB_PYWORKER_WARM", None)


def parents():
    """pid -> socket name of every warm parent of this test's kl-pyworker
    running now (not its workers, which have their parent's command line,
    nor another test's)."""
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if b"--zygote" in argv and argv.index(b"--zygote") + 1 < len(argv) \
                and os.path.join(MINE, "kl-pyworker").encode() in argv:
            found[int(d)] = (ppid, argv[argv.index(b"--zygote") + 1].decode())
    return {p: name for p, (ppid, name) in found.items() if ppid not in found}


def environ_of(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def kl(*args, env=None):
    p = subprocess.run([KL] + list(args) + ["--json", "--time-cap-ms", "100"],
                       capture_output=True, text=True, env=env or ENV,
                       timeout=600)
    try:
        return p.returncode, json.loads(p.stdout), p.stdout + p.stderr
    except ValueError:
        return p.returncode, {}, p.stdout + p.stderr


before = set(parents())
rc, r, out = kl("bench", CASE)
check(rc == 0 and r.get("verdict") == "OK",
      "kl bench of a python case: OK: %d %s" % (rc, out[-300:]))
net = (r.get("sandbox") or {}).get("network", "")
CONFINED = (r.get("sandbox") or {}).get("files") == "landlock"
WARM = net in ("netns", "userns+netns")
mine = {p: n for p, n in parents().items() if p not in before}
if not WARM:
    print("the sandbox here is %r: no warm path (checked: none started)" % net)
    check(not mine, "no warm parent where the sandbox has no namespace")
else:
    check(len(mine) == 1, "one warm parent started: %s" % mine)
    rc, r, out = kl("bench", CASE)
    again = {p: n for p, n in parents().items() if p not in before}
    check(rc == 0 and r.get("verdict") == "OK" and again == mine,
          "a second kl bench is served by the same parent: %s %s %s"
          % (mine, again, out[-200:]))
    homes = [e[5:].decode() for pid in mine
             for e in environ_of(pid).split(b"\0") if e.startswith(b"HOME=")]
    for pid in mine:
        check(OTHER.encode() not in environ_of(pid) and
              MARKER.encode() not in environ_of(pid),
              "the parent's environment holds no secret")

# ---- the sandbox of a forked worker ------------------------------------
heard = []
lsn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lsn.bind(("127.0.0.1", 0))
lsn.listen(4)
PORT = lsn.getsockname()[1]


def serve():
    while True:
        try:
            c, _ = lsn.accept()
        except OSError:
            return
        heard.append(c.recv(4096) or b"(connected)")
        c.close()


threading.Thread(target=serve, daemon=True).start()
name = next(iter(mine.values()), "none")
probe = os.path.join(TMP, "probe.py")
with open(probe, "w") as f:
    f.write('''import os, socket
found = []
for k, v in os.environ.items():
    if {other!r} in v:
        found.append("secret in its environment: " + k)
try:
    found.append("key " + open({keyfile!r}).read())
except OSError as e:
    found.append("key refused (%s)" % e.errno)
try:
    if {other!r}.encode() in open("/proc/%d/environ" % os.getppid(),
                                  "rb").read():
        found.append("secret in its parent's environment")
    else:
        found.append("parent env: clean")
except OSError as e:
    found.append("parent env refused (%s)" % e.errno)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\\0" + {name!r})
    found.append("warm parent: REACHED")
except OSError as e:
    found.append("warm parent refused (%s)" % e.errno)
t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
t.settimeout(2)
try:
    t.connect(("127.0.0.1", {port}))
    t.sendall(repr(found).encode())
    found.append("net: REACHED")
except OSError as e:
    found.append("net refused (%s)" % e.errno)
raise RuntimeError("probe: " + "; ".join(found))
'''.format(other=OTHER, keyfile=KEYFILE, name=name, port=PORT))
rc, r, out = kl("compare", CASE, "--candidate", probe)
reason = r.get("reason") or ""
print("probe: %s" % reason[-400:])
check(rc == 3 and r.get("verdict") == "CRASHED" and "probe:" in reason,
      "the probe: CRASHED, saying what it found: %d %s" % (rc, out[-300:]))
check("key refused" in reason or not CONFINED,
      "the key file in kl's home is unreadable")
check("warm parent refused" in reason, "the warm parent is unreachable")
check("net refused" in reason and not heard,
      "the loopback listener is unreachable: %s" % heard)
check("secret in its" not in reason,
      "no secret in its or its parent's environment")
check(OTHER not in out and MARKER not in out, "no secret in kl's output")
lsn.close()

# ---- a worker killed: its status comes back through the parent ---------
killer = os.path.join(TMP, "killer.py")
with open(killer, "w") as f:
    f.write("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
rc, r, out = kl("compare", CASE, "--candidate", killer)
check(rc == 3 and r.get("verdict") == "CRASHED" and
      "killed by signal 9" in (r.get("reason") or ""),
      "a candidate that kills its worker: CRASHED, killed by signal 9: "
      "%d %s" % (rc, (r.get("reason") or out)[-300:]))

# ---- off ------------------------------------------------------------------
cold = dict(ENV, KERNLAB_PYWORKER_WARM="0")
now = set(parents())
rc, r, out = kl("bench", CASE, env=cold)
check(rc == 0 and r.get("verdict") == "OK",
      "KERNLAB_PYWORKER_WARM=0: kl bench still OK: %d %s" % (rc, out[-300:]))
check(not (set(parents()) - now), "KERNLAB_PYWORKER_WARM=0 starts no parent")

# ---- idle: the parent leaves by itself ---------------------------------
if WARM:
    deadline = time.time() + 180
    while time.time() < deadline and set(mine) & set(parents()):
        time.sleep(0.2)
    gone = not (set(mine) & set(parents()))
    check(gone, "the warm parent left once idle")
    check(homes and not any(os.path.exists(h) for h in homes),
          "and removed its private folder: %s" % homes)
    if not gone:
        for pid in mine:
            os.kill(pid, signal.SIGKILL)

if FAILS:
    print("%d failure(s); scratch kept at %s" % (len(FAILS), TMP))
    sys.exit(1)
print("ok")
