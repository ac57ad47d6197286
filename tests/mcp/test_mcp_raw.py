#!/usr/bin/env python3
"""kl mcp spoken to in raw JSON-RPC lines, no MCP library: the protocol's
error paths and the server's own behaviour on a host case.

  errors     not JSON (-32700), not a request (-32600: an array, no
             jsonrpc, a bad id), an unknown method (-32601), bad params
             (-32602: no tool name, an unknown tool, arguments not an
             object); each gets its reply and the server keeps serving
  versions   initialize answers the client's protocol version when it
             knows it, else its newest
  tools      tool errors (unknown or missing arguments, a case that does
             not exist: the located message) are results with isError
  progress   a bench with a progressToken sends increasing progress
  cancel     a call that never returns is cancelled: no reply for it, its
             kl and worker processes end, ping is answered meanwhile, and
             the next call works; a queued call cancelled never runs
  eof        the calls asked for before the input ends are answered
usage: test_mcp_raw.py KL SOURCE_DIR
"""
import json
import os
import select
import subprocess
import sys
import time

from mcp_support import (FAILS, FOREVER, GOOD, alive, check, descendants,
                         saxpy_case, scratch)

KL, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
TMP, ENV = scratch(SRC, "kl-mcp-raw-")
CASE = saxpy_case(SRC, TMP)


class Server:
    def __init__(self):
        self.p = subprocess.Popen([KL, "mcp"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=ENV, cwd=TMP)
        self.buf = b""

    def send(self, obj):
        line = obj if isinstance(obj, str) else json.dumps(obj)
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()

    def read(self, timeout=120):
        """The next message, or None after timeout seconds."""
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.p.stdout], [], [],
                                              left)[0]:
                return None
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def reply(self, want_id, timeout=120, seen=None):
        """The reply to want_id; notifications before it go to seen."""
        while True:
            m = self.read(timeout)
            if m is None or m.get("id") == want_id and "method" not in m:
                return m
            if seen is not None:
                seen.append(m)

    def request(self, rid, method, params=None, timeout=120, seen=None):
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.reply(rid, timeout, seen)


def error_code(m):
    return m and m.get("error", {}).get("code")


s = Server()
init = s.request(1, "initialize", {"protocolVersion": "2024-11-05",
                                   "capabilities": {},
                                   "clientInfo": {"name": "raw", "version": "0"}})
check(init and init["result"]["protocolVersion"] == "2024-11-05",
      "initialize answers 2024-11-05: %s" % init)
s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
unknown_version = s.request(2, "initialize", {"protocolVersion": "1999-01-01"})
check(unknown_version and
      unknown_version["result"]["protocolVersion"] == "2025-06-18",
      "an unknown version is answered with the newest: %s" % unknown_version)

# ---- JSON-RPC errors: each answered, the server goes on
s.send("{not json")
m = s.read()
check(error_code(m) == -32700 and m["id"] is None, "not JSON: %s" % m)
s.send('{"jsonrpc": "2.0", "id": 5, "method": "ping"} trailing')
m = s.read()
check(error_code(m) == -32700, "trailing bytes: %s" % m)
for bad in ('[{"jsonrpc": "2.0", "id": 3, "method": "ping"}]',
            '{"id": 3, "method": "ping"}', '7',
            '{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}',
            '{"jsonrpc": "2.0", "id": 4, "method": 12}'):
    s.send(bad)
    m = s.read()
    check(error_code(m) == -32600, "%s: want -32600, got %s" % (bad, m))
m = s.request(10, "resources/list")
check(error_code(m) == -32601 and m["id"] == 10, "unknown method: %s" % m)
m = s.request(11, "tools/call", {"arguments": {}})
check(error_code(m) == -32602, "tools/call without a name: %s" % m)
m = s.request(12, "tools/call", {"name": "no_such_tool"})
check(error_code(m) == -32602, "unknown tool: %s" % m)
m = s.request(13, "tools/call", {"name": "check", "arguments": [1]})
check(error_code(m) == -32602, "arguments not an object: %s" % m)
m = s.request("str-id", "ping")
check(m and m.get("result") == {} and m["id"] == "str-id", "ping: %s" % m)

# ---- tools
listed = s.request(20, "tools/list")
names = [t["name"] for t in listed["result"]["tools"]]
for want in ("check", "new", "harness", "bench", "compare", "profile",
             "rules", "prompt", "best", "history", "report", "observe",
             "case_from_observation", "case_from_kernelbench", "propose",
             "proposal_verdict", "propose_stop"):
    check(want in names, "tools/list lacks %s" % want)
for t in listed["result"]["tools"]:
    sch = t["inputSchema"]
    check(sch["type"] == "object" and sch["additionalProperties"] is False
          and all(r in sch["properties"] for r in sch["required"]),
          "%s's schema: %s" % (t["name"], sch))


def call(rid, name, args, **kw):
    m = s.request(rid, "tools/call", {"name": name, "arguments": args}, **kw)
    check(m is not None and "result" in m, "%s: no result: %s" % (name, m))
    return (m or {}).get("result", {})


r = call(21, "check", {"case": CASE, "bogus": 1})
check(r.get("isError") is True and
      "unknown argument 'bogus'" in r["content"][0]["text"],
      "unknown argument: %s" % r)
