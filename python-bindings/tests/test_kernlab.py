"""The Python bindings against the built (or installed) library."""
import ctypes
import json
import os
import subprocess

import pytest

import kernlab


def test_version_and_features():
    assert kernlab.__version__ == kernlab.version()
    assert kernlab.version().count(".") == 2
    assert set(kernlab.features()) == {"cuda", "cupti", "http"}


def test_struct_layout_matches_the_c_headers(tmp_path, src):
    """Every mirrored structure has the C compiler's size and offsets."""
    inc = os.environ.get("KERNLAB_INCLUDE_DIR") or os.path.join(src,
                                                                "include")
    lines = ['#include <stddef.h>', '#include <stdio.h>',
             '#include <kernlab/kernlab.h>', 'int main(void) {']
    for cname, cls in kernlab.STRUCTS.items():
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (cname, cname))
        for field, _ in cls._fields_:
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));'
                         % (cname, field, cname, field))
    lines.append("return 0; }")
    (tmp_path / "layout.c").write_text("\n".join(lines))
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-I", inc,
                    str(tmp_path / "layout.c"), "-o", str(tmp_path / "l")],
                   check=True)
    out = subprocess.run([str(tmp_path / "l")], check=True,
                         capture_output=True, text=True).stdout
    want = dict(line.split() for line in out.splitlines())
    for cname, cls in kernlab.STRUCTS.items():
        assert int(want[cname]) == ctypes.sizeof(cls), cname
        for field, _ in cls._fields_:
            assert int(want["%s.%s" % (cname, field)]) == \
                getattr(cls, field).offset, "%s.%s" % (cname, field)


def test_versions_match_the_c_headers(tmp_path, src):
    """The ABI and each options structure's version the bindings ask the
    init functions for are the headers' (a new field raises the header's
    version; this fails until the bindings follow)."""
    inc = os.environ.get("KERNLAB_INCLUDE_DIR") or os.path.join(src,
                                                                "include")
    lines = ['#include <stdio.h>', '#include <kernlab/kernlab.h>',
             'int main(void) {',
             'printf("abi %u\\n", (unsigned)KL_ABI_VERSION);']
    for cname in kernlab._VERSIONS:
        macro = cname.upper() + "_VERSION"
        lines.append('printf("%s %%u\\n", (unsigned)%s);' % (cname, macro))
    lines.append("return 0; }")
    (tmp_path / "v.c").write_text("\n".join(lines))
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-I", inc,
                    str(tmp_path / "v.c"), "-o", str(tmp_path / "v")],
                   check=True)
    out = subprocess.run([str(tmp_path / "v")], check=True,
                         capture_output=True, text=True).stdout
    want = dict(line.split() for line in out.splitlines())
    assert int(want.pop("abi")) == kernlab._ABI
    assert {k: int(v) for k, v in want.items()} == kernlab._VERSIONS
    # every one of them is filled by the library, never by hand
    for cname in kernlab._VERSIONS:
        assert kernlab._options(cname).version == kernlab._VERSIONS[cname]
    with pytest.raises(kernlab.KernlabError) as ei:
        o = kernlab._INITS["kl_run_options"]()
        kernlab._check(kernlab._lib.kl_run_options_init(ctypes.byref(o), 99))
    assert ei.value.name == "EINVALID" and "version 99" in ei.value.message


def test_load_case(src):
    with kernlab.load_case(os.path.join(src, "cases", "vector_add")) as case:
        assert case.name == "vector_add"
        assert case.backend == "cuda"
        assert [s["name"] for s in case.shapes] == ["1M", "16M", "64M"]
        assert case.shapes[0]["launch"]["grid"] == [4096, 1, 1]


def test_tunable_settings_change_the_launch(src):
    gemm = os.path.join(src, "cases", "gemm_f32")
    with kernlab.load_case(gemm) as a, \
            kernlab.load_case(gemm, tunables=["BLOCK=32"]) as b:
        assert a.shapes[0]["launch"]["block"] != \
            b.shapes[0]["launch"]["block"]


