#!/usr/bin/env python3
"""kl mcp driven by a real MCP client: the official `mcp` Python SDK from
PyPI, over its stdio transport, through a whole session on a case (CI:
host_saxpy, C on the host, and saxpy_py, Python on the host; the GPU
machine: vector_add, CUDA, and softmax_torch, PyTorch on the device):
initialize, list the tools, check, bench the baseline (with progress),
compare a candidate given as source text (its document equal to kl
compare --json's on the kept file), a wrong candidate (INCORRECT: a result
with its verdict, not an error), a bad argument (a tool error), and the
cancellation of a call that never returns (the SDK's own cancel: the
call's processes end and the session goes on).

Run it with a Python that has the SDK (scripts/deps.sh --test puts one in
.mcp-venv/; run_client.sh picks it). Without the SDK it fails, unless
KL_MCP_SDK_MISSING_OK=1 says that the SDK cannot be installed here: then
it exits 77 (skipped) saying so.
usage: test_mcp_client.py KL SOURCE_DIR [CASE]   (default host_saxpy; a
device case exits 77, skipped, where no device answers)
"""
import json
import os
import subprocess
import sys
import time

from mcp_support import (FAILS, alive, case_profile, check, cmdline,
                         copy_any_case,
                         descendants, is_worker, scratch,
                         workers_and_children)

try:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError as e:
    print("the MCP Python SDK is not importable by %s: %s" % (sys.executable, e))
    if os.environ.get("KL_MCP_SDK_MISSING_OK") == "1":
        print("skipped: KL_MCP_SDK_MISSING_OK=1 (the SDK cannot be installed "
              "here; scripts/deps.sh --test installs it)")
        sys.exit(77)
    print("install it: scripts/deps.sh --test (pip install mcp, Python >= 3.10)")
    sys.exit(1)

KL, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
CASE_NAME = sys.argv[3] if len(sys.argv) > 3 else "host_saxpy"
REL, SHAPE, GOOD, WRONG, FOREVER = case_profile(SRC, CASE_NAME)
TMP, ENV = scratch(SRC, "kl-mcp-client-")
CASE = copy_any_case(SRC, REL, TMP)
if CASE_NAME in ("vector_add", "softmax_torch"):
    probe = subprocess.run([KL, "bench", CASE, "--shape", SHAPE,
                            "--time-cap-ms", "100", "--json"],
                           capture_output=True, text=True, env=ENV)
    if probe.returncode != 0:
        print("skipped: %s does not run here (%s)" % (
            CASE_NAME, probe.stderr.strip()[:300]))
        sys.exit(77)


def structured(result):
    return getattr(result, "structured_content",
                   getattr(result, "structuredContent", None))


def is_error(result):
    return getattr(result, "is_error", getattr(result, "isError", None))


def first_text(result):
    return result.content[0].text if result.content else ""


