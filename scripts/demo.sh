#!/usr/bin/env bash
# The main job, as far as kernlab goes today: build, then check every
# bundled case and show what it would run (kernel, params, shapes with
# their evaluated sizes and launch geometry).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
KL=build/bin/kl
"$KL" --version
status=0
for c in cases/*/; do
  echo
  echo "== kl check ${c%/}"
  "$KL" check "${c%/}" || status=1
done
echo
if [ $status = 0 ]; then
  echo "demo: every bundled case passed kl check"
else
  echo "demo: some cases failed kl check" >&2
fi
exit $status
