#!/bin/sh
# The CLI's main paths under valgrind (memcheck, definite leaks are errors):
# check, harness, bench and compare on a host case, rules over recorded
# metrics, observe --show, history, and bad input. Skips (77) without
# valgrind or in a sanitizer build. usage: valgrind.sh KL SOURCE_DIR
set -u
KL=$1 SRC=$2
command -v valgrind >/dev/null || { echo "no valgrind: skipped"; exit 77; }
ldd "$KL" | grep -q libasan && { echo "sanitizer build: skipped"; exit 77; }
TMP=$(mktemp -d /tmp/kl-valgrind-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export KERNLAB_SHARE_DIR="$SRC/share/kernlab" NO_COLOR=1 \
  KERNLAB_CACHE_DIR="$TMP/cache" KL_CONFIG=/dev/null
cp -r "$SRC/cases/host_saxpy" "$TMP/saxpy"
sed -i 's/n: 16\*1024\*1024/n: 65536/; s/n: 1024\*1024 }/n: 4096 }/' \
  "$TMP/saxpy/case.yaml"
failed=0
vg() {
  want=$1; shift
  valgrind -q --leak-check=full --errors-for-leak-kinds=definite \
    --error-exitcode=99 "$KL" "$@" >"$TMP/out" 2>"$TMP/err"
  got=$?
  if [ "$got" != "$want" ]; then
    failed=$((failed + 1))
    echo "FAIL: kl $* exited $got, want $want"; tail -20 "$TMP/err"
  fi
}
vg 0 check "$SRC/cases/host_matmul"
vg 0 check "$SRC/cases/vector_add" --json
vg 0 harness "$SRC/cases/vector_add"
vg 0 harness "$TMP/saxpy" --plugin
vg 0 bench "$TMP/saxpy" --json
vg 3 compare "$TMP/saxpy" --candidate "$SRC/tests/bench/candidates/saxpy_wrong.c"
vg 0 rules "$SRC/cases/transpose_f32" --metrics \
  "$SRC/tests/rules/fixtures/h200/transpose_f32.json"
vg 0 rules --lint "$SRC/share/kernlab/rules/"*.yaml
vg 0 observe --show "$SRC/tests/observe/fixtures/app_h200.json" --json
vg 0 history "$TMP/saxpy"
vg 2 check /nonexistent
vg 2 bench "$TMP/saxpy" --no-such-option
[ $failed -eq 0 ] && echo ok
exit $failed
