#!/usr/bin/env python3
"""Every kl verb given bad input: wrong arguments, a path that does not
exist, an unreadable file, a folder where a file is expected, a read-only
case folder. Each must exit 2 with a one-line error (an optional `usage:`
line after it), never crash, and leave nothing half-written.
usage: bad_input.py KL SOURCE_DIR

File permissions mean nothing to root: as root, the permission cases run
as `nobody` through setpriv (util-linux)."""
import os
import shutil
import subprocess
import sys
import tempfile

KL, SRC = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="kl-bad-input-")
os.chmod(TMP, 0o755)
CACHE = os.path.join(TMP, "cache")
os.makedirs(CACHE)
os.chmod(CACHE, 0o777)
ENV = dict(os.environ, KERNLAB_SHARE_DIR=SRC + "/share/kernlab", NO_COLOR="1",
           KERNLAB_CACHE_DIR=CACHE, KL_CONFIG="/dev/null", HOME=TMP)
ROOT = os.geteuid() == 0
FAILS = []


def as_user():
    """argv prefix that drops root, or [] when not root."""
    if not ROOT:
        return []
    if not shutil.which("setpriv"):
        return None
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def run(argv, user=False):
    prefix = as_user() if user else []
    p = subprocess.run(prefix + [KL] + argv, env=ENV, capture_output=True,
                       text=True, timeout=300, cwd=TMP)
    return p.returncode, p.stdout, p.stderr


def expect2(argv, what, user=False, mentions=None):
    rc, out, err = run(argv, user)
    lines = [l for l in err.splitlines() if l.strip()]
    name = f"kl {' '.join(argv)} ({what})"
    problems = []
    if rc != 2:
        problems.append(f"exit {rc}, want 2")
    if rc < 0 or rc > 3:
        problems.append("crashed")
    if not lines or not lines[0].startswith("kl"):
        problems.append("no error line")
    elif len(lines) > 1 and not (
            lines[1].startswith("usage:") and
            all(l.startswith(" ") for l in lines[2:])):
        problems.append(f"{len(lines)} lines of error")
    if mentions and lines and mentions not in lines[0]:
        problems.append(f"the error does not name {mentions}")
    if problems:
        FAILS.append(name)
        print(f"FAIL: {name}: {'; '.join(problems)}\n  {err.strip()[:400]}")
    return rc, out, err


def snapshot(folder):
    out = {}
    for d, _, files in os.walk(folder):
        for f in files:
            p = os.path.join(d, f)
            out[p] = open(p, "rb").read()
    return out


case = os.path.join(TMP, "case")
shutil.copytree(SRC + "/cases/host_saxpy", case,
                ignore=shutil.ignore_patterns("runs", "*.jsonl", "*.csv"))
missing = os.path.join(TMP, "no", "such")
folder = os.path.join(TMP, "a_folder")
os.makedirs(folder)
unreadable = os.path.join(TMP, "unreadable.c")
with open(unreadable, "w") as f:
    f.write("void saxpy(float *y, const float *x, float a, int n) {}\n")
os.chmod(unreadable, 0)
obs = SRC + "/tests/observe/fixtures/app_h200.json"

# wrong arguments: an unknown option, a missing value, an extra positional
VERBS = ["check", "new", "harness", "bench", "compare", "profile", "rules",
         "prompt", "run", "best", "report", "history", "webhook", "observe",
         "case", "export"]
for v in VERBS:
    expect2([v, "--no-such-option"], "unknown option")
expect2(["frobnicate"], "unknown verb")
for v in ["check", "harness", "bench", "prompt", "run", "best", "history",
          "report"]:
    expect2([v, case, case], "two cases")
    expect2([v], "no case") if v not in ("check",) else None
expect2(["bench", case, "--shape"], "option without its value")
expect2(["compare", case], "no candidate")
expect2(["run", case, "--iterations", "many"], "not a number")
expect2(["bench", case, "--seed", "-3x"], "not a number")
# one reading of --seed for every verb: strtoull once took "1e3" as 1
expect2(["run", case, "--seed", "1e3"], "a seed is digits",
        mentions="not '1e3'")
expect2(["check", case, "--tolerance", "--seed", "18446744073709551616"],
        "a seed beyond 2^64")
expect2(["check", case, "--seed", "5"], "--seed without --tolerance",
        mentions="--tolerance")
expect2(["bench", case, "--launch", "graf"], "no such launch mode",
        mentions="stream, graph or both")
expect2(["bench", SRC + "/cases/host_saxpy", "--launch", "graph"],
        "a graph launch of a host case", mentions="CUDA graph")
