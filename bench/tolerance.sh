#!/usr/bin/env bash
# Whether each bundled case's tolerance separates a right answer from a
# trivial one (issue 44): `kl check --tolerance --json` of every case under
# cases/ and of every KernelBench problem under bench/kernelbench/problems
# (imported with `kl case from-kernelbench`), a line each: the shapes whose
# elementwise tolerance accepts (or nearly accepts) a trivial output made
# from the oracle's, and the tolerance kl check suggests. Device cases need
# the GPU machine.
# usage: bench/tolerance.sh BUILD_DIR OUT_DIR
set -uo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out}
SRC=$(cd "$(dirname "$0")/.." && pwd)
KL=$BUILD/bin/kl
mkdir -p "$OUT/tolerance"
echo "== does the tolerance separate right from trivial ($(date -u +%Y-%m-%dT%H:%MZ))"
command -v nvidia-smi >/dev/null &&
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
KB=$(mktemp -d /tmp/kl-tolerance-XXXXXX) # the worker's sandbox hides $HOME
targets=()
for c in "$SRC"/cases/*/; do targets+=("${c%/}"); done
for p in "$SRC"/bench/kernelbench/problems/*.py; do
  name=$(basename "$p" .py)
  if "$KL" case from-kernelbench "$p" -o "$KB/$name" >"$OUT/tolerance/$name.import" 2>&1; then
    targets+=("$KB/$name")
  else
    echo "$name: import failed: $(tail -n 1 "$OUT/tolerance/$name.import")"
  fi
done
for t in "${targets[@]}"; do
  name=$(basename "$t")
  "$KL" check "$t" --tolerance --json >"$OUT/tolerance/$name.json" 2>"$OUT/tolerance/$name.err"
  python3 - "$name" "$OUT/tolerance/$name.json" "$OUT/tolerance/$name.err" <<'PY'
import json, sys
name, path, err = sys.argv[1:4]
try:
    d = json.load(open(path))
    t = d["tolerance"]
except Exception:
    print(f"{name:28s} no answer: {open(err).read().strip()[-200:]}")
    sys.exit(0)
shapes = t.get("shapes", [])
weak = [s["name"] for s in shapes if s.get("weak")]
measured = [s for s in shapes if s.get("trivial")]
why = []
for s in shapes:
    for tr in s.get("trivial", []):
        if tr.get("accepted") or tr.get("nearly_accepted"):
            why.append(f"{s['name']}: {tr['name']} {tr['rejected']}/{tr['elements']} rejected")
note = t.get("suggested_atol")
print(f"{name:28s} atol {t.get('atol')} rtol {t.get('rtol')}: "
      f"{'WEAK at ' + ', '.join(weak) if weak else 'separates'} "
      f"({len(measured)} of {len(shapes)} shapes measured)"
      + (f"; {'; '.join(why[:3])}" if why else "")
      + (f"; suggested atol {note:.3g}" if note else ""))
PY
done
