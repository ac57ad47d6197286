"""What the kl mcp tests share: a scratch folder and environment (as the
run tests make them), a copy of a case without records, and for each case
a session can run on the candidates it sends as source text: a correct
one, a wrong one, and one that never returns (for cancellation); and how
to find the processes a call started (the worker included, also a Python
worker forked by its warm parent, which is no descendant of kl)."""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, copy_case, scratch  # noqa: E402,F401

GOOD = """void saxpy(float *y, const float *x, float a, int n) {
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
}
"""
# y = a*x: forgets the y it is given, so every check fails (INCORRECT)
WRONG = """void saxpy(float *y, const float *x, float a, int n) {
  for (int i = 0; i < n; i++)
    y[i] = a * x[i];
}
"""
# never returns: the call runs until it is cancelled
FOREVER = """void saxpy(float *y, const float *x, float a, int n) {
  volatile int spin = 1;
  while (spin)
    ;
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
}
"""


# Python host case (CI runs it): array.array buffers
PY_GOOD = """import array


def forward(y, x):
    y[:] = array.array("f", [2.5 * b + a for a, b in zip(y, x)])
    return ()
"""
PY_WRONG = """def forward(y, x):
    for i in range(len(x)):
        y[i] = 2.0 * x[i] + y[i]
    return ()
"""
PY_FOREVER = """import time


def forward(*args):
    while True:
        time.sleep(0.05)
"""
TORCH_GOOD = """import torch


def forward(x):
    return torch.softmax(x, dim=-1)
"""
TORCH_WRONG = """import torch


def forward(x):
    return torch.exp(x)
"""


def cuda_variants(src):
    """vector_add's baseline as text: itself, a wrong one (a - b), one that
    spins forever on the device."""
    with open(os.path.join(src, "cases", "vector_add", "kernel.cu")) as f:
        base = f.read()
    good = base + "\n// the baseline, sent as text\n"
    wrong = base.replace("a[i] + b[i]", "a[i] - b[i]")
    forever = base.replace("  if (i < n)\n", "  volatile int spin = 1;\n"
                           "  while (spin)\n    ;\n  if (i < n)\n", 1)
    assert wrong != base and forever != base
    return good, wrong, forever


def case_profile(src, name):
    """(the case's folder in the tree, the shape to time, good, wrong,
    forever) for a case a session can run on."""
    if name == "host_saxpy":
        return "cases/host_saxpy", "1M", GOOD, WRONG, FOREVER
    if name == "saxpy_py":
        return ("tests/python/cases/saxpy_py", "2k", PY_GOOD, PY_WRONG,
                PY_FOREVER)
    if name == "vector_add":
        return ("cases/vector_add", "1M") + cuda_variants(src)
    if name == "softmax_torch":
        return ("tests/python/cases/softmax_torch", "r4k_c1k", TORCH_GOOD,
                TORCH_WRONG, PY_FOREVER)
    sys.exit("no session for case %s" % name)


def copy_any_case(src, rel, tmp):
    """A copy of the case at src/rel in tmp, without records."""
    dest = os.path.join(tmp, os.path.basename(rel))
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(os.path.join(src, rel), dest,
                    ignore=shutil.ignore_patterns("runs", "*.jsonl", "*.csv",
                                                  "memory.summary.md"))
    return dest


def saxpy_case(src, tmp):
    """A copy of host_saxpy in tmp/host_saxpy."""
    dest = os.path.join(tmp, "host_saxpy")
    if os.path.exists(dest):
        shutil.rmtree(dest)
    return copy_case(src, "host_saxpy", dest)


def parents_now():
    """pid -> parent pid, for every process."""
    parents = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                text = f.read()
        except OSError:
            continue
        parents[int(name)] = int(text[text.rindex(")") + 2:].split()[1])
    return parents


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def descendants(root, parents=None):
    """Every pid under root, from /proc's parent links."""
    parents = parents if parents is not None else parents_now()
    found, i = [root], 0
    while i < len(found):
        found += [p for p, pp in parents.items() if pp == found[i]]
        i += 1
    return found[1:]


def alive(pid):
    """A process that exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


def workers_and_children(root, kl):
    """The processes a call under `root` may have: its descendants, and
    every child of this build's warm Python parent (the kl-pyworker
    --zygote beside `kl`), which forks the Python workers; the caller
    keeps those that are new."""
    parents = parents_now()
    found = set(descendants(root, parents))
    ours = os.path.join(os.path.dirname(os.path.dirname(kl)), "libexec",
                        "kernlab", "kl-pyworker").encode()
    for pid in parents:
        line = cmdline(pid)
        if b"--zygote" in line and ours in line:
            found |= set(descendants(pid, parents))
    return found


def is_worker(pid):
    line = cmdline(pid)
    return b"kl-worker" in line or b"pyworker" in line