r = call(22, "compare", {"case": CASE})
check(r.get("isError") is True and "candidate" in r["content"][0]["text"],
      "compare without a candidate: %s" % r)
r = call(23, "bench", {"case": CASE, "seed": "seven"})
check(r.get("isError") is True and "'seed'" in r["content"][0]["text"],
      "seed of the wrong type: %s" % r)
bad_case = os.path.join(TMP, "bad_case")
os.makedirs(bad_case)
with open(os.path.join(bad_case, "case.yaml"), "w") as f:
    f.write("kernlab: 1\nname: bad\nbackend: host\nkernel: {source: k.c, "
            "entry: f}\nblok: 3\n")
r = call(24, "check", {"case": bad_case})
text = r.get("content", [{}])[0].get("text", "")
check(r.get("isError") is True and text.startswith(bad_case + "/case.yaml:")
      and text.count(":") >= 3, "a bad case's located message: %s" % r)
r = call(25, "check", {"case": CASE})
check(r.get("isError") is False and r["structuredContent"]["ok"] is True,
      "check: %s" % r)
cli = subprocess.run([KL, "check", CASE, "--json"], capture_output=True,
                     text=True, env=ENV, cwd=TMP)
check(json.loads(cli.stdout) == r.get("structuredContent"),
      "check's structuredContent is kl check --json's document")
for rid, seed in ((26, 12345), (27, 18446744073709551557)):  # and > 2^63
    r = call(rid, "check", {"case": CASE, "tolerance": True, "seed": seed})
    check(r.get("isError") is False and
          r["structuredContent"].get("tolerance", {}).get("seed") == seed,
          "check with tolerance and seed %d: %s" % (seed, str(r)[:400]))

# ---- progress
seen = []
m = s.request(30, "tools/call", {
    "name": "bench", "_meta": {"progressToken": "tok"},
    "arguments": {"case": CASE, "shape": "1M", "time_cap_ms": 100,
                  "candidate_source": GOOD}}, seen=seen)
progress = [n["params"] for n in seen
            if n.get("method") == "notifications/progress"]
check(m and m["result"]["structuredContent"]["verdict"] == "OK",
      "bench of source text: %s" % m)
check(len(progress) >= 3 and all(p["progressToken"] == "tok"
                                  for p in progress),
      "bench sent progress: %s" % progress)
check([p["progress"] for p in progress] ==
      sorted(set(p["progress"] for p in progress)),
      "progress increases: %s" % progress)
check(any("checks" in p.get("message", "") for p in progress),
      "a progress message names the checks phase: %s" % progress)
kept = [f for f in os.listdir(os.path.join(CASE, "candidates"))
        if f.startswith("mcp-") and f.endswith(".c")]
check(len(kept) == 1, "the source text is kept as candidates/mcp-*.c: %s"
      % kept)

# ---- cancellation of a call that never returns
s.send({"jsonrpc": "2.0", "id": 40, "method": "tools/call", "params": {
    "name": "bench", "arguments": {"case": CASE, "shape": "1M",
                                   "timeout_ms": 600000,
                                   "candidate_source": FOREVER}}})
under = []
deadline = time.time() + 120
while time.time() < deadline and not any(
        "kl-worker" in open("/proc/%d/cmdline" % p, "rb").read().decode(
            errors="replace") for p in under if alive(p)):
    time.sleep(0.2)
    under = descendants(s.p.pid)
check(len(under) >= 2, "the call runs kl and its worker: %s" % under)
print("the long call's processes:", under, flush=True)
pong = s.request(41, "ping", timeout=10)
check(pong and pong.get("result") == {}, "ping while a call runs: %s" % pong)
t0 = time.time()
s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 40, "reason": "test"}})
while time.time() - t0 < 20 and any(alive(p) for p in under):
    time.sleep(0.1)
check(not any(alive(p) for p in under),
      "cancelled: every process of the call ended: %s" %
      [p for p in under if alive(p)])
after = call(42, "check", {"case": CASE})
check(after.get("isError") is False, "a call after the cancellation works")

# a queued call cancelled before its turn never runs: neither gets a reply
s.send({"jsonrpc": "2.0", "id": 43, "method": "tools/call", "params": {
    "name": "bench", "arguments": {"case": CASE, "shape": "1M",
                                   "timeout_ms": 600000,
                                   "candidate_source": FOREVER}}})
s.send({"jsonrpc": "2.0", "id": 44, "method": "tools/call", "params": {
    "name": "check", "arguments": {"case": CASE}}})
s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 44}})
time.sleep(1)
s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 43}})
before_ping = []
m = s.request(45, "ping", timeout=30, seen=before_ping)
check(m and m.get("id") == 45 and not before_ping,
      "after two cancellations the next message is the ping's reply, no "
      "reply to 43 or 44: %s, %s" % (before_ping, m))

# ---- the input's end: queued calls are answered, then the server exits
s.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {
    "name": "history", "arguments": {"case": CASE}}})
s.p.stdin.close()
rest = []
while True:
    m = s.read(60)
    if m is None:
        break
    rest.append(m)
check([m.get("id") for m in rest] == [50],
      "after the input's end: the queued call only, no reply to the "
      "cancelled one: %s" % rest)
check(s.p.wait(30) == 0, "kl mcp exits 0 at the input's end")

if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
print("ok")