expect2(["compare", SRC + "/cases/host_saxpy", "--candidate", case + "/kernel.c",
         "--launch", "both"], "both launches of a host case",
        mentions="launch both replays")

expect2(["knowledge", "--no-such-option"], "unknown sub-verb")
expect2(["knowledge", "search", "--no-such-option"], "unknown option")
expect2(["knowledge", "add", case], "no --from")
expect2(["knowledge", "add", case, "--from", "nonsense"], "a bad --from")
expect2(["knowledge", "show"], "no id")
expect2(["history", case, "--lineage", "--run"], "option without its value")
expect2(["history", case, "--attempts", "--improvements"], "two views")

# a path that does not exist
for v in ["check", "harness", "bench", "prompt", "run", "best", "history",
          "report", "rules", "profile"]:
    expect2([v, missing], "missing case", mentions=missing)
expect2(["compare", case, "--candidate", missing], "missing candidate",
        mentions=missing)
expect2(["harness", case, "--candidate", missing], "missing candidate",
        mentions=missing)
expect2(["rules", "--metrics", missing], "missing metrics", mentions=missing)
expect2(["rules", "--lint", missing], "missing rule file", mentions=missing)
expect2(["observe", "--show", missing], "missing observation",
        mentions=missing)
expect2(["case", "from-observation", missing, "--source", missing,
         "--entry", "f", "-o", os.path.join(TMP, "new_case")],
        "missing observation", mentions=missing)
expect2(["export", case, "--to", missing], "missing export target",
        mentions=missing)
expect2(["knowledge", "add", missing, "--from", "r/1"], "missing case",
        mentions=missing)
expect2(["new", "x", "--template", "no_such_template", "--dir", TMP],
        "unknown template")

# a folder where a file is expected
expect2(["compare", case, "--candidate", folder], "folder as candidate",
        mentions=folder)
expect2(["harness", case, "--candidate", folder], "folder as candidate",
        mentions=folder)
expect2(["rules", "--metrics", folder], "folder as metrics", mentions=folder)
expect2(["rules", "--lint", folder], "folder as rule file", mentions=folder)
expect2(["observe", "--show", folder], "folder as observation",
        mentions=folder)
expect2(["export", case, "--to", folder], "folder as export target",
        mentions=folder)
expect2(["check", folder], "folder without case.yaml", mentions=folder)
expect2(["harness", case, "-o", folder], "folder as output",
        mentions=folder)

# unreadable files and a read-only case folder (as nobody when root)
if as_user() is None:
    print("skipped: running as root without setpriv")
else:
    expect2(["compare", case, "--candidate", unreadable], "unreadable",
            user=True, mentions=unreadable)
    expect2(["harness", case, "--candidate", unreadable], "unreadable",
            user=True, mentions=unreadable)
    ro = os.path.join(TMP, "ro_case")
    shutil.copytree(case, ro)
    os.chmod(ro, 0o555)
    if not ROOT:
        pass
    before = snapshot(ro)
    expect2(["run", ro, "--iterations", "1"], "read-only case folder",
            user=True, mentions=ro)
    expect2(["check", ro + "/nope.yaml"], "missing file in a case", user=True)
    unread_case = os.path.join(TMP, "unread_case")
    shutil.copytree(case, unread_case)
    os.chmod(os.path.join(unread_case, "case.yaml"), 0)
    expect2(["check", unread_case], "unreadable case.yaml", user=True,
            mentions="case.yaml")
    expect2(["new", "y", "--template", "host", "--dir", ro],
            "new case in a read-only folder", user=True, mentions=ro)
    if snapshot(ro) != before:
        FAILS.append("read-only case folder changed")
        print("FAIL: the read-only case folder changed")

# a ledger with a broken line in the middle (not a torn tail, which the
# next append cuts): its place, what is wrong with it, and what to do
led = os.path.join(TMP, "ledger_case")
shutil.copytree(SRC + "/cases/host_saxpy", led,
                ignore=shutil.ignore_patterns("runs", "*.jsonl", "*.csv"))
with open(os.path.join(led, "solutions.jsonl"), "w") as f:
    f.write('{"v": 1, "id": "a"}\n{"v": 1, "id": "b",\n{"v": 1}\n')
rc, out, err = run(["best", led])
first = (err.strip().splitlines() or [""])[0]
if not (rc == 2 and first.startswith(led + "/solutions.jsonl:2:") and
        "not valid JSON" in first and "--resume" in first and
        "continue" not in first):
    FAILS.append("broken ledger line")
    print(f"FAIL: a broken ledger line: exit {rc}: {err.strip()[:400]}")

shutil.rmtree(TMP, ignore_errors=True)
if FAILS:
    print(f"{len(FAILS)} failure(s)")
    sys.exit(1)
print("ok")
