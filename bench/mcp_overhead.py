#!/usr/bin/env python3
"""What a call through `kl mcp` costs on top of the CLI doing the same work.

For each verb, pairs of the same work are run interleaved (CLI, MCP, MCP,
CLI, ... so that drift hits both alike) on a host case: the CLI as a new
`kl VERB ... --json` process, timed from spawn to exit; MCP as a tools/call
on one long-lived `kl mcp` session, timed from writing the request to
reading its reply (the server runs the same verb as a child, so this adds
the JSON-RPC round trip, the argument checks and the child's pipes).
Prints per verb the medians, the median of the paired differences (the
overhead per call) with its 95% interval (bootstrap), and the ratio.

  check   cheap (tens of ms): the protocol's fixed cost shows
  bench   host_saxpy at shape 1M, time cap 100 ms, fixed seed: a real
          measurement, where the overhead should be noise

usage: mcp_overhead.py KL SOURCE_DIR [PAIRS]   (default 30 pairs)
"""
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

KL, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
PAIRS = int(sys.argv[3]) if len(sys.argv) > 3 else 30
TMP = tempfile.mkdtemp(prefix="kl-mcp-overhead-")
ENV = dict(os.environ, KERNLAB_SHARE_DIR=SRC + "/share/kernlab",
           KERNLAB_CACHE_DIR=TMP + "/cache", NO_COLOR="1")
CASE = shutil.copytree(SRC + "/cases/host_saxpy", TMP + "/host_saxpy",
                       ignore=shutil.ignore_patterns("runs", "*.jsonl"))

WORK = {
    "check": (["check", CASE], {"case": CASE}),
    "bench": (["bench", CASE, "--shape", "1M", "--time-cap-ms", "100",
               "--seed", "1"],
              {"case": CASE, "shape": "1M", "time_cap_ms": 100, "seed": 1}),
}


class Session:
    def __init__(self):
        self.p = subprocess.Popen([KL, "mcp"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=ENV, cwd=TMP,
                                  text=True, bufsize=1)
        self.n = 0
        self.call("initialize", {"protocolVersion": "2025-06-18"})

    def call(self, method, params):
        self.n += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n,
                                       "method": method,
                                       "params": params}) + "\n")
        self.p.stdin.flush()
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get("id") == self.n:
                return m

    def close(self):
        self.p.stdin.close()
        self.p.wait(60)


def cli_once(argv):
    t0 = time.perf_counter()
    p = subprocess.run([KL] + argv + ["--json"], capture_output=True,
                       env=ENV, cwd=TMP)
    dt = time.perf_counter() - t0
    assert p.returncode == 0, p.stderr
    return dt


def mcp_once(s, name, args):
    t0 = time.perf_counter()
    m = s.call("tools/call", {"name": name, "arguments": args})
    dt = time.perf_counter() - t0
    assert not m["result"]["isError"], m
    return dt


def interval(diffs, rounds=2000):
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(diffs, k=len(diffs)))
                  for _ in range(rounds))
    return meds[int(0.025 * rounds)], meds[int(0.975 * rounds)]


s = Session()
print("%-6s %5s %12s %12s %22s %8s" % ("verb", "pairs", "cli_ms", "mcp_ms",
                                       "overhead_ms [95% CI]", "ratio"))
for name, (argv, args) in WORK.items():
    cli_once(argv)  # warm the compile cache and the page cache
    mcp_once(s, name, args)
    cli, mcp = [], []
    for i in range(PAIRS):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for o in order:
            if o == 0:
                cli.append(cli_once(argv))
            else:
                mcp.append(mcp_once(s, name, args))
    diffs = [(m - c) * 1e3 for m, c in zip(mcp, cli)]
    lo, hi = interval(diffs)
    mc, mm = statistics.median(cli) * 1e3, statistics.median(mcp) * 1e3
    print("%-6s %5d %12.1f %12.1f %8.2f [%5.2f, %5.2f] %8.3f" % (
        name, PAIRS, mc, mm, statistics.median(diffs), lo, hi, mm / mc),
        flush=True)
s.close()
shutil.rmtree(TMP, ignore_errors=True)
