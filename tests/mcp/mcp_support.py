"""What the kl mcp tests share: a scratch folder and environment (as the
run tests make them), a copy of host_saxpy without records, and the
candidates the sessions send as source text: a faster-or-equal correct
one, a wrong one, and one that never returns (for cancellation)."""
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


def saxpy_case(src, tmp):
    """A copy of host_saxpy in tmp/host_saxpy."""
    dest = os.path.join(tmp, "host_saxpy")
    if os.path.exists(dest):
        shutil.rmtree(dest)
    return copy_case(src, "host_saxpy", dest)


def descendants(root):
    """Every pid under root, from /proc's parent links."""
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