def test_errors_carry_every_diagnostic(src):
    bad = os.path.join(src, "tests", "case", "bad", "unknown_key")
    with pytest.raises(kernlab.KernlabError) as ei:
        kernlab.load_case(bad)
    e = ei.value
    assert e.name == "EINVALID" and e.code == -3
    assert len(e.errors) == 4
    assert (e.errors[1]["line"], e.errors[1]["column"]) == (4, 1)
    assert e.path.endswith("case.yaml") and e.line == 1 and e.column > 0
    assert kernlab.check_case(os.path.join(src, "cases", "host_saxpy")) == []
    with pytest.raises(kernlab.KernlabError) as ei:
        kernlab.load_case("/nonexistent")
    assert ei.value.name == "ENOTFOUND"


def test_expressions():
    assert kernlab.eval_expr("ceil_div(1000, 256)") == 4
    assert kernlab.eval_expr("7 / 2") == 3.5
    with pytest.raises(kernlab.KernlabError) as ei:
        kernlab.eval_expr("1 +")
    assert ei.value.column == 4


def test_new_case(tmp_path):
    path = kernlab.new_case("py_case", "cuda", tmp_path)
    assert kernlab.check_case(path) == []
    with pytest.raises(kernlab.KernlabError) as ei:
        kernlab.new_case("py_case", "cuda", tmp_path)
    assert ei.value.name == "EEXISTS"


def test_harness(src):
    with kernlab.load_case(os.path.join(src, "cases", "host_saxpy")) as c:
        text = c.harness()
        assert "KERNEL SECTION" in text and "form: standalone" in text
        assert "form: plugin" in c.harness(plugin=True)


def test_bench_has_the_fields_of_the_cli(src):
    case_dir = os.path.join(src, "cases", "host_saxpy")
    with kernlab.load_case(case_dir) as c:
        rep = c.bench(shape="1M", time_cap_ms=100, seed=7)
    kl = os.environ.get("KL", os.path.join(src, "build", "bin", "kl"))
    cli = json.loads(subprocess.run(
        [kl, "bench", case_dir, "--shape", "1M", "--time-cap-ms", "100",
         "--seed", "7", "--json"], capture_output=True, text=True,
        check=True).stdout)
    assert rep["verdict"] == "OK" == cli["verdict"]
    assert set(rep) == set(cli)
    assert set(rep["shapes"][0]) == set(cli["shapes"][0])
    assert rep["shapes"][0]["median_us"] > 0


def test_compare_rejects_a_wrong_candidate(src):
    case_dir = os.path.join(src, "cases", "host_saxpy")
    with open(os.path.join(case_dir, "kernel.c")) as f:
        good = f.read()
    wrong = good.replace("a * x[i] + y[i]", "a * x[i] - y[i]")
    assert wrong != good
    with kernlab.load_case(case_dir) as c:
        assert c.compare(wrong, shape="1M", time_cap_ms=100)["verdict"] == \
            "INCORRECT"
        same = c.compare(good, shape="1M", time_cap_ms=200)
        assert same["verdict"] == "OK" and "objective" in same


def test_rules_and_prompt_from_recorded_profiles(src):
    fixture = os.path.join(src, "tests", "rules", "fixtures", "h200",
                           "transpose_f32.json")
    with open(fixture) as f:
        text = f.read()
    with kernlab.Profiles(text) as pl:
        assert "square4k" in pl.names()
    with kernlab.load_case(os.path.join(src, "cases", "transpose_f32")) as c:
        d = c.rules(text)
        sq = [s for s in d["shapes"] if s["shape"] == "square4k"][0]
        assert sq["fired"][0]["id"] == "uncoalesced_stores"
        p = c.prompt(text, iteration=2)
        assert "uncoalesced" in p["system"] and p["tokens"] > 0
        with pytest.raises(kernlab.KernlabError) as ei:
            c.rules("{not json")
        assert ei.value.name == "EINVALID"
    with kernlab.Rules() as rs:
        assert len(rs) >= 20
        # Nsight Compute's exports: one profile per kernel, ncu's advice
        ncu = os.path.join(src, "tests", "profile", "fixtures", "ncu_h100")
        with kernlab.Profiles.from_file(
                os.path.join(ncu, "llmc_layernorm2.raw.csv")) as pl:
            assert pl.names() == ["mean_kernel", "rstd_kernel",
                                  "normalization_kernel"]
            assert pl.launches() == ["0", "1", "2"]
        d = rs.evaluate(kernlab.Profiles.from_file(
            os.path.join(ncu, "transpose_f32.square4k.details-all.csv")))
        advice = d["shapes"][0]["ncu_advice"]
        assert advice[0]["type"] == "OPT"
        assert {a["agrees"] for a in advice} >= {"stall_drain"}
    bad = os.path.join(src, "tests", "rules", "bad")
    with pytest.raises(kernlab.KernlabError) as ei:
        kernlab.Rules(files=[os.path.join(bad, sorted(os.listdir(bad))[0])])
    assert ei.value.line > 0 and ei.value.errors