async def session_body(session, server_pid):
    init = await session.initialize()
    version = getattr(init, "protocol_version",
                      getattr(init, "protocolVersion", None))
    check(version in ("2025-06-18", "2025-03-26", "2024-11-05"),
          "negotiated version: %s" % version)
    tools = await session.list_tools()
    names = {t.name for t in tools.tools}
    check({"check", "bench", "compare", "profile", "best", "history",
           "report", "rules", "prompt", "observe", "new", "harness",
           "case_from_observation", "case_from_kernelbench"} <= names,
          "tools: %s" % sorted(names))

    r = await session.call_tool("check", {"case": CASE})
    check(not is_error(r) and structured(r)["ok"] is True,
          "check: %s" % first_text(r))

    steps = []

    async def progress(value, total, message):
        steps.append((value, message))

    r = await session.call_tool("bench", {"case": CASE, "shape": SHAPE,
                                          "time_cap_ms": 200},
                                progress_callback=progress)
    doc = structured(r)
    check(not is_error(r) and doc["verdict"] == "OK" and
          doc["candidate"] == "baseline", "bench: %s" % first_text(r))
    check(len(steps) >= 3 and any("timing" in (m or "") for _, m in steps),
          "bench's progress: %s" % steps)

    r = await session.call_tool("compare", {
        "case": CASE, "shape": SHAPE, "time_cap_ms": 200, "seed": 7,
        "candidate_source": GOOD})
    doc = structured(r)
    check(not is_error(r) and doc["verdict"] == "OK" and
          doc["mode"] == "compare", "compare of text: %s" % first_text(r))
    kept = [f for f in os.listdir(os.path.join(CASE, "candidates"))
            if f.startswith("mcp-")]
    check(len(kept) == 1, "the text is kept under the case: %s" % kept)
    if kept and doc:
        cli = subprocess.run(
            [KL, "compare", CASE, "--candidate",
             os.path.join(CASE, "candidates", kept[0]), "--shape", SHAPE,
             "--time-cap-ms", "200", "--seed", "7", "--json"],
            capture_output=True, text=True, env=ENV, cwd=TMP)
        other = json.loads(cli.stdout)
        check(set(other) == set(doc) and other["candidate"] ==
              doc["candidate"] and other["seeds"] == doc["seeds"],
              "compare's document has the CLI's form, candidate and seeds")

    r = await session.call_tool("compare", {
        "case": CASE, "shape": SHAPE, "candidate_source": WRONG})
    doc = structured(r)
    check(not is_error(r) and doc["verdict"] == "INCORRECT" and
          "rejected" in first_text(r),
          "a wrong candidate is rejected: %s" % first_text(r))

    r = await session.call_tool("bench", {"case": CASE, "seed": -3})
    check(is_error(r) and "'seed'" in first_text(r),
          "a bad argument is a tool error: %s" % first_text(r))
    r = await session.call_tool("check", {"case": TMP + "/no_such_case"})
    check(is_error(r) and "no_such_case" in first_text(r),
          "a missing case is a tool error naming it: %s" % first_text(r))

    # the SDK's own cancellation: the task awaiting the call is cancelled,
    # the SDK sends notifications/cancelled
    before = workers_and_children(server_pid, KL)
    seen, named = [], []
    with anyio.move_on_after(120):
        async with anyio.create_task_group() as tg:
            async def long_call():
                await session.call_tool("bench", {
                    "case": CASE, "shape": SHAPE, "timeout_ms": 600000,
                    "candidate_source": FOREVER})
            tg.start_soon(long_call)
            deadline = time.time() + 120
            while time.time() < deadline:
                seen = sorted(workers_and_children(server_pid, KL) - before)
                if any(is_worker(p) for p in seen if alive(p)):
                    await anyio.sleep(1)  # into the never-ending call
                    seen = sorted(workers_and_children(server_pid, KL) - before)
                    break
                await anyio.sleep(0.2)
            named = [(p, cmdline(p)[:200]) for p in seen]
            tg.cancel_scope.cancel()
    print("the long call's processes:", named, flush=True)
    check(len(seen) >= 2 and any(b"kl-worker" in c or b"pyworker" in c
                                 for _, c in named),
          "the long call ran kl and its worker: %s" % named)
    t0 = time.time()
    while time.time() - t0 < 30 and any(alive(p) for p in seen):
        await anyio.sleep(0.1)
    check(not any(alive(p) for p in seen),
          "cancelled: the call's processes ended: %s" %
          [p for p in seen if alive(p)])
    await session.send_ping()
    r = await session.call_tool("history", {"case": CASE})
    check(not is_error(r) and "runs" in structured(r),
          "the session goes on after a cancellation: %s" % first_text(r))


async def main():
    params = StdioServerParameters(command=KL, args=["mcp"], env=ENV, cwd=TMP)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            server_pid = [p for p in descendants(os.getpid())
                          if open("/proc/%d/cmdline" % p, "rb").read()
                          .split(b"\0")[:2] == [KL.encode(), b"mcp"]]
            check(len(server_pid) == 1, "one kl mcp: %s" % server_pid)
            await session_body(session, server_pid[0] if server_pid else 0)


anyio.run(main)
if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
print("ok")
