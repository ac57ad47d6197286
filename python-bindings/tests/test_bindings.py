"""The Python bindings against the built library (run by ctest, label
python). Plain asserts; exits non-zero on the first failure."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import kernlab  # noqa: E402

SRC = sys.argv[1]
passed = 0


def check(cond, what):
    global passed
    if not cond:
        print("FAIL:", what)
        sys.exit(1)
    passed += 1


check(kernlab.version().count(".") == 2, "version string")
with kernlab.load_case(os.path.join(SRC, "cases", "vector_add")) as case:
    check(case.name == "vector_add", "name")
    check(case.backend == "cuda", "backend")
    check([s["name"] for s in case.shapes] == ["1M", "16M", "64M"], "shapes")
    check(case.shapes[0]["launch"]["grid"] == [4096, 1, 1], "grid")

bad = os.path.join(SRC, "tests", "case", "bad", "unknown_key")
try:
    kernlab.load_case(bad)
    check(False, "a bad case loaded")
except kernlab.KernlabError as e:
    check(e.name == "EINVALID", "error code name")
    check(len(e.errors) == 4, "every diagnostic reaches Python")
    check((e.errors[1]["line"], e.errors[1]["column"]) == (4, 1), "location")
    check(e.path.endswith("case.yaml") and e.line == 1, "first error located")

check(kernlab.check_case(os.path.join(SRC, "cases", "host_saxpy")) == [],
      "valid case checks clean")
try:
    kernlab.load_case("/nonexistent")
except kernlab.KernlabError as e:
    check(e.name == "ENOTFOUND", "missing path")

check(kernlab.eval_expr("ceil_div(1000, 256)") == 4, "eval int")
check(kernlab.eval_expr("7 / 2") == 3.5, "eval float")
try:
    kernlab.eval_expr("1 +")
except kernlab.KernlabError as e:
    check(e.column == 4, "expression error column")

with tempfile.TemporaryDirectory() as tmp:
    path = kernlab.new_case("py_case", "cuda", tmp)
    check(kernlab.check_case(path) == [], "stamped case is valid")
    try:
        kernlab.new_case("py_case", "cuda", tmp)
        check(False, "overwrote a case")
    except kernlab.KernlabError as e:
        check(e.name == "EEXISTS", "exists")

print("%d passed, 0 failed" % passed)