def test_reply_parsing(src):
    with kernlab.load_case(os.path.join(src, "cases", "host_saxpy")) as c:
        r = c.parse_reply("no code here")
        assert not r["ok"] and r["reason"]


def test_run_with_a_python_proposer(small_matmul):
    """A proposer in Python drives the loop: it proposes the i-k-j order,
    then a kernel that does not compile, then has nothing left."""
    events, calls = [], []

    def propose(best, iteration):
        calls.append(iteration)
        if iteration == 1:
            # the naive branch off: BLOCK=0 takes the i-k-j branch
            return best.replace("#if BLOCK == 0 && LOOP_ORDER == 0",
                                "#if 0"), "i-k-j order"
        if iteration == 2:
            return best + "\nthis is not C;\n", "typo"
        return None

    with kernlab.load_case(small_matmul) as c:
        # 1.5 s a comparison and shape: the i-k-j order's acceptance must
        # not rest on a quiet machine (at 300 ms a CI run beside a CPU hog
        # rejected it). Hot: the flow is checked, not cold timings, and a
        # cold sample's flush reads twice the last-level cache
        s = c.run(propose=propose, on_event=events.append, profile="",
                  time_cap_ms=1500, iterations=5, hot=True)
        assert s["proposer"] == "custom" and s["stop_reason"] == "exhausted"
        assert calls == [1, 2, 3]
        assert s["verdicts"]["ACCEPTED"] == 1
        assert s["verdicts"]["COMPILE_ERROR"] == 1
        done = [e for e in events if e["phase"] == "done"]
        assert [e["outcome"] for e in done] == ["BASELINE", "ACCEPTED",
                                                "COMPILE_ERROR"]
        # the evaluations' own steps come through while they measure: the
        # baseline's and the accepted one's checks, timing and roofline
        # gate, in order; the typo stops at its build
        steps = {}
        for e in events:
            if e["phase"] == "measure" and e["step"]:
                steps.setdefault(e["iteration"], []).append(e["step"])
        measured = ["build", "worker", "load", "checks", "timing", "gates"]
        assert steps[0] == measured, steps
        assert steps[1] == measured, steps
        assert steps[2] == ["build"], steps
        assert all(e["step"] is None for e in events
                   if e["phase"] in ("propose", "done"))
        sols = c.solutions()
        assert [r["verdict"] for r in sols] == ["BASELINE", "ACCEPTED",
                                                "COMPILE_ERROR"]
        # hot=True reached the worker: the timed records say so
        assert [r["measurement"]["cold"] for r in sols
                if r.get("measurement")] == [False, False]
        # and a resume keeps it; asked to sample otherwise, it refuses
        with pytest.raises(kernlab.KernlabError, match="cannot be resumed"):
            c.run(propose=propose, resume=s["run"], time_cap_ms=900,
                  profile="")
        assert sols[1]["memo"] == "i-k-j order"
        best, info = c.best()
        assert "#if 0" in best and info["verdict"] == "ACCEPTED"
        assert c.history()["runs"][0]["run"] == s["run"]
        md = c.report()
        assert "## Per shape" in md and "i-k-j order" in md
        assert c.report(format="html").startswith("<!DOCTYPE html>")


