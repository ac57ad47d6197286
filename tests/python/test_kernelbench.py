#!/usr/bin/env python3
"""kl case from-kernelbench on the host (ctest label unit; the GPU part is in
test_pyworker_gpu.py): each bundled problem (bench/kernelbench/problems)
becomes a case folder that loads, with Model.forward's inputs as params, one
output, the module constants as the shape's values and KernelBench's
tolerance; a forward parameter with a default is an input only where
get_inputs() gives it; the prompt offers ModelNew; files that are not
KernelBench problems are exit 2 at their line and column; an existing folder
is kept.
usage: test_kernelbench.py KL SOURCE_DIR
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

KL, SRC = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="kl-kernelbench-")
ENV = dict(os.environ, KERNLAB_CACHE_DIR=os.path.join(TMP, "cache"),
           KL_CONFIG=os.path.join(TMP, "none.yaml"))
with open(ENV["KL_CONFIG"], "w") as f:
    f.write("# no llm\n")
FAILS = []


def check(ok, what):
    print("%s: %s" % ("ok" if ok else "FAIL", what), flush=True)
    if not ok:
        FAILS.append(what)


def kl(*args):
    return subprocess.run([KL] + list(args), capture_output=True, text=True,
                          env=ENV, timeout=120)


WANT = {"1_relu": (["x"], "batch_size=32 dim=131072"),
        "2_softmax_rows": (["x"], "rows=4096 cols=2048"),
        "3_rms_norm": (["x"], "batch_size=16 features=64 length=8192 "
                              "eps=1e-05"),
        "4_matmul_square": (["A", "B"], "N=2048"),
        "5_layer_norm": (["x"], "rows=8192 features=1024")}
problems = sorted(glob.glob(SRC + "/bench/kernelbench/problems/*.py"))
check(len(problems) == 5, "five bundled problems: %s" % problems)
for problem in problems:
    stem = os.path.basename(problem)[:-3]
    case = os.path.join(TMP, stem)
    p = kl("case", "from-kernelbench", problem, "-o", case)
    files = sorted(os.listdir(case)) if os.path.isdir(case) else []
    check(p.returncode == 0 and files == ["candidates", "case.yaml",
                                          "ops.py", "problem.py",
                                          "program.md"],
          "%s: the case folder is written: %s %s" % (stem, files, p.stderr))
    # at import the tolerance is probed where the problem runs, else a line
    # says it was not (no device here; the GPU part checks the probe)
    check("tolerance not probed: " in p.stdout or
          "tolerance atol 0.01, rtol 0.01" in p.stdout,
          "%s: the import says what its tolerance separates: %s"
          % (stem, p.stdout))
    p = kl("check", case)
    ins, values = WANT[stem]
    lines = p.stdout.splitlines()
    params = [ln.split()[0] for ln in lines if ln.startswith("  ") and
              ("input" in ln or "output" in ln)]
    check(p.returncode == 0 and params == ins + ["out"] and
          values in p.stdout and "atol 0.01, rtol 0.01" in p.stdout,
          "%s: it loads, params %s, values %r: %s %s"
          % (stem, params, values, p.stdout, p.stderr))

p = kl("prompt", os.path.join(TMP, "3_rms_norm"))
check(p.returncode == 0 and "class ModelNew(nn.Module)" in p.stdout and
      "def forward(*xs)" in p.stdout,
      "the prompt offers ModelNew beside forward: %s" % p.stderr)

bad = os.path.join(TMP, "not_a_problem.py")
with open(bad, "w") as f:
    f.write("import torch\n\n\ndef forward(x):\n    return x\n")
p = kl("case", "from-kernelbench", bad, "-o", os.path.join(TMP, "bad"))
check(p.returncode == 2 and bad + ":1:1: " in p.stderr and
      "no class Model" in p.stderr and
      not os.path.exists(os.path.join(TMP, "bad")),
      "no Model: exit 2 at the file's line and column, nothing written: "
      "%d %s" % (p.returncode, p.stderr.strip()))
with open(bad, "w") as f:
    f.write("import torch\n\nclass Model(nn.Module:\n    pass\n")
p = kl("case", "from-kernelbench", bad, "-o", os.path.join(TMP, "bad"))
check(p.returncode == 2 and bad + ":3:" in p.stderr,
      "a syntax error: exit 2 at its line: %d %s" % (p.returncode,
                                                      p.stderr.strip()))
p = kl("case", "from-kernelbench", problems[0], "-o",
       os.path.join(TMP, "1_relu"))
check(p.returncode == 2 and "exists" in p.stderr,
      "an existing folder is not overwritten: %d %s" % (p.returncode,
                                                         p.stderr.strip()))

# A forward parameter with a default (KernelBench's LSTM and RNN problems:
# forward(self, x, h0=None)) is an input only where get_inputs() gives it.
RNN = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, h0=None, c0=None):
        return x if h0 is None else x + h0


n = 64


def get_inputs():
    return %s


def get_init_inputs():
    return []
"""
for given, want in (("[torch.rand(n)]", ["x", "out"]),
                    ("[torch.rand(n), torch.rand(n)]", ["x", "h0", "out"])):
    rnn = os.path.join(TMP, "rnn.py")
    with open(rnn, "w") as f:
        f.write(RNN % given)
    case = os.path.join(TMP, "rnn_%d" % len(want))
    p = kl("case", "from-kernelbench", rnn, "-o", case)
    q = kl("check", case)
    params = [ln.split()[0] for ln in q.stdout.splitlines()
              if ln.startswith("  ") and ("input" in ln or "output" in ln)]
    check(p.returncode == 0 and q.returncode == 0 and params == want,
          "get_inputs() returning %s: params %s (want %s) %s"
          % (given, params, want, p.stderr + q.stderr))

if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
shutil.rmtree(TMP, ignore_errors=True)
print("all passed")
