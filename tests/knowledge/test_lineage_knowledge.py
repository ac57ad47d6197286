#!/usr/bin/env python3
"""Lineage, the devlog, the two ledgers and the knowledge base, end to end
on the host backend (issue 49, parts 2 and 4).

A small host_matmul copy runs three scripted LLM iterations against the
fake server (tests/net/fake_llm.py with tests/run/replies): an acceptance,
a rejection and a wrong answer, so the parent chain is known:
000 <- 001 (ACCEPTED) <- 002 (REJECTED), 003 (INCORRECT). Then:
  lineage       kl history --lineage, text and JSON: the tree, diffs
  ledgers       --attempts has every line, --improvements the baseline
                and the acceptance only
  devlog        devlog.md has one entry, the accepted version's
  report        kl report draws the tree
  knowledge     kl knowledge add from 001 (an optimization, into the
                project's knowledge/) and 002 (an anti-pattern, --to);
                search by words, --kind, --rule, --language; show
  next run      its prompt has the devlog's entry and, under Prior art,
                the entry made from 001 with its evidence
  across runs   two runs of the same kernel are two trees; a run from the
                winner kl best wrote back continues it
  bad input     a front matter with an unknown key, and one that does not
                parse: path:line:column, exit 2
  old records   a GPU run recorded before (tests/report/fixtures): its
                tree, and an entry with the rules fired on the parent
  starter set   every installed entry loads, each with its evidence
usage: test_lineage_knowledge.py KL SOURCE_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import (FAILS, check, copy_case, fake_llm, scratch,  # noqa: E402
                     small_matmul)

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-lineage-test-")
ENV.pop("KERNLAB_KNOWLEDGE", None)


def kl(*args, env=None, want=0):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=env or ENV, timeout=600)
    print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
    if p.returncode != want:
        check(False, "kl %s exited %d, want %d\n%s%s" % (
            " ".join(args), p.returncode, want, p.stdout, p.stderr))
    return p


def read(path):
    with open(path) as f:
        return f.read()


srv, port, config = fake_llm(SRC, TMP, ENV, SRC + "/tests/run/replies",
                             "sk-fake-lineage-key")
LENV = dict(ENV, KL_CONFIG=config, ANTHROPIC_API_KEY="sk-fake-lineage-key")
try:
    case = small_matmul(SRC, os.path.join(TMP, "proj", "mm"))
    p = kl("run", case, "--json", "--iterations", "3", "--patience", "20",
           "--seed", "11", "--timeout", "6000", "--time-cap", "1500", "--hot",
           env=LENV)
    s = json.loads(p.stdout) if p.stdout.strip() else {}
    run1 = s.get("run", "?")
    sols = [json.loads(line) for line in read(case + "/solutions.jsonl")
            .splitlines()]
    verdicts = [r["verdict"] for r in sols]
    check(verdicts == ["BASELINE", "ACCEPTED", "REJECTED", "INCORRECT"],
          "scripted verdicts: %s" % verdicts)
    ids = ["%s/%03d" % (run1, i) for i in range(4)]

    # ---- lineage, text and JSON --------------------------------------------
    text = kl("history", case, "--lineage").stdout
    lines = text.splitlines()
    check(lines[0] == "run " + run1, "the tree names its run: %r" % lines[:1])
    check(lines[1].startswith(ids[0] + " BASELINE"), "the root is 000")
    check(lines[2].startswith("`-- " + ids[1] + " ACCEPTED"),
          "001 is the baseline's only child: %r" % lines[2:3])
    kids = [ln for ln in lines if ln.startswith("    |-- ") or
            ln.startswith("    `-- ")]
    check([k.split()[1] for k in kids] == ids[2:],
          "002 and 003 hang under 001: %r" % kids)
    check(re.search(r"\(\+\d+ -\d+\)", lines[2]) is not None,
          "the diff's size is shown: %r" % lines[2])
    doc = json.loads(kl("history", case, "--lineage", "--json").stdout)
    vs = {v["id"]: v for v in doc["versions"]}
    check(doc["roots"] == [ids[0]], "one root: %s" % doc["roots"])
    check(vs[ids[0]]["children"] == [ids[1]], "000's children")
    check(vs[ids[1]]["children"] == ids[2:], "001's children")
    check(all(vs[i]["parent"] == ids[1] for i in ids[2:]), "parents of 2, 3")
    check(vs[ids[1]]["diff"] == "runs/%s/iter_001/kernel.diff" % run1 and
          sum(vs[ids[1]]["diff_lines"].values()) > 0,
          "001's diff and its size: %s" % vs[ids[1]])
    check(vs[ids[1]]["memo"] and "i-k-j" in vs[ids[1]]["memo"],
          "001's memo: %r" % vs[ids[1]]["memo"])
    kl("history", case, "--lineage", "--run", "nope", want=2)
    kl("history", case, "--lineage", "--attempts", want=2)

    # ---- the two ledgers --------------------------------------------------------
    att = json.loads(kl("history", case, "--attempts", "--json").stdout)
    imp = json.loads(kl("history", case, "--improvements", "--json").stdout)
    check([e["id"] for e in att["entries"]] == ids, "attempts: every line")
    check([e["id"] for e in imp["entries"]] == ids[:2],
          "improvements: the baseline and the acceptance only")
    t = kl("history", case, "--attempts", "--run", run1).stdout
    check("INCORRECT" in t and "REJECTED" in t, "the attempt ledger's text")

    # ---- the devlog: accepted versions only -----------------------------------
    devlog = read(case + "/devlog.md")
    heads = re.findall(r"^## (\S+): ", devlog, re.M)
    check(heads == [ids[1]], "one devlog entry, 001's: %s" % heads)
    for part in ("- Parent: " + ids[0], "- What changed: ",
                 "- Correctness: 2 of 2 shapes checked, 2 correct",
                 "- Against the baseline: x", "| n128 |", "| n192 |"):
        check(part in devlog, "the devlog entry has %r" % part)

    # ---- the report draws the tree -------------------------------------------
    md = kl("report", case).stdout
    check("## Lineage" in md and "  - **1** ACCEPTED" in md and
          "    - **2** REJECTED" in md, "the markdown report's tree")
    html = kl("report", case, "-o", TMP + "/r.html").returncode == 0 and \
        read(TMP + "/r.html")
    check(html and "<h2>Lineage</h2>" in html and "<ul>" in html,
          "the HTML report's tree")

    # ---- knowledge: add, search, show -----------------------------------------
    # no $KERNLAB_KNOWLEDGE, no knowledge/ yet: beside the case's folder
    p = kl("knowledge", "add", case, "--from", run1 + "/1")
    opt = p.stdout.strip()
    check(opt.endswith("proj/knowledge/optimizations/host_matmul-%s-001.md"
                       % run1), "an acceptance is an optimization: %s" % opt)
    entry = read(opt) if os.path.exists(opt) else ""
    for part in ("id: host_matmul-%s-001\n" % run1, "language: c\n",
                 "  case: host_matmul\n", "  shapes: [n128, n192]\n",
                 "  speedup: ", "  run: %s\n" % run1, "  iter: 1\n",
                 "```diff\n", "Verdict ACCEPTED: "):
        check(part in entry, "the new entry has %r" % part)
    kb2 = TMP + "/kb2"
    p = kl("knowledge", "add", case, "--from", run1 + "/002", "--to", kb2,
           "--id", "matmul-rejected", "--json")
    check(json.loads(p.stdout or "{}").get("path") ==
          kb2 + "/anti-patterns/matmul-rejected.md", "a rejection: anti-pattern")
    kl("knowledge", "add", case, "--from", run1 + "/0", want=2)  # baseline
    kl("knowledge", "add", case, "--from", run1 + "/9", want=2)  # none
    kl("knowledge", "add", case, "--from", run1 + "/1", want=2)  # exists
    # a hand-written entry for another language, with a rule
    os.makedirs(TMP + "/proj/knowledge/optimizations", exist_ok=True)
    with open(TMP + "/proj/knowledge/optimizations/vec-loads.md", "w") as f:
        f.write("---\nid: vec-loads\ntitle: Vector loads\n"
                "rules: [poor_coalescing]\nlanguage: cuda\n---\n\nUse "
                "float4.\n")
    found = kl("knowledge", "search", "i-k-j", "--case", case).stdout
    check(("host_matmul-%s-001" % run1) in found, "search by words: %r" % found)
    j = json.loads(kl("knowledge", "search", "--case", case, "--rule",
                      "poor_coalescing", "--json").stdout)
    check("vec-loads" in [e["id"] for e in j["entries"]] and
          all("poor_coalescing" in e["rules"] for e in j["entries"]),
          "search --rule: %s" % [e["id"] for e in j["entries"]])
    j = json.loads(kl("knowledge", "search", "--case", case, "--language",
                      "c", "--kind", "optimization", "--json").stdout)
    check(("host_matmul-%s-001" % run1) in [e["id"] for e in j["entries"]] and
          "vec-loads" not in [e["id"] for e in j["entries"]],
          "search --language c --kind optimization: %s" % j)
    env2 = dict(ENV, KERNLAB_KNOWLEDGE=kb2)
    j = json.loads(kl("knowledge", "search", "--case", case, "--kind",
                      "anti-pattern", "--json", env=env2).stdout)
    check("matmul-rejected" in [e["id"] for e in j["entries"]],
          "$KERNLAB_KNOWLEDGE is searched")
    shown = kl("knowledge", "show", "vec-loads", "--case", case).stdout
    check("Use float4." in shown, "show prints the file")
    kl("knowledge", "show", "nope", "--case", case, want=2)

    # ---- the next run's prompt: the devlog and Prior art ---------------------
    p = kl("run", case, "--json", "--iterations", "1", "--seed", "11",
           "--timeout", "3000", "--time-cap", "600", "--hot", env=LENV)
    run2 = (json.loads(p.stdout) if p.stdout.strip() else {}).get("run", "?")
    ppath = "%s/runs/%s/iter_001/prompt.txt" % (case, run2)
    prompt = read(ppath) if os.path.exists(ppath) else ""
    check("## This case's devlog" in prompt and ("## %s: " % ids[1]) in prompt,
          "the devlog reaches the next prompt")
    art = prompt.split("## Prior art (the knowledge base)\n", 1)
    check(len(art) == 2, "the next prompt has a Prior art section")
    art = art[1] if len(art) == 2 else ""
    check(("host_matmul-%s-001" % run1) in art and
          "Evidence: host_matmul (n128, n192) x" in art and
          ("from %s iter 1" % run1) in art,
          "Prior art shows the entry with its evidence: %r" % art[:600])
    check("vec-loads" not in art, "a cuda entry is not shown for a C case")
    doc = json.loads(kl("history", case, "--lineage", "--json").stdout)
    check(len(doc["roots"]) == 2, "across runs: two roots (same kernel, "
          "no winner written back): %s" % doc["roots"])
    # the winner written back (kl best), a run from it: that run's baseline
    # continues the winner, and its tree hangs under it
    kl("best", case, "-o", TMP + "/best.c")
    shutil.copy(TMP + "/best.c", case + "/kernel.c")
    p = kl("run", case, "--json", "--proposer", "tune", "--iterations", "1",
           "--time-cap", "300", "--hot")
    run3 = (json.loads(p.stdout) if p.stdout.strip() else {}).get("run", "?")
    doc = json.loads(kl("history", case, "--lineage", "--json").stdout)
    vs = {v["id"]: v for v in doc["versions"]}
    b3 = vs.get(run3 + "/000", {})
    check(b3.get("continues") == ids[1] and
          b3.get("id") in vs[ids[1]]["children"] and
          b3.get("id") not in doc["roots"],
          "a run from the written-back winner continues it: %s" % b3)
    text = kl("history", case, "--lineage").stdout
    check(("%s/000 BASELINE   continues %s" % (run3, ids[1])) in text,
          "the text tree says so")

    # ---- bad input: located errors --------------------------------------------
    bad = TMP + "/bad/optimizations"
    os.makedirs(bad)
    with open(bad + "/b.md", "w") as f:
        f.write("---\nid: b\ntitle: B\nspeedup_x: 3\n---\nbody\n")
    p = kl("knowledge", "search", "--case", case,
           env=dict(ENV, KERNLAB_KNOWLEDGE=TMP + "/bad"), want=2)
    check(("%s/b.md:4:1: unknown key 'speedup_x'" % bad) in p.stderr,
          "an unknown key, located: %r" % p.stderr)
    with open(bad + "/b.md", "w") as f:
        f.write("---\nid: b\ntitle: B\nrules: [a, b\n---\n")
    p = kl("knowledge", "search", "--case", case,
           env=dict(ENV, KERNLAB_KNOWLEDGE=TMP + "/bad"), want=2)
    check(re.search(re.escape(bad) + r"/b.md:[45]:\d+: ", p.stderr),
          "a front matter that does not parse, located: %r" % p.stderr)
    with open(bad + "/b.md", "w") as f:
        f.write("---\nid: b\ntitle: B\n")
    p = kl("knowledge", "search", "--case", case,
           env=dict(ENV, KERNLAB_KNOWLEDGE=TMP + "/bad"), want=2)
    check("b.md:4:1: the front matter opened on line 1 is never closed"
          in p.stderr, "an unclosed front matter: %r" % p.stderr)
    # a run with a broken knowledge base stops before it spends anything
    p = kl("run", case, "--iterations", "1", "--time-cap", "300",
           env=dict(LENV, KERNLAB_KNOWLEDGE=TMP + "/bad"), want=2)
    check("b.md:4:1:" in p.stderr, "kl run reports it: %r" % p.stderr[-300:])
finally:
    srv.kill()

# ---- records written before this view existed (gemm_f32 on an H200) ---------
gpu = copy_case(SRC, "gemm_f32", TMP + "/gemm_f32")
fixture = SRC + "/tests/report/fixtures/gemm_h200"
shutil.copytree(fixture + "/runs", gpu + "/runs")
shutil.copy(fixture + "/solutions.jsonl", gpu)
doc = json.loads(kl("history", gpu, "--lineage", "--json").stdout)
vs = {v["id"].split("/")[1]: v for v in doc["versions"]}
check(sorted(vs) == ["000", "001", "002"] and
      vs["000"]["children"] == [vs["001"]["id"]] and
      vs["001"]["children"] == [vs["002"]["id"]] and
      vs["002"]["verdict"] == "REJECTED",
      "an older run's lineage: %s" % doc)
p = kl("knowledge", "add", gpu, "--from", vs["001"]["id"], "--to",
       TMP + "/kb3")
entry = read(p.stdout.strip()) if p.stdout.strip() else ""
check("rules: [far_from_roofline, low_waves_per_sm, near_peak_compute, "
      "poor_coalescing, stall_long_scoreboard]" in entry or
      ("rules: [" in entry and "poor_coalescing" in entry),
      "an entry's rules are those fired on its parent: %r" % entry[:400])
check("card: NVIDIA H200\n" in entry and "language: cuda\n" in entry,
      "an entry's card and language: %r" % entry[:400])

# ---- the installed starter set loads, every entry with evidence ---------------
j = json.loads(kl("knowledge", "search", "--json").stdout)
starter = [e for e in j["entries"]
           if e["path"].startswith(SRC + "/share/kernlab/knowledge/")]
check(len(starter) >= 5, "the starter set: %d entries" % len(starter))
for e in starter:
    if e["kind"] != "language":
        check(e["evidence"]["case"] and e["evidence"]["speedup"],
              "%s has its evidence" % e["id"])

if FAILS:
    print("%d failure(s)" % len(FAILS))
    sys.exit(1)
print("lineage, devlog, ledgers and knowledge tests passed")
