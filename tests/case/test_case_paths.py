#!/usr/bin/env python3
"""A case named by a relative path (ctest label unit): kl bench run from
the case's parent folder (`kl bench saxpy`) and from inside it
(`kl bench .`). The compiler runs in a folder of its own, so the case's
header beside the kernel, its target.include folder and its target.libs
file must reach it as paths from the root; each is used by the kernel
(a macro, a declaration, a function in a static library), and both
commands end OK. `kl check saxpy` lists the target's flags, include
folder and library, the paths from the root.
usage: test_case_paths.py KL SOURCE_DIR
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, scratch, small_saxpy  # noqa: E402

KL, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
TMP, ENV = scratch(SRC, "kl-case-paths-")
PARENT = os.path.join(TMP, "work")
CASE = small_saxpy(SRC, os.path.join(PARENT, "saxpy"))


def write(rel, text):
    path = os.path.join(CASE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


write("beside.h", "#define KL_BESIDE 1\n")
write("include/ident.h", "float kl_ident(float v);\n")
src = write("lib/ident.c", "float kl_ident(float v) { return v; }\n")
obj = os.path.join(CASE, "lib", "ident.o")
built = subprocess.run(["cc", "-c", "-fPIC", "-O2", src, "-o", obj])
built = built.returncode == 0 and subprocess.run(
    ["ar", "rcs", os.path.join(CASE, "lib", "libident.a"), obj]).returncode
check(built == 0, "the case's static library did not build")
with open(os.path.join(CASE, "kernel.c")) as f:
    kernel = f.read()
# the kernel itself uses all three: KL_BESIDE from beside.h, kl_ident's
# declaration from include/ and its definition from lib/libident.a
marker = "void saxpy("
check(marker in kernel, "host_saxpy's kernel has no %r" % marker)
kernel = ('#include "beside.h"\n#include "ident.h"\n' +
          kernel.replace(marker, "#ifndef KL_BESIDE\n#error beside.h\n"
                         "#endif\n" + marker, 1))
head, body = kernel.split(marker, 1)
brace = body.index("{") + 1
kernel = head + marker + body[:brace] + "\n  a = kl_ident(a);" + body[brace:]
write("kernel.c", kernel)
with open(os.path.join(CASE, "case.yaml")) as f:
    yaml = f.read()
yaml = yaml.replace("backend: host\n", "backend: host\ntarget: { include: "
                    "[include], libs: [lib/libident.a], flags: "
                    "\"-O2 -DKL_PATHS=1\" }\n", 1)
write("case.yaml", yaml)

# kl check lists what the target adds, the paths from the root
p = subprocess.run([KL, "check", "saxpy"], capture_output=True, text=True,
                   env=ENV, cwd=PARENT, timeout=600)
lines = p.stdout.splitlines()
real = os.path.realpath(CASE)  # as the working folder reads it
check(p.returncode == 0 and "flags     -O2 -DKL_PATHS=1" in lines and
      "include   -I" + os.path.join(real, "include") in lines and
      "links     " + os.path.join(real, "lib", "libident.a") in lines,
      "kl check saxpy: exit %d: %s" % (p.returncode, p.stdout[-600:]))

for where, case in ((PARENT, "saxpy"), (CASE, ".")):
    p = subprocess.run([KL, "bench", case, "--hot", "--shape", "1M"],
                       capture_output=True, text=True, env=ENV, cwd=where,
                       timeout=600)
    print("$ (cd %s && kl bench %s --hot --shape 1M) -> %d"
          % (os.path.relpath(where, TMP), case, p.returncode), flush=True)
    check(p.returncode == 0 and "verdict OK" in p.stdout,
          "kl bench %s from %s: exit %d: %s" % (
              case, os.path.relpath(where, TMP), p.returncode,
              (p.stderr or p.stdout)[-600:]))

if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
print("ok")
