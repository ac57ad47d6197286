#!/usr/bin/env python3
"""The Python worker's process, without a device (ctest label unit): it
serves kl-worker's protocol through libkernlab-worker.so's C loop, and that
library exports kl_worker_serve alone.

  exports  libkernlab-worker.so's dynamic symbols: kl_worker_serve only
           (the static library inside keeps its names)
  serve    a load of a missing or malformed description answers an error
           naming the file; an unknown op and a bad line answer errors; the
           worker survives all of them and leaves on quit with status 0
usage: test_pyworker.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import socket
import subprocess
import sys
import tempfile

BUILD, SRC = sys.argv[1], sys.argv[2]
LIB = BUILD + "/libexec/kernlab/libkernlab-worker.so"
FAILS = []


def check(ok, what):
    print("%s: %s" % ("ok" if ok else "FAIL", what), flush=True)
    if not ok:
        FAILS.append(what)


nm = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True,
                    text=True)
exported = sorted(line.split()[-1] for line in nm.stdout.splitlines()
                  if line.split()[1:2] == ["T"])
check(nm.returncode == 0 and exported == ["kl_worker_serve"],
      "libkernlab-worker.so exports kl_worker_serve alone: %s" % exported)

tmp = tempfile.mkdtemp(prefix="kl-pyworker-")
garbled = os.path.join(tmp, "garbled.json")
with open(garbled, "w") as f:
    f.write("{not json")
parent, child = socket.socketpair()
proc = subprocess.Popen(
    [sys.executable, SRC + "/kl-worker/kl_pyworker.py"],
    pass_fds=(3,), stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL, preexec_fn=lambda: os.dup2(child.fileno(), 3),
    env=dict(os.environ, KERNLAB_WORKER_LIB=LIB))
child.close()
reader = parent.makefile("r")


def ask(line):
    parent.sendall((line + "\n").encode())
    got = reader.readline()
    return json.loads(got) if got else None


try:
    r = ask(json.dumps({"op": "load", "path": tmp + "/missing.json"}))
    check(r and not r["ok"] and "missing.json" in r["error"] and
          "FileNotFoundError" in r["error"],
          "a missing description: %s" % r)
    r = ask(json.dumps({"op": "load", "path": garbled}))
    check(r and not r["ok"] and "garbled.json" in r["error"] and
          "JSONDecodeError" in r["error"], "a malformed one: %s" % r)
    r = ask(json.dumps({"op": "frobnicate"}))
    check(r and not r["ok"] and "unknown op" in r["error"],
          "an unknown op: %s" % r)
    r = ask("this is not a request")
    check(r and not r["ok"] and "bad request" in r["error"],
          "a bad line: %s" % r)
    r = ask(json.dumps({"op": "check", "plugin": 7, "oracle": -1,
                        "shape": 0, "seeds": [1]}))
    check(r and not r["ok"], "a check of no plugin: %s" % r)
    parent.sendall(b'{"op":"quit"}\n')
    check(proc.wait(timeout=60) == 0, "quit: status 0")
finally:
    if proc.poll() is None:
        proc.kill()
if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
print("all passed")