def test_proposer_exceptions_stop_the_run_and_are_raised(small_matmul):
    def propose(best, iteration):
        raise ValueError("my proposer broke")

    with kernlab.load_case(small_matmul) as c:
        with pytest.raises(ValueError, match="my proposer broke"):
            c.run(propose=propose, profile="", time_cap_ms=200, hot=True)
        assert [r["verdict"] for r in c.solutions()] == ["BASELINE"]
        assert c.history()["runs"][0]["stop_reason"] == "proposer_error"


def test_ledger_reader_locates_a_bad_line(tmp_path):
    p = tmp_path / "l.jsonl"
    p.write_text('{"a": 1}\n{"b": \n{"c": 3}\n')
    with pytest.raises(kernlab.KernlabError) as ei:
        kernlab.read_ledger(p)
    assert ei.value.line == 2
    p.write_text('{"a": 1}\n{"b": 2}\n{"torn')
    assert kernlab.read_ledger(p) == [{"a": 1}, {"b": 2}]
    assert kernlab.read_ledger(tmp_path / "missing.jsonl") == []


def test_serve_bench_against_a_loopback_server(tmp_path, src):
    """kernlab.serve_bench: a dict of the run, failures inside it."""
    import sys
    srv = subprocess.Popen([sys.executable,
                            os.path.join(src, "tests/serve/fake_openai.py"),
                            str(tmp_path / "log")], stdout=subprocess.PIPE,
                           text=True, env=dict(os.environ, TTFT_MS="5",
                                               ITL_MS="2"))
    try:
        url = "http://127.0.0.1:%s" % srv.stdout.readline().split()[1]
        r = kernlab.serve_bench(url, requests=4, concurrency=2,
                                max_tokens=6, prompt_tokens=8)
        assert r["ok"] == 4 and r["errors"] == 0
        assert r["output_tokens"] == 24 and r["tokens_per_s"] > 0
        assert r["ttft_ms"]["n"] == 4 and r["itl_ms"]["n"] == 20
        bad = kernlab.serve_bench(url, model="error500", requests=2)
        assert bad["ok"] == 0 and bad["errors"] == 2
        assert bad["error"] == "HTTP status 500"
    finally:
        srv.kill()
    with pytest.raises(kernlab.KernlabError):
        kernlab.serve_bench("ftp://nowhere")


def test_command_case_bench(tmp_path, src):
    """A backend: command case through the same Case.bench: a row per
    metric, in the metric's own unit."""
    import shutil
    shutil.copytree(os.path.join(src, "tests/command/case"),
                    tmp_path / "cmd")
    with kernlab.load_case(tmp_path / "cmd") as c:
        rep = c.bench()
    assert rep["verdict"] == "OK" and rep["backend"] == "command"
    rows = {s["name"]: s for s in rep["shapes"]}
    assert rows["tokens_per_s"]["better"] == "higher"
    assert abs(rows["tokens_per_s"]["median"] - 1000) < 20


def test_mcp_tools_list_the_verbs():
    names = {t["name"] for t in kernlab.mcp_tools()["tools"]}
    assert {"check", "bench", "compare", "propose"} <= names


def test_mcp_serve_answers_over_pipes(src):
    """The library's MCP server, served from Python: requests written and
    the input closed, mcp_serve answers them and returns."""
    kl = os.environ.get("KL") or os.path.join(src, "build", "bin", "kl")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-03-26"}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "check", "arguments": {
             "case": os.path.join(src, "cases", "host_saxpy")}}},
        {"jsonrpc": "2.0", "id": 3, "method": "no/such"},
    ]
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, "".join(json.dumps(r) + "\n" for r in requests).encode())
    os.close(in_w)
    kernlab.mcp_serve(in_r, out_w, program=kl)
    os.close(in_r)
    os.close(out_w)
    with os.fdopen(out_r) as f:
        replies = {m["id"]: m for m in map(json.loads, f)}
    assert replies[1]["result"]["protocolVersion"] == "2025-03-26"
    assert replies[2]["result"]["structuredContent"]["ok"] is True
    assert replies[3]["error"]["code"] == -32601
