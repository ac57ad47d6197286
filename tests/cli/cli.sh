#!/bin/sh
# The kl CLI as a user meets it: exit statuses, messages, --json, kl new.
# usage: cli.sh KL SOURCE_DIR
set -u
KL=$1
SRC=$2
TMP=$(mktemp -d /tmp/kl-cli-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export KERNLAB_SHARE_DIR="$SRC/share/kernlab" NO_COLOR=1 KERNLAB_CACHE_DIR="$TMP/cache"
passed=0 failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect STATUS CMD...: run CMD, compare its exit status
expect() {
  want=$1; shift
  "$@" >"$TMP/out" 2>"$TMP/err"
  got=$?
  if [ "$got" = "$want" ]; then ok; else
    bad "$* exited $got, want $want"; cat "$TMP/out" "$TMP/err"; fi
}
# has FILE TEXT: FILE contains the line TEXT
has() {
  if grep -qxF -- "$2" "$1"; then ok; else
    bad "$1 lacks the line: $2"; echo "--- it has:"; cat "$1"; fi
}

expect 0 "$KL" --version
has "$TMP/out" "kl $("$KL" --version | cut -d' ' -f2)"
grep -q '^kl [0-9]*\.[0-9]*\.[0-9]*$' "$TMP/out" && ok || bad "--version format"
expect 0 "$KL" help
grep -q '^  3  candidate rejected' "$TMP/out" && ok || bad "help lacks exit 3"
expect 0 "$KL" help check
expect 0 "$KL" check --help
expect 2 "$KL" help nosuchverb
expect 2 "$KL" chek
has "$TMP/err" "kl: unknown command 'chek'; did you mean 'check'? (see kl help)"

# every bundled case passes, text and json
for c in "$SRC"/cases/*/; do
  expect 0 "$KL" check "$c"
  tail -n 1 "$TMP/out" | grep -q '^ok: ' && ok || bad "$c: no ok line"
  expect 0 "$KL" check --json "$c"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is True and d["case"]["shapes"]' "$TMP/out" \
    && ok || bad "$c: --json is not one JSON document with ok=true"
  [ ! -s "$TMP/err" ] && ok || bad "$c: --json wrote to stderr"
done

# usage errors
expect 2 "$KL" check
expect 2 "$KL" check --bogus "$SRC/cases/vector_add"
expect 2 "$KL" check "$SRC/cases/vector_add" "$SRC/cases/host_saxpy"
# a path that does not exist is bad input
expect 2 "$KL" check "$TMP/nope"
has "$TMP/err" "kl: $TMP/nope: no such case folder or file"
mkdir "$TMP/emptydir"
expect 2 "$KL" check "$TMP/emptydir"
has "$TMP/err" "kl: $TMP/emptydir: no case.yaml in this folder"

# a broken case: every error, located, then a count; exit 2
B="$SRC/tests/case/bad/unknown_key"
expect 2 "$KL" check "$B"
has "$TMP/err" "$B/case.yaml:4:1: unknown key 'kernal' in the case; did you mean 'kernel'?"
has "$TMP/err" "$B/case.yaml:11:1: unknown key 'budjet' in the case; did you mean 'budget'?"
has "$TMP/err" "kl: 4 errors in $B"
# with the line and a caret under the column
has "$TMP/err" "  kernal:"
expect 2 "$KL" check --json "$B"
python3 - "$TMP/out" <<'PY' && ok || bad "--json errors"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False and len(d["errors"]) == 4, d
e = d["errors"][1]
assert (e["line"], e["column"]) == (4, 1) and "kernal" in e["text"], e
PY
[ ! -s "$TMP/err" ] && ok || bad "check --json of a bad case wrote to stderr"

# kl new stamps cases kl check accepts, and never overwrites
expect 0 "$KL" new mine --dir "$TMP"
expect 0 "$KL" check "$TMP/mine"
expect 0 "$KL" new gpu1 --template cuda --dir "$TMP"
expect 0 "$KL" check "$TMP/gpu1"
expect 0 "$KL" new j --dir "$TMP" --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["template"]=="host"' "$TMP/out" && ok || bad "new --json"
echo "// edited" > "$TMP/mine/kernel.c"
expect 2 "$KL" new mine --dir "$TMP"
grep -q "// edited" "$TMP/mine/kernel.c" && ok || bad "kl new overwrote a case"
expect 2 "$KL" new mine --template nope --dir "$TMP/x"
expect 2 "$KL" new "bad name" --dir "$TMP"
expect 2 "$KL" new
expect 2 "$KL" new a --template

# kl harness: a standalone file that builds and runs with only cc
expect 0 "$KL" harness "$SRC/cases/host_saxpy" -o "$TMP/h.c"
cc -O2 "$TMP/h.c" -lm -o "$TMP/h" && "$TMP/h" >"$TMP/h.out" && ok || bad "standalone harness did not build or run"
grep -q '"shape":"16M"' "$TMP/h.out" && ok || bad "standalone printed no 16M line"
expect 0 "$KL" harness "$SRC/cases/host_saxpy" --plugin
grep -q 'kl_plugin_v1' "$TMP/out" && ok || bad "plugin form lacks kl_plugin_v1"
expect 0 "$KL" harness "$SRC/cases/vector_add"
grep -q '<<<dim3' "$TMP/out" && ok || bad "cuda harness lacks its launch"
expect 2 "$KL" harness "$SRC/cases/host_saxpy" --candidate "$TMP/none.c"

# kl bench / kl compare: verdicts and exit statuses
C="$SRC/tests/bench/candidates"
FAST="--time-cap-ms 200"
expect 0 "$KL" bench "$SRC/cases/host_saxpy" --shape 1M $FAST
grep -q 'verdict OK' "$TMP/out" && ok || bad "bench: no verdict line"
grep -Eq '^wall [0-9.]+ s: build [0-9.]+, worker [0-9.]+, load [0-9.]+, checks [0-9.]+ \(oracle [0-9.]+, settle [0-9.]+\), timing [0-9.]+ \(setup [0-9.]+, sampling [0-9.]+, placements [0-9.]+, verify [0-9.]+\), other [0-9.]+$' "$TMP/out" && ok || bad "bench: no wall breakdown line"
expect 0 "$KL" bench "$SRC/cases/host_saxpy" --shape 1M --json --seed 42 $FAST
python3 - "$TMP/out" <<'PY' && ok || bad "bench --json fields"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["shapes"][0]
for k in ("name", "correct", "max_abs_err", "unwritten", "median_us", "ci_low_us", "ci_high_us", "samples", "cold"):
    assert k in s, k
assert d["verdict"] == "OK" and s["correct"] is True and s["samples"] >= 3
assert s["stop_reason"] in ("converged", "time_cap", "max_samples"), s
assert d["seeds"][0] != 42 and len(d["seeds"]) == 3
assert "compile_log" not in d, d["compile_log"]  # the compiler said nothing
# where the wall time went: every phase there, the ones that ran >= 0,
# sampling within timing, the phases adding up to the total
ph = d["phases_ms"]
names = ("total", "build", "worker", "load", "checks", "oracle", "settle",
         "profile", "timing", "setup", "sampling", "placements", "verify",
         "gates", "other")
assert tuple(ph) == names, ph
# no profile asked for, and the roofline gate is a candidate's
assert ph["profile"] is None and ph["gates"] is None, ph
assert all(ph[k] >= 0 for k in names if k not in ("profile", "gates")), ph
assert ph["checks"] > 0 and ph["timing"] > 0 and ph["sampling"] <= ph["timing"], ph
assert ph["setup"] + ph["sampling"] + ph["placements"] + ph["verify"] <= ph["timing"] + 0.4, ph
assert ph["oracle"] > 0 and ph["oracle"] + ph["settle"] <= ph["checks"] + 0.2, ph
parts = sum(ph[k] for k in ("build", "worker", "load", "checks", "timing", "other"))
assert abs(parts - ph["total"]) <= 0.5, (parts, ph)
PY
expect 3 "$KL" bench "$SRC/cases/host_saxpy" --candidate "$C/saxpy_wrong.c" --shape 1M $FAST
grep -q '^kl: candidate rejected: INCORRECT: ' "$TMP/err" && ok || bad "bench: no INCORRECT line"
expect 3 "$KL" bench "$SRC/cases/host_saxpy" --candidate "$C/saxpy_segfault.c" --shape 1M $FAST --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verdict"]=="CRASHED", d' "$TMP/out" && ok || bad "CRASHED in json"
expect 3 "$KL" bench "$SRC/cases/host_saxpy" --candidate "$C/saxpy_compile_error.c"
grep -q 'saxpy_compile_error.c:4:' "$TMP/err" && ok || bad "compile error location"
# a candidate that misspells the entry: a COMPILE_ERROR naming it, not a
# crash at load
expect 3 "$KL" bench "$SRC/cases/host_saxpy" --candidate "$C/saxpy_misnamed.c"
grep -q '^kl: candidate rejected: COMPILE_ERROR: .*implicit declaration of function .saxpy.' "$TMP/err" &&
  ok || bad "a misnamed entry: $(head -c 300 "$TMP/err")"
# a case whose own kernel does not compile: one line, exit 2, and the
# compiler's whole log after it (its notes name the kernel's lines)
cp -r "$SRC/cases/host_saxpy" "$TMP/broken_base"
rm -rf "$TMP/broken_base/runs"
sed -i 's/y\[i\] = a \* x\[i\] + y\[i\];/y[i] = a * x[i] + yy[i];/' "$TMP/broken_base/kernel.c"
grep -q 'yy\[i\]' "$TMP/broken_base/kernel.c" || bad "the baseline was not broken"
expect 2 "$KL" bench "$TMP/broken_base" --shape 1M $FAST
head -n 1 "$TMP/err" | grep -q "^kl: the baseline of case 'host_saxpy' does not compile: kernel.c:[0-9]*:[0-9]*: error: " &&
  grep -q "kernel.c:[0-9]*:[0-9]*: error: .yy. undeclared" "$TMP/err" &&
  [ "$(grep -c 'error:' "$TMP/err")" -ge 2 ] && ok ||
  bad "a baseline's compile error without its log"
# kl check --tolerance on a case of two outputs, the second small enough
# that zeros pass its tolerance: that one is reported (once, the first)
mkdir -p "$TMP/two_outputs"
cat >"$TMP/two_outputs/case.yaml" <<'YAML'
kernlab: 1
name: two_outputs
backend: host
target: { flags: [-O2, -Wall, -Wextra] }
kernel: { source: k.c, entry: two }
params:
  - { name: n, type: i32 }
  - { name: x, type: f32*, role: input, count: n }
  - { name: big, type: f32*, role: output, count: n }
  - { name: small, type: f32*, role: output, count: n }
shapes:
  - { name: s, n: 4096 }
reference: { kind: baseline, atol: 1e-2, rtol: 1e-2 }
YAML
cat >"$TMP/two_outputs/k.c" <<'C'
void two(int n, const float *x, float *big, float *small) {
  for (int i = 0; i < n; i++) {
    big[i] = 10.0f * x[i];
    small[i] = 1e-3f * x[i];
  }
}
C
expect 0 "$KL" check "$TMP/two_outputs" --tolerance
grep -q '^  s  *small (RMS [0-9.e-]*): zeros ACCEPTED' "$TMP/out" &&
  grep -q '^tolerance is weak' "$TMP/out" && ok ||
  bad "check --tolerance: the weak output of two not reported"
# built with -Wall -Wextra, the harness itself warns of nothing (a warning
# would be shown as the kernel's)
expect 0 "$KL" bench "$TMP/two_outputs" --hot $FAST
grep -q 'compiler warned' "$TMP/err" && bad "the harness warns under -Wall: $(cat "$TMP/err")" || ok
# a workspace (role scratch): the baseline goes through it, a candidate
# that leaves it alone is right, one that reads what it did not write
# finds it poisoned
mkdir -p "$TMP/scratch_case"
cat >"$TMP/scratch_case/case.yaml" <<'YAML'
kernlab: 1
name: scratch_case
backend: host
kernel: { source: k.c, entry: f }
params:
  - { name: n, type: i32 }
  - { name: x, type: f32*, role: input, count: n }
  - { name: tmp, type: f32*, role: scratch, count: n }
  - { name: y, type: f32*, role: output, count: n }
shapes:
  - { name: s, n: 4096 }
reference: { kind: baseline }
YAML
cat >"$TMP/scratch_case/k.c" <<'C'
void f(int n, const float *x, float *tmp, float *y) {
  for (int i = 0; i < n; i++) tmp[i] = 2.0f * x[i];
  for (int i = 0; i < n; i++) y[i] = tmp[i] + 1.0f;
}
C
printf 'void f(int n, const float *x, float *tmp, float *y) {\n  (void)tmp;\n  for (int i = 0; i < n; i++) y[i] = 2.0f * x[i] + 1.0f;\n}\n' >"$TMP/scratch_case/direct.c"
printf 'void f(int n, const float *x, float *tmp, float *y) {\n  (void)x;\n  for (int i = 0; i < n; i++) y[i] = tmp[i] + 1.0f;\n}\n' >"$TMP/scratch_case/leftover.c"
expect 0 "$KL" check "$TMP/scratch_case"
grep -q '^  tmp  *f32\* scratch, count n$' "$TMP/out" && ok || bad "check: the scratch role not listed"
expect 0 "$KL" bench "$TMP/scratch_case" --candidate "$TMP/scratch_case/direct.c" --hot $FAST
expect 3 "$KL" bench "$TMP/scratch_case" --candidate "$TMP/scratch_case/leftover.c" --hot $FAST
grep -q '^kl: candidate rejected: INCORRECT: ' "$TMP/err" && ok || bad "a kernel reading a workspace's leftovers passed"
# a candidate that compiles with a warning: OK, and the warning shown
expect 0 "$KL" bench "$SRC/cases/host_saxpy" --candidate "$C/saxpy_warning.c" --shape 1M --hot $FAST
grep -q '^kl: the compiler warned' "$TMP/err" &&
  grep -q 'saxpy_warning.c:6:[0-9]*: warning: ' "$TMP/err" && ok ||
  bad "bench: the candidate's compiler warning not shown"
expect 0 "$KL" bench "$SRC/cases/host_saxpy" --candidate "$C/saxpy_warning.c" --shape 1M --hot $FAST --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verdict"]=="OK" and "saxpy_warning.c:6:" in d["compile_log"], d.get("compile_log")' "$TMP/out" && ok || bad "compile_log in json"
# the standalone harness's build line names the case folder from the root,
# though the case was given as "." (it said -I ., true only there)
cp -r "$SRC/cases/host_saxpy" "$TMP/local_header"
rm -rf "$TMP/local_header/runs"
echo '#define SAXPY_SCALE 1.0f' >"$TMP/local_header/scale.h"
sed -i '1i #include "scale.h"' "$TMP/local_header/kernel.c"
# and the file -o wrote; the line, run where that file is, builds it
(cd "$TMP/local_header" && "$KL" harness . -o "$TMP/local_header.c") &&
  grep -q "^ \* Build and run: cc .* -I $TMP/local_header local_header.c" "$TMP/local_header.c" &&
  line=$(sed -n 's/^ \* Build and run: \(.*\) && \.\/a\.out$/\1/p' "$TMP/local_header.c") &&
  (cd "$TMP" && sh -c "$line -o $TMP/local_header.out") &&
  ok || bad "harness: the build line does not build from elsewhere"
# kl bench of a case whose own kernel crashes: the baseline is rejected
cp -r "$SRC/cases/host_saxpy" "$TMP/crashing_base"
rm -rf "$TMP/crashing_base/runs"
cp "$C/saxpy_segfault.c" "$TMP/crashing_base/kernel.c"
expect 3 "$KL" bench "$TMP/crashing_base" --shape 1M $FAST
grep -q '^kl: baseline rejected: CRASHED: ' "$TMP/err" && ok || bad "bench: a crashing baseline not named"
expect 2 "$KL" bench "$SRC/cases/host_saxpy" --shape nope
expect 2 "$KL" bench "$SRC/cases/host_saxpy" --seed abc
expect 2 "$KL" compare "$SRC/cases/host_saxpy"
# a decision gets room to be made: with $FAST's 200 ms a loaded machine
# under ASan gave 3 samples, one candidate sample stretched 3x by
# preemption, and an interval [0.77, 22] ("same"); at the default 2 s a
# fresh-clone CI run at load average 5.5 got 8 samples and [0.77, 21.3].
# The cap sizes the placement blocks, so a larger one costs time on any
# machine (idle, 2.7 s at 2 s and 6.6 s at 8 s): 5 s. Hot: the samples
# skip the cache flush, so the cap holds more of them (the decision, not
# the cold state, is what this checks).
expect 0 "$KL" compare "$SRC/cases/host_matmul" --candidate "$SRC/cases/host_matmul/candidates/ikj_blocked.c" --shape n256 --json --time-cap-ms 5000 --hot
python3 - "$TMP/out" <<'PY' && ok || bad "compare --json: faster"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["shapes"][0]
assert s["decision"] == "faster" and s["speedup"] > 2 and s["speedup_ci"][0] > 1, s
assert d["objective"]["decision"] == "faster"
PY
if ! "$KL" bench "$SRC/cases/vector_add" --time-cap-ms 100 >"$TMP/out" 2>"$TMP/err"; then
  # without a GPU: a clear runtime failure, exit 1
  expect 1 "$KL" bench "$SRC/cases/vector_add"
  grep -q 'no CUDA device is available' "$TMP/err" && ok || bad "no-device message"
fi

# a CUDA candidate that does not compile: nvcc names its own line, exit 3
# (the compiler runs before any GPU is needed)
if command -v nvcc >/dev/null 2>&1; then
  printf '// broken\nextern "C" __global__ void vector_add(float *c, const float *a,\n    const float *b, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) c[i] = a[i] + bb[i];\n}\n' >"$TMP/bad.cu"
  expect 3 "$KL" bench "$SRC/cases/vector_add" --candidate "$TMP/bad.cu"
  grep -q 'COMPILE_ERROR: bad.cu(5): error' "$TMP/err" && ok || bad "nvcc error not at the candidate line"
fi

# kl profile: the catalog, set specs, host counters or a note
expect 0 "$KL" help profile
expect 0 "$KL" profile --list-metrics
grep -q '^dram_throughput_pct ' "$TMP/out" && ok || bad "catalog lacks dram_throughput_pct"
expect 0 "$KL" profile --list-metrics --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d) > 60 and sum(m["standard"] and m["source"] == "cupti" for m in d) >= 50' "$TMP/out" && ok || bad "catalog JSON"
expect 2 "$KL" profile
expect 2 "$KL" profile "$SRC/cases/vector_add" --set l2_hit_rate_pc
grep -q "unknown metric 'l2_hit_rate_pc' (did you mean 'l2_hit_rate_pct'?)" "$TMP/err" && ok || bad "did-you-mean for --set"
expect 0 "$KL" profile "$SRC/cases/host_saxpy" --shape 1M --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["shapes"][0]["profile"]; assert p["backend"] == "host" and p["time_us"] > 0 and (p.get("note") or p["bottleneck"] != "unknown")' "$TMP/out" && ok || bad "host profile JSON"
expect 0 "$KL" profile "$SRC/cases/host_saxpy" --shape 1M
grep -q '^  verdict: ' "$TMP/out" && ok || bad "profile text lacks the verdict"

# kl rules: lint, list, recorded metrics (no GPU needed), a host case
R=$SRC/tests/rules
expect 0 "$KL" help rules
expect 0 "$KL" rules --list
grep -q '^uncoalesced_stores  *high  *memory  *store_sector_ratio >= 1.25$' "$TMP/out" && ok || bad "rules --list"
grep -q '^- severe_memory_bound: ' "$TMP/out" && ok || bad "rules --list lacks the skill catalog"
expect 0 "$KL" rules --list --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["rules"]) >= 23 and len(d["skills"]) >= 23' "$TMP/out" && ok || bad "rules --list --json"
expect 0 "$KL" rules --lint "$SRC/share/kernlab/rules/memory.yaml"
has "$TMP/out" "$SRC/share/kernlab/rules/memory.yaml: ok"
expect 2 "$KL" rules --lint "$R/bad/names.yaml" "$R/bad/syntax.yaml"
has "$TMP/err" "$R/bad/names.yaml:9:5: unknown metric 'dram_throughput_pc' (did you mean 'dram_throughput_pct'?)"
has "$TMP/err" "$R/bad/syntax.yaml:10:21: action: bad format '.1q' (expected [width][.precision][f|e|g|d|%], as in .1f)"
has "$TMP/err" "                      ^"
expect 2 "$KL" rules --lint
expect 2 "$KL" rules
expect 2 "$KL" rules --metrics "$R/fixtures/h200/vector_add.json" --candidate x.cu
expect 0 "$KL" rules --metrics "$R/fixtures/h200/transpose_f32.json" --shape square4k
grep -q '^shape square4k: memory_bound: ' "$TMP/out" && ok || bad "rules text lacks the verdict"
sed -n 2p "$TMP/out" | grep -q '^  high   uncoalesced_stores: Global stores touch 8.00x the sectors' && ok || bad "naive transpose: uncoalesced stores first"
expect 0 "$KL" rules --metrics "$R/fixtures/h200/vector_add.json" --json
python3 -c '
import json,sys
d = json.load(open(sys.argv[1]))
s = {x["shape"]: x for x in d["shapes"]}
assert s["64M"]["bottleneck"] == "memory_bound"
assert "severe_memory_bound" in [f["id"] for f in s["64M"]["fired"]]
assert s["1M"]["bottleneck"] == "launch_bound" and s["1M"]["not_evaluated"] == []
' "$TMP/out" && ok || bad "rules --json over vector_add"
expect 0 "$KL" rules --metrics "$R/fixtures/h200/vector_add.json" --shape 64M --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["shape"] == "64M" and set(d) >= {"bottleneck","fired","not_evaluated"}' "$TMP/out" && ok || bad "rules --json, one shape"
expect 2 "$KL" rules --metrics "$R/fixtures/h200/vector_add.json" --shape 2M
printf '{"dram__throughput.avg.pct_of_peak_sustained_elapsed": 85,\n "sm__throughput.avg.pct_of_peak_sustained_elapsed": "x"}\n' >"$TMP/flat.json"
expect 2 "$KL" rules --metrics "$TMP/flat.json"
has "$TMP/err" "$TMP/flat.json:2:2: metric 'sm__throughput.avg.pct_of_peak_sustained_elapsed' is not a number (a flat object maps metric names to values)"
printf '{"dram__throughput.avg.pct_of_peak_sustained_elapsed": 85}\n' >"$TMP/flat.json"
expect 0 "$KL" rules --metrics "$TMP/flat.json"
grep -q '^  not evaluated: severe_memory_bound (missing: l2_throughput_pct, sm_busy_pct)$' "$TMP/out" && ok || bad "flat metrics: not evaluated, never passed"
# Nsight Compute's exports (tests/profile/fixtures/ncu_h100)
N=$SRC/tests/profile/fixtures/ncu_h100
expect 0 "$KL" rules --metrics "$N/llmc_layernorm2.raw.csv"
grep -c '^kernel [a-z_]*: ' "$TMP/out" | grep -qx 3 && ok || bad "three kernels, three diagnoses"
expect 0 "$KL" rules --metrics "$N/llmc_layernorm2.raw.csv" --kernel rstd_kernel --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["kernel"] == "rstd_kernel" and d["bottleneck"] == "latency_bound"' "$TMP/out" && ok || bad "--kernel picks one"
expect 0 "$KL" rules --metrics "$N/llmc_layernorm2.raw.csv" --launch 2
grep -q '^kernel normalization_kernel: ' "$TMP/out" && ok || bad "--launch picks ncu's ID"
expect 2 "$KL" rules --metrics "$N/llmc_layernorm2.raw.csv" --kernel nope
has "$TMP/err" "kl: $N/llmc_layernorm2.raw.csv: no profile for kernel 'nope'"
expect 2 "$KL" rules --kernel x
expect 0 "$KL" rules "$SRC/cases/transpose_f32" --shape square4k --metrics "$N/transpose_f32.square4k.details.csv"
grep -q "^         names kernlab's uncoalesced_stores, not evaluated on these metrics$" "$TMP/out" && ok || bad "ncu's advice names what the page cannot evaluate"
printf '"ID","Process ID","Kernel Name","gpu__time_duration.sum"\n"","","","ns"\n"0","1","k","12"x\n' >"$TMP/bad.csv"
expect 2 "$KL" rules --metrics "$TMP/bad.csv"
has "$TMP/err" "$TMP/bad.csv:3:17: text after a quoted field's closing quote"
expect 2 "$KL" rules --metrics "$TMP/absent.ncu-rep"
expect 0 "$KL" rules "$SRC/cases/transpose_f32" --shape square4k --metrics "$N/transpose_f32.square4k.raw.csv"
grep -q '^  medium far_from_roofline: The kernel takes 293.9 us' "$TMP/out" && ok || bad "an ncu export gets the case's roofline"
printf -- '- id: low_ipc\n  severity: high\n  when: ipc < 0.9\n  finding: "mine {ipc:.2f}"\n  action: none\n' >"$TMP/mine.yaml"
expect 0 "$KL" rules --metrics "$R/fixtures/h200/vector_add.json" --shape 64M --rules "$TMP/mine.yaml"
grep -q '^  high   low_ipc: mine 0.1[0-9]$' "$TMP/out" && ok || bad "--rules replaces a default rule"
mkdir -p "$TMP/ruled" && cp -r "$SRC/cases/host_saxpy/." "$TMP/ruled/"
echo "rules: mine.yaml" >>"$TMP/ruled/case.yaml"
cp "$R/bad/names.yaml" "$TMP/ruled/mine.yaml"
expect 2 "$KL" check "$TMP/ruled"
has "$TMP/err" "$TMP/ruled/mine.yaml:9:5: unknown metric 'dram_throughput_pc' (did you mean 'dram_throughput_pct'?)"
cp "$TMP/mine.yaml" "$TMP/ruled/mine.yaml"
expect 0 "$KL" check "$TMP/ruled"
expect 0 "$KL" rules "$TMP/ruled" --list
grep -q "^low_ipc  *high " "$TMP/out" && ok || bad "the case's rule replaces the default"
expect 0 "$KL" rules "$SRC/cases/host_saxpy" --shape 1M
grep -q '^  not evaluated: severe_memory_bound (missing: ' "$TMP/out" && ok || bad "host case: device rules not evaluated"

# kl prompt: every bundled case, text and JSON; recorded profiles
expect 0 "$KL" help prompt
for c in "$SRC"/cases/*/; do
  expect 0 "$KL" prompt "$c"
  grep -q '^=== user block (iteration 1) ===$' "$TMP/out" && ok || bad "kl prompt $c: no user block"
  grep -q '^total  *[0-9]* tokens$' "$TMP/out" && ok || bad "kl prompt $c: no sizes"
done
# a python case's guide to kernel languages: the table, and the idioms of
# the language its module imports (only those); none for a CUDA case
expect 0 "$KL" prompt "$SRC/cases/add_cute"
grep -q '^| CuTe DSL | threads and warps' "$TMP/out" && ok || bad "kl prompt add_cute: no language table"
grep -q '^- CuTe DSL (`import cutlass.cute as cute`)' "$TMP/out" && ok || bad "kl prompt add_cute: no CuTe DSL idioms"
grep -q '^- cuTile (' "$TMP/out" && bad "kl prompt add_cute: cuTile idioms too" || ok
expect 0 "$KL" prompt "$SRC/cases/softmax_cutile"
grep -q '^- cuTile (`import cuda.tile as ct`)' "$TMP/out" && ok || bad "kl prompt softmax_cutile: no cuTile idioms"
grep -q '^- CuTe DSL (' "$TMP/out" && bad "kl prompt softmax_cutile: CuTe DSL idioms too" || ok
expect 0 "$KL" prompt "$SRC/cases/vector_add"
grep -q '^## Kernel languages' "$TMP/out" && bad "kl prompt vector_add: a language guide in a CUDA case" || ok
expect 0 "$KL" prompt "$SRC/cases/transpose_f32" --metrics "$R/fixtures/h200/transpose_f32.json" --iteration 3 --json
python3 -c '
import json,sys
d = json.load(open(sys.argv[1]))
assert "uncoalesced_stores" in d["user"] and "# Iteration 3" in d["user"]
assert "**Signal**" in d["system"] and d["tokens"] == sum(s["tokens"] for s in d["sections"])
assert {s["name"] for s in d["sections"]} >= {"rules", "best_kernel", "findings", "attempts"}
' "$TMP/out" && ok || bad "kl prompt --json"
expect 2 "$KL" prompt "$SRC/cases/transpose_f32" --iteration 0
expect 2 "$KL" prompt

# kl mcp and kl propose: their usage errors (tests/mcp and tests/run
# drive them through whole sessions)
expect 0 "$KL" help mcp
expect 2 "$KL" mcp --bogus
has "$TMP/err" "kl: unexpected argument '--bogus'"
expect 0 "$KL" help propose
expect 2 "$KL" propose
expect 2 "$KL" propose "$SRC/cases/host_saxpy"
expect 2 "$KL" propose "$SRC/cases/host_saxpy" --stop --verdict x
expect 2 "$KL" propose "$SRC/cases/host_saxpy" --verdict x --wait soon
expect 1 "$KL" propose "$SRC/cases/host_saxpy" --verdict no-such-proposal

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
