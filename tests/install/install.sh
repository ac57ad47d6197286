#!/bin/sh
# Install into a temporary prefix, then build the C example against it two
# ways (pkg-config, find_package) and run both on a bundled case.
# usage: install.sh BUILD_DIR SOURCE_DIR CC [EXTRA_CFLAGS]
# (EXTRA_CFLAGS carries the sanitizer flags of a KL_SANITIZE build.)
set -eu
BUILD=$1 SRC=$2 CC=$3 EXTRA=${4:-}
TMP=$(mktemp -d /tmp/kl-install-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
cmake --install "$BUILD" --prefix "$TMP/prefix" >/dev/null
P="$TMP/prefix"
LIBDIR=$(ls -d "$P"/lib*/pkgconfig | head -n1 | xargs dirname)
for f in "$P/bin/kl" "$P/include/kernlab/kernlab.h" "$P/share/kernlab/templates/host/case.yaml" \
         "$LIBDIR/pkgconfig/kernlab.pc" "$LIBDIR/cmake/kernlab/kernlabConfig.cmake"; do
  [ -e "$f" ] || { echo "missing after install: $f"; exit 1; }
done
ls "$LIBDIR"/libkernlab.so* "$LIBDIR"/libkernlab.a >/dev/null

# the installed kl finds its templates beside itself, with no environment
unset KERNLAB_SHARE_DIR
(cd "$TMP" && "$P/bin/kl" new stamped >/dev/null && "$P/bin/kl" check stamped >/dev/null)
# ... and its default rules and skills
"$P/bin/kl" rules --list | grep -q '^- uncoalesced_stores: ' ||
  { echo "installed kl rules lacks the default skills"; exit 1; }
"$P/bin/kl" rules --metrics "$SRC/tests/rules/fixtures/h200/transpose_f32.json" \
  --shape square4k | grep -q '^  high   uncoalesced_stores: ' ||
  { echo "installed kl rules did not diagnose the naive transpose"; exit 1; }

# the installed kl runs the worker installed beside it
(cd "$TMP" && KERNLAB_CACHE_DIR="$TMP/cache" "$P/bin/kl" bench "$SRC/cases/host_saxpy" \
   --shape 1M --time-cap-ms 100 >/dev/null)
[ -x "$P/libexec/kernlab/kl-worker" ] || { echo "kl-worker not installed"; exit 1; }

# pkg-config
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
$CC -std=c11 -Wall -Werror $EXTRA "$SRC/examples/c/check_case.c" \
  $(pkg-config --cflags --libs kernlab) -Wl,-rpath,"$LIBDIR" -o "$TMP/by_pkgconfig"
"$TMP/by_pkgconfig" "$SRC/cases/vector_add" | grep -q '^vector_add: 4 params, 3 shapes$'

# find_package(kernlab)
cmake -S "$SRC/examples/c" -B "$TMP/ex" -DCMAKE_PREFIX_PATH="$P" \
  -DCMAKE_BUILD_RPATH="$LIBDIR" -DCMAKE_C_FLAGS="$EXTRA" \
  -DCMAKE_EXE_LINKER_FLAGS="$EXTRA" >/dev/null
cmake --build "$TMP/ex" >/dev/null
"$TMP/ex/check_case" "$SRC/cases/rmsnorm_bf16" | grep -q '^rmsnorm_bf16: 6 params, 4 shapes$'

# a broken case fails the example with located errors
if "$TMP/ex/check_case" "$SRC/tests/case/bad/zero_count" 2>"$TMP/err"; then
  echo "a broken case loaded"; exit 1
fi
grep -q 'case.yaml:6:48: count of' "$TMP/err"
echo "ok: installed tree builds with pkg-config and find_package(kernlab)"
