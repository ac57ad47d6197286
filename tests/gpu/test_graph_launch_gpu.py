#!/usr/bin/env python3
"""Graph-launched timing on a CUDA device (ctest label gpu; exit 77, skipped,
without one): kl bench and kl compare with --launch graph, and the case key.

  timed     vector_add's baseline benched from a stream and from a CUDA
            graph: both OK, the report says "launch": "graph"; a launcher
            candidate with two kernels and a scratch workspace (the split
            reduction) and one that forks a stream from ctx->stream and
            joins it back are captured, checked and compared under graphs
  refused   a launcher on the legacy default stream (llm.c's way): CRASHED,
            the reason names the legacy stream and ctx->stream (from a
            stream it is timed, OK); one on the
            per-thread default stream (its kernel runs at capture, outside
            the graph): CRASHED, "captured 0 of the 1 kernel"
  cheat     a launcher that launches nothing while its stream is captured:
            CHEAT, gate timed_work; one that allocates while captured:
            CHEAT, gate launch_contract (the capture is a judged launch)
  idleness  the bench's gpu_usage: NVML read the device (its UUID) before
            and after the timing, the worker's process among those on it
  both      --launch both: CUB's two-kernel reduction compared from the
            stream and from a graph in one command, every shape with both
            times and decisions; the text output's graph table; a launcher
            a graph cannot hold is CRASHED under both too
  case key  a copy of vector_add with `timing: {launch: graph}` benches
            under graphs without the flag; --launch stream overrides it
  tracing   the CUPTI records each shape was timed with: KERNEL records
            (not instrumented) for a launch of one kernel on one stream,
            from a stream or a graph; CONCURRENT_KERNEL records for a graph
            of several kernels on one stream, even a candidate's (KERNEL
            records carry no times for them), and for a kernel benched
            alone that forks a stream; a kernel that forks only at 1M
            switches kinds between the shapes of one bench, and back;
            compared, a candidate's own fork does not switch both sides
            (it is serialised, from a stream or a graph, and the text says
            so); KERNLAB_TRACE pins a kind, and refuses kernel records
            for a graph of two kernels and a kind it does not know
usage: test_graph_launch_gpu.py KL SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, require_cuda, scratch  # noqa: E402

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-graph-gpu-")
require_cuda()
HERE = os.path.join(SRC, "tests", "gpu", "graph")


def kl(*args, env=None):
    p = subprocess.run([KL] + list(args) + ["--json", "--time-cap-ms", "300"],
                       capture_output=True, text=True, env=env or ENV,
                       timeout=600)
    print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = {}
    return p.returncode, doc, p.stderr


def medians(doc):
    return ["%s %.2f us" % (s.get("name"), s.get("median_us") or 0)
            for s in doc.get("shapes", [])]


VADD = SRC + "/cases/vector_add"
rc, stream, err = kl("bench", VADD, "--launch", "stream")
check(rc == 0 and stream.get("verdict") == "OK" and "launch" not in stream,
      "vector_add from a stream: OK, no launch key: %d %s" % (rc, err[-400:]))
rc, graph, err = kl("bench", VADD, "--launch", "graph")
check(rc == 0 and graph.get("verdict") == "OK" and
      graph.get("launch") == "graph" and
      all((s.get("median_us") or 0) > 0 for s in graph.get("shapes", [])),
      "vector_add from a graph: OK, launch graph: %d %s" % (rc, err[-400:]))
# the GPU's idleness around the timing, read through NVML (issue 49)
usage = stream.get("gpu_usage") or {}
before, after = usage.get("before") or {}, usage.get("after") or {}
check(usage.get("uuid", "").startswith("GPU-") and
      before.get("processes", 0) >= 1 and after.get("processes", 0) >= 1 and
      before.get("mem_total_mib", 0) > 0,
      "gpu_usage read before and after the timing, the worker among the "
      "processes: %s" % usage)
print("  gpu_usage:", json.dumps(usage))
# launches on one stream are timed with KERNEL records (issue 46, part 2)
for what, doc in (("stream", stream), ("graph", graph)):
    kinds = [s.get("tracing") for s in doc.get("shapes", [])]
    check(kinds and all(k == "kernel" for k in kinds),
          "vector_add from a %s: KERNEL records every shape: %s" % (what, kinds))
print("  stream:", medians(stream))
print("  graph: ", medians(graph))
# KERNLAB_TRACE pins the kind (docs/integrity.md): concurrent records for a
# launch KERNEL records would time; kernel records refused where they carry
# no times (a graph of two kernels); any other value refused, named
rc, doc, err = kl("bench", VADD, "--shape", "1M",
                  env=dict(ENV, KERNLAB_TRACE="concurrent"))
kinds = [s.get("tracing") for s in doc.get("shapes", [])]
check(rc == 0 and kinds == ["concurrent"],
      "KERNLAB_TRACE=concurrent: concurrent records: %d %s %s"
      % (rc, kinds, err[-300:]))
rc, doc, err = kl("compare", SRC + "/cases/reduce_sum_f32", "--candidate",
                  SRC + "/cases/reduce_sum_f32/candidates/split_two_kernels.cu",
                  "--launch", "graph", env=dict(ENV, KERNLAB_TRACE="kernel"))
said = err + json.dumps(doc)
check(rc != 0 and "KERNLAB_TRACE=kernel: KERNEL records carry no times" in said,
      "KERNLAB_TRACE=kernel refuses a graph of two kernels: %d %s"
      % (rc, said[-400:]))
rc, doc, err = kl("bench", VADD, "--shape", "1M",
                  env=dict(ENV, KERNLAB_TRACE="instrumented"))
said = err + json.dumps(doc)
check(rc != 0 and "KERNLAB_TRACE 'instrumented': expected kernel or "
      "concurrent" in said,
      "KERNLAB_TRACE=instrumented is refused, named: %d %s" % (rc, said[-400:]))

for case, cand in (("reduce_sum_f32",
                    "cases/reduce_sum_f32/candidates/split_two_kernels.cu"),
                   ("vector_add", "tests/gpu/graph/forked_streams.cu")):
    rc, doc, err = kl("compare", SRC + "/cases/" + case, "--candidate",
                      SRC + "/" + cand, "--launch", "graph")
    check(rc == 0 and doc.get("verdict") == "OK" and
          doc.get("launch") == "graph",
          "%s under graphs: OK: %d %s %s" % (cand, rc, doc.get("reason"),
                                             err[-400:]))
    print("  ", medians(doc))
    # a graph of several kernels on one stream is timed with
    # CONCURRENT_KERNEL records (KERNEL records carry no times for its
    # kernels); the forked graph's branches are timed on KERNEL records,
    # which serialise them (a candidate's own streams do not switch)
    want = "serialised" if "forked" in cand else "concurrent"
    kinds = [s.get("tracing") for s in doc.get("shapes", [])]
    check(kinds and all(k == want for k in kinds),
          "%s under graphs: %s records: %s" % (cand, want, kinds))

# the records' kind follows each shape's launch, in one worker: benched
# alone, the kernel forks at 1M (concurrent records), then runs on one
# stream at 16M and 64M (back to kernel records)
FORK_SMALL = HERE + "/forked_below_2m.cu"
rc, doc, err = kl("bench", VADD, "--candidate", FORK_SMALL)
kinds = {s.get("name"): s.get("tracing") for s in doc.get("shapes", [])}
check(rc == 0 and kinds == {"1M": "concurrent", "16M": "kernel",
                            "64M": "kernel"},
      "bench forked_below_2m: concurrent at 1M, kernel above: %d %s %s"
      % (rc, kinds, err[-400:]))
print("   bench forked_below_2m:", medians(doc), kinds)
# compared, the candidate's own second stream does not turn on the
# instrumenting records for both sides (a fork of a trivial kernel would
# then buy it the baseline's instrumentation): it is serialised, and the
# text output says its overlap is not counted
rc, doc, err = kl("compare", VADD, "--candidate", FORK_SMALL)
kinds = {s.get("name"): s.get("tracing") for s in doc.get("shapes", [])}
check(rc == 0 and kinds == {"1M": "serialised", "16M": "kernel",
                            "64M": "kernel"},
      "compare forked_below_2m: serialised at 1M, kernel above: %d %s %s"
      % (rc, kinds, err[-400:]))
print("   compare forked_below_2m:", medians(doc), kinds)
p = subprocess.run([KL, "compare", VADD, "--candidate", FORK_SMALL,
                    "--shape", "1M", "--time-cap-ms", "300"],
                   capture_output=True, text=True, env=ENV, timeout=600)
check(p.returncode == 0 and "1M: the candidate's launch ran work on two "
      "streams" in p.stdout and "overlap is not counted" in p.stdout,
      "compare forked_below_2m, text: the serialised overlap named: %d %s"
      % (p.returncode, p.stdout[-600:]))

for cand, verdict, words in (
        ("legacy_stream.cu", "CRASHED", ["legacy default stream",
                                         "ctx->stream"]),
        ("per_thread_stream.cu", "CRASHED", ["captured 0 of the 1 kernel"]),
        ("skips_when_captured.cu", "CHEAT", ["skipped"]),
        ("alloc_when_captured.cu", "CHEAT", ["the launch called cudaMalloc"])):
    rc, doc, err = kl("compare", VADD, "--candidate", HERE + "/" + cand,
                      "--launch", "graph")
    reason = doc.get("reason") or ""
    check(rc == 3 and doc.get("verdict") == verdict and
          all(w in reason for w in words),
          "%s: %s, saying %s: %d %s %s" % (cand, verdict, words, rc,
                                           doc.get("verdict"), reason[:400]))
    if verdict == "CHEAT":
        gate = "timed_work" if cand.startswith("skips") else "launch_contract"
        check(doc.get("gate") == gate,
              "%s: gate %s: %s" % (cand, gate, doc.get("gate")))
    print("   %s: %s" % (cand, reason[:300]))
    # launched from a stream, the legacy stream's launch is ordered with
    # the harness's (a blocking stream) and timed as it runs
    if cand == "legacy_stream.cu":
        rc, doc, err = kl("compare", VADD, "--candidate", HERE + "/" + cand,
                          "--launch", "stream")
        check(rc == 0 and doc.get("verdict") == "OK",
              "%s from a stream: OK: %d %s" % (cand, rc, doc.get("reason")))

# --launch both (issue 46, part 3): each shape timed from the stream, which
# decides, and from a graph beside it, in one command
rc, doc, err = kl("compare", SRC + "/cases/reduce_sum_f32", "--candidate",
                  SRC + "/cases/reduce_sum_f32/candidates/cub_device_reduce.cu",
                  "--launch", "both")
shapes = doc.get("shapes", [])
check(rc == 0 and doc.get("verdict") == "OK" and doc.get("launch") == "both"
      and shapes and
      all((s.get("median_us") or 0) > 0 and s.get("decision") and
          (s.get("graph") or {}).get("median_us", 0) > 0 and
          ((s.get("graph") or {}).get("baseline") or {}).get("median_us", 0)
          > 0 and (s.get("graph") or {}).get("decision") in
          ("faster", "slower", "same") for s in shapes),
      "compare --launch both: the stream's times and a graph's beside, every "
      "shape: %d %s %s" % (rc, doc.get("reason"), err[-400:]))
for s in shapes:
    g = s.get("graph") or {}
    print("   both %s: stream %.2f us (%s, %s records), graph %.2f us (%s, "
          "%s records)" % (s.get("name"), s.get("median_us") or 0,
                           s.get("decision"), s.get("tracing"),
                           g.get("median_us") or 0, g.get("decision"),
                           g.get("tracing")))
# each pass names its records: CUB's two kernels on one stream are timed
# with KERNEL records, their graph with CONCURRENT_KERNEL records
check(shapes and all(s.get("tracing") == "kernel" and
                     (s.get("graph") or {}).get("tracing") == "concurrent"
                     for s in shapes),
      "compare --launch both: each pass names its records: %s"
      % [(s.get("tracing"), (s.get("graph") or {}).get("tracing"))
         for s in shapes])
p = subprocess.run([KL, "bench", VADD, "--launch", "both", "--time-cap-ms",
                    "300"], capture_output=True, text=True, env=ENV,
                   timeout=600)
check(p.returncode == 0 and "from a CUDA graph" in p.stdout and
      "stream/graph" in p.stdout and
      "launched on the stream and from a CUDA graph" in p.stdout,
      "bench --launch both, text: the graph's table under the stream's: "
      "%d %s %s" % (p.returncode, p.stdout[-600:], p.stderr[-300:]))
print(p.stdout)
rc, doc, err = kl("compare", VADD, "--candidate", HERE + "/legacy_stream.cu",
                  "--launch", "both")
check(rc == 3 and doc.get("verdict") == "CRASHED" and
      "legacy default stream" in (doc.get("reason") or ""),
      "--launch both refuses a launcher a graph cannot hold: %d %s %s"
      % (rc, doc.get("verdict"), (doc.get("reason") or "")[:300]))

keyed = os.path.join(TMP, "vector_add_graph")
shutil.copytree(VADD, keyed, ignore=shutil.ignore_patterns("runs", "*.jsonl"))
with open(os.path.join(keyed, "case.yaml"), "a") as f:
    f.write("timing: {launch: graph}\n")
rc, doc, err = kl("bench", keyed)
check(rc == 0 and doc.get("launch") == "graph",
      "timing.launch: graph benches under graphs: %d %s" % (rc, err[-300:]))
rc, doc, err = kl("bench", keyed, "--launch", "stream")
check(rc == 0 and "launch" not in doc,
      "--launch stream overrides the case: %d %s" % (rc, err[-300:]))

print("graph launch: %d failure(s)" % len(FAILS))
sys.exit(1 if FAILS else 0)
