#!/usr/bin/env python3
"""The Python worker's process, without a device (ctest label unit): it
serves kl-worker's protocol through libkernlab-worker.so's C loop, and that
library exports the loop and the sandbox's entry alone.

  exports  libkernlab-worker.so's dynamic symbols: kl_worker_serve and
           kl_worker_enter_sandbox only (the static library inside keeps
           its names)
  host     a host case (array.array values, so no numpy is needed) loaded
           with candidates: the C worker's check on fresh seeds passes the
           right ones and names what the others did (wrong values, a
           written input, an exception); time samples baseline and
           candidate A B B A with the host timer and verifies the timed
           outputs, which catches results computed once and handed back
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

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import scratch_dir  # noqa: E402

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
check(nm.returncode == 0 and
      exported == ["kl_worker_enter_sandbox", "kl_worker_serve"],
      "libkernlab-worker.so exports kl_worker_serve and "
      "kl_worker_enter_sandbox alone: %s" % exported)

tmp = scratch_dir("kl-pyworker-")
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


# A host case (array.array values: no numpy needed) through the C loop
OPS = """
import array, random

def inputs(shape, seed):
    rng = random.Random(seed)
    n = shape["n"]
    return (array.array("f", (rng.uniform(-1, 1) for _ in range(n))),
            array.array("f", (rng.uniform(-1, 1) for _ in range(n))),
            array.array("f", (rng.uniform(-1, 1) for _ in range(n))))

def reference(x, y, acc):
    out = array.array("f", bytes(len(x) * 4))
    for i in range(len(x)):
        out[i] = 2.0 * x[i] + y[i]
        acc[i] += x[i]
    return out, array.array("d", [sum(x)])

def forward(x, y, acc):
    # the slow way: a Python loop, the sum taken twice
    out = array.array("f", bytes(len(x) * 4))
    for i in range(len(x)):
        out[i] = 2.0 * x[i] + y[i]
        acc[i] = acc[i] + x[i]
    total = sum(float(v) for v in x)
    total = sum(x)
    return out, array.array("d", [total])
"""
CANDIDATES = {
    "fast": """
import array
def forward(x, y, acc):
    acc[:] = array.array("f", [a + b for a, b in zip(acc, x)])
    return (array.array("f", [2.0 * a + b for a, b in zip(x, y)]),
            array.array("d", [sum(x)]))
""",
    "wrong": """
import array
def forward(x, y, acc):
    acc[:] = array.array("f", [a + b for a, b in zip(acc, x)])
    return (array.array("f", [a + b for a, b in zip(x, y)]),
            array.array("d", [sum(x)]))
""",
    "writes_input": """
import array
def forward(x, y, acc):
    acc[:] = array.array("f", [a + b for a, b in zip(acc, x)])
    out = array.array("f", [2.0 * a + b for a, b in zip(x, y)])
    total = sum(x)
    x[0] = 0.0
    return out, array.array("d", [total])
""",
    "stale": """
import array
kept = None
def forward(x, y, acc):
    global kept
    acc[:] = array.array("f", [a + b for a, b in zip(acc, x)])
    if kept is None:
        kept = (array.array("f", [2.0 * a + b for a, b in zip(x, y)]),
                array.array("d", [sum(x)]))
    return kept
""",
    "raises": """
def forward(x, y, acc):
    raise RuntimeError("no kernel today")
"""}
with open(os.path.join(tmp, "ops.py"), "w") as f:
    f.write(OPS)


def describe(name):
    path = os.path.join(tmp, name + ".json")
    cand = None
    if name in CANDIDATES:
        cand = os.path.join(tmp, name + ".py")
        with open(cand, "w") as f:
            f.write(CANDIDATES[name])
    with open(path, "w") as f:
        json.dump({"case": "axpy_py", "device": "host",
                   "module": os.path.join(tmp, "ops.py"), "candidate": cand,
                   "params": [{"name": "x", "role": "input", "dtype": "f32"},
                              {"name": "y", "role": "input", "dtype": "f32"},
                              {"name": "acc", "role": "inout",
                               "dtype": "f32"},
                              {"name": "out", "role": "output",
                               "dtype": "f32"},
                              {"name": "total", "role": "output",
                               "dtype": "f64"}],
                   "shapes": [{"name": "small", "values": {"n": 3000}},
                              {"name": "odd", "values": {"n": 1001}}],
                   "atol": 1e-5, "rtol": 1e-5}, f)
    return path


try:
    ids = {}
    for name in ["baseline"] + sorted(CANDIDATES):
        r = ask(json.dumps({"op": "load", "path": describe(name)}))
        check(r and r["ok"] and r["nparams"] == 5, "load %s: %s" % (name, r))
        ids[name] = r and r.get("id")
    for name, want in (("baseline", True), ("fast", True), ("wrong", False),
                       ("writes_input", False)):
        for shape in (0, 1):
            r = ask(json.dumps({"op": "check", "plugin": ids[name],
                                "oracle": -1, "shape": shape,
                                "seeds": [3, 4]}))
            res = (r or {}).get("results") or []
            check(r and r["ok"] and len(res) == 2 and
                  all(x["correct"] == want for x in res),
                  "check %s at shape %d: %s" % (name, shape,
                                               json.dumps(r)[:400]))
            if name == "wrong":
                check(res and res[0]["mismatches"] > 2000 // 2 and
                      res[0]["detail"].startswith("out["),
                      "its mismatches counted, the output named: %s"
                      % res[:1])
            if name == "writes_input":
                check(res and res[0]["inputs_written"] == 1,
                      "the written input is seen: %s" % res[:1])
    r = ask(json.dumps({"op": "check", "plugin": ids["raises"],
                        "oracle": -1, "shape": 0, "seeds": [3]}))
    res = ((r or {}).get("results") or [{}])[0]
    check(r and r["ok"] and not res.get("correct") and
          "RuntimeError: no kernel today" in res.get("detail", ""),
          "a forward that raises fails its launch, with the exception: %s"
          % res)
    base = {"op": "time", "shape": 0, "cold": 1, "warmup": 1,
            "min_samples": 5, "max_samples": 40, "target_rel_ci": 0.05,
            "time_cap_ms": 3000, "seed": 9, "block_rounds": 4,
            "decide_gain_pct": -1, "verify": 1, "oracle": -1}
    r = ask(json.dumps(dict(base, plugins=[ids["baseline"], ids["fast"]])))
    s0, s1 = (r or {}).get("samples") or [[], []]
    ver = (r or {}).get("verify") or []
    # the host timer: no SM clocks, the CPU's caches flushed (cold)
    check(r and r["ok"] and "sm_clock_mhz" not in r and
          r.get("flush_bytes", 0) > 0 and len(s0) >= 5 and
          len(s0) == len(s1) and all(v > 0 for v in s0 + s1) and
          len(ver) == 2 and all(v["correct"] for v in ver),
          "time baseline and candidate A B B A with the host timer, the "
          "timed outputs verified: %s" % json.dumps(r)[:400])
    r = ask(json.dumps(dict(base, plugins=[ids["stale"]])))
    ver = ((r or {}).get("verify") or [{}])[0]
    check(r and r["ok"] and ver.get("mismatches", 0) > 0,
          "results computed once and handed back later are caught: %s"
          % json.dumps(r)[:300])

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
