#!/usr/bin/env python3
"""kl run --proposer agent on a host case: an outside agent's kernels land
in the same records as the built-in proposers', the run decides.

  inbox     a kernel put before the run starts waits for it; kl propose
            --wait gets the verdict the run recorded (exit 0 ACCEPTED or
            REJECTED, 3 INCORRECT)
  mcp       kl mcp's propose tool hands over source text and waits
  resume    the run killed (SIGKILL) while it evaluates a taken kernel,
            then --resume: that kernel is proposed again as the same
            iteration, nothing lost, nothing twice
  stop      kl propose --stop ends it: stop_reason exhausted
  records   solutions.jsonl (proposer agent, iterations 1..n once each),
            memory.jsonl, iter_NNN folders, kl history and kl report
usage: test_agent.py KL SOURCE_DIR
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "mcp"))
from mcp_support import GOOD, WRONG  # noqa: E402
from support import FAILS, check, scratch, small_saxpy  # noqa: E402

KL, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
TMP, ENV = scratch(SRC, "kl-agent-test-")
# host_saxpy at 1M and 2M (the 16M shape's checks cost seconds of CPU)
CASE = small_saxpy(SRC, os.path.join(TMP, "host_saxpy"))
# correct, and slow enough that a kill lands mid-evaluation: 200 ms a call
# (a sleep, no CPU), and an evaluation makes more than ten calls (checks
# on three seeds at two shapes, then samples)
SLOW = GOOD.replace("void saxpy", "#include <time.h>\nvoid saxpy").replace(
    "  for (int i", "  struct timespec t = {0, 200000000};\n"
    "  nanosleep(&t, 0);\n  for (int i", 1)


def kl(*args, want=None):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=ENV, cwd=TMP, timeout=600)
    print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
    if want is not None:
        check(p.returncode == want, "kl %s exited %d, want %d: %s%s" % (
            " ".join(args), p.returncode, want, p.stdout[-500:],
            p.stderr[-500:]))
    return p


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def start_run(*extra):
    return subprocess.Popen(
        [KL, "run", CASE, "--proposer", "agent", "--no-profile",
         "--no-webhook", "--time-cap", "200", "--json"] + list(extra),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
        cwd=TMP, start_new_session=True)


def run_id():
    runs = sorted(os.listdir(os.path.join(CASE, "runs")))
    return runs[-1] if runs else None


# ---- a kernel put before the run starts, then the run
put = kl("propose", CASE, "--candidate", write("good.c", GOOD), "--memo",
         "the plain loop again", "--json", want=0)
first = json.loads(put.stdout)["name"]
run = start_run("--iterations", "10", "--patience", "10")
got = kl("propose", CASE, "--verdict", first, "--wait", "300", "--json")
rec = json.loads(got.stdout or "{}")
check(rec.get("iteration") == 1 and rec.get("memo") == "the plain loop again"
      and rec.get("verdict") in ("ACCEPTED", "REJECTED") and
      got.returncode == 0, "the first kernel's verdict: %s" % got.stdout)
got = kl("propose", CASE, "--candidate", write("wrong.c", WRONG), "--wait",
         "300", "--json", want=3)
check(json.loads(got.stdout or "{}").get("verdict") == "INCORRECT",
      "a wrong kernel: INCORRECT, exit 3: %s" % got.stdout)

# ---- the same through kl mcp's propose tool
mcp = subprocess.Popen([KL, "mcp"], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True, env=ENV, cwd=TMP)
mcp.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "propose", "arguments": {
                                "case": CASE, "candidate_source": GOOD +
                                "/* again */\n", "memo": "from mcp",
                                "wait_s": 300}}}) + "\n")
mcp.stdin.close()
reply = json.loads(mcp.stdout.readline() or "{}")
mcp.wait(60)
doc = reply.get("result", {}).get("structuredContent", {})
check(doc.get("iteration") == 3 and doc.get("memo") == "from mcp" and
      reply["result"].get("isError") is False,
      "mcp propose waits for the verdict: %s" % reply)

# ---- killed while it evaluates a taken kernel, then resumed
slow = json.loads(kl("propose", CASE, "--candidate", write("slow.c", SLOW),
                     "--memo", "slow", "--json", want=0).stdout)["name"]
rid = run_id()
taken = os.path.join(CASE, "runs", rid, "agent", "004-" + slow)
deadline = time.time() + 120
while time.time() < deadline and not os.path.exists(taken):
    time.sleep(0.05)
check(os.path.exists(taken), "the run took the slow kernel as iteration 4")
os.killpg(run.pid, signal.SIGKILL)
run.wait(30)
lines = [json.loads(x) for x in open(os.path.join(CASE, "solutions.jsonl"))]
check(not any(x["iteration"] == 4 for x in lines),
      "killed before iteration 4 was recorded (the kernel sleeps)")
run = start_run("--resume", rid)
got = kl("propose", CASE, "--verdict", slow, "--wait", "300", "--json")
rec = json.loads(got.stdout or "{}")
check(rec.get("iteration") == 4 and rec.get("memo") == "slow",
      "resumed: the taken kernel is iteration 4 again: %s" % got.stdout)

# ---- stop, and the records
kl("propose", CASE, "--stop", want=0)
out, err = run.communicate(timeout=300)
summary = json.loads(out or "{}")
check(summary.get("stop_reason") == "exhausted" and
      summary.get("proposer") == "agent" and summary.get("iterations") == 4,
      "the run ends at STOP: %s %s" % (out[-400:], err[-400:]))
lines = [json.loads(x) for x in open(os.path.join(CASE, "solutions.jsonl"))]
check([x["iteration"] for x in lines] == [0, 1, 2, 3, 4] and
      all(x["proposer"] == "agent" for x in lines[1:]),
      "solutions.jsonl: iterations 0..4 once each, proposer agent: %s" %
      [(x["iteration"], x["proposer"]) for x in lines])
memory = open(os.path.join(CASE, "memory.jsonl")).read().splitlines()
check(len(memory) >= 4, "memory.jsonl has the agent's attempts")
for n in range(1, 5):
    check(os.path.isdir(os.path.join(CASE, "runs", rid, "iter_%03d" % n)),
          "iter_%03d's folder" % n)
hist = json.loads(kl("history", CASE, "--json", want=0).stdout)
check(hist["runs"][-1]["proposer"] == "agent", "kl history: %s" % hist)
report = kl("report", CASE, want=0).stdout
check("agent" in report and "INCORRECT" in report,
      "kl report shows the agent run")

if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
print("ok")
