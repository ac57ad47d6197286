"""What both kl run tests share: a scratch folder and environment (no user
config, no LLM settings from the caller, a private compile cache), failure
bookkeeping, a copy of a bundled case, and the fake LLM server."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


_SCRATCH = []
_FAILED = []


def _exit_noting(code=0, _exit=sys.exit):
    if code not in (None, 0, 77):  # 77: skipped
        _FAILED.append(code)
    _exit(code)


def _except_noting(kind, value, tb, _hook=sys.excepthook):
    _FAILED.append(kind)
    _hook(kind, value, tb)


def _remove_scratch():
    keep = os.environ.get("KL_KEEP_SCRATCH", "") not in ("", "0")
    if _FAILED or FAILS or keep:
        for d in _SCRATCH:
            if os.path.isdir(d):
                print("scratch kept:", d, flush=True)
        return
    for d in _SCRATCH:
        shutil.rmtree(d, ignore_errors=True)


def scratch_dir(prefix):
    """A folder under $TMPDIR, removed when the test ends passed or
    skipped (exit status 0 or 77), kept and named when it fails (a
    non-zero sys.exit, an uncaught exception, or a failed check()) or
    when KL_KEEP_SCRATCH is set to anything but 0. A test that fails by
    raising SystemExit itself is not seen: call sys.exit."""
    if not _SCRATCH:
        sys.exit = _exit_noting
        sys.excepthook = _except_noting
        atexit.register(_remove_scratch)
    tmp = tempfile.mkdtemp(prefix=prefix)
    _SCRATCH.append(tmp)
    return tmp


def scratch(src, prefix):
    """(folder, environment) for a test run against source tree src; the
    folder as scratch_dir() makes it."""
    tmp = scratch_dir(prefix)
    env = dict(os.environ, KERNLAB_SHARE_DIR=src + "/share/kernlab",
               KERNLAB_CACHE_DIR=tmp + "/cache", NO_COLOR="1",
               KL_CONFIG=tmp + "/none.yaml")
    for k in ("KL_LLM_PROVIDER", "KL_LLM_MODEL", "KL_LLM_BASE_URL"):
        env.pop(k, None)
    with open(tmp + "/none.yaml", "w") as f:
        f.write("# no llm configured\n")
    return tmp, env


def kl_runner(kl_path, env, timeout=900):
    """(kl, kljson): run kl with env, echoing the command; kljson adds
    --json and gives (exit status, the parsed document or {}, stderr)."""
    def kl(*args):
        p = subprocess.run([kl_path] + list(args), capture_output=True,
                           text=True, env=env, timeout=timeout)
        print("$ kl %s -> %d" % (" ".join(args), p.returncode), flush=True)
        return p

    def kljson(*args):
        p = kl(*(list(args) + ["--json"]))
        try:
            return p.returncode, json.loads(p.stdout), p.stderr
        except ValueError:
            return p.returncode, {}, p.stdout[-500:] + p.stderr
    return kl, kljson


def copy_case(src, name, dest):
    """A copy of cases/<name> at dest, without any records."""
    shutil.copytree(src + "/cases/" + name, dest,
                    ignore=shutil.ignore_patterns("runs", "*.jsonl", "*.csv",
                                                  "memory.summary.md"))
    return dest


def small_saxpy(src, dest):
    """A copy of host_saxpy at 1M and 2M: its 16M shape costs seconds of
    checks for every candidate, for tests that check no size's numbers."""
    d = copy_case(src, "host_saxpy", dest)
    with open(d + "/case.yaml") as f:
        text = f.read()
    assert "{ name: 16M, n: 16*1024*1024," in text
    with open(d + "/case.yaml", "w") as f:
        f.write(text.replace("{ name: 16M, n: 16*1024*1024,",
                             "{ name: 2M, n: 2*1024*1024,"))
    return d


def small_matmul(src, dest):
    """A copy of host_matmul at n = 128 and 192 (a run takes seconds)."""
    d = copy_case(src, "host_matmul", dest)
    with open(d + "/case.yaml") as f:
        text = f.read()
    text = text.replace("  - { name: n256, n: 256 }\n", "")
    text = text.replace("  - { name: n512, n: 512 }\n",
                        "  - { name: n128, n: 128 }\n")
    text = text.replace("  - { name: n1024, n: 1024, weight: 2 }",
                        "  - { name: n192, n: 192, weight: 2 }")
    with open(d + "/case.yaml", "w") as f:
        f.write(text)
    return d


# repeat_host's tunables for a test that checks what a run decides: a
# sleeping kernel is not spared by a busy machine. Its wake-up waits for a
# CPU, and after the worker's cache flush (CPU work just before each
# sample) that wait reached 45 ms beside eight busy loops on 2 CPUs
# (2026-11-28, the development VM): 1 ms against 16 then read "same", 6
# of 19 pairs the wrong way round. Here every decision a test checks is
# between sleeps at least 120 ms apart: 1 and 8 against the baseline's 128
# are faster whatever the wait; 8, 24 and 16 against 1 are never faster.
DECISIVE_REPEAT = "REPEAT: [128, 1, 8, 24, 16]"


def decisive_repeat(src, dest):
    """A copy of tests/exec/repeat_host at dest with DECISIVE_REPEAT: the
    baseline (REPEAT=128), then REPEAT=1 (accepted), 8 (faster than the
    baseline, slower than 1), 24 and 16 (slower than the best)."""
    shutil.copytree(os.path.join(src, "tests", "exec", "repeat_host"), dest)
    with open(dest + "/case.yaml") as f:
        text = f.read()
    old = "REPEAT: [16, 1, 4, 64, 32]"
    assert old in text, "repeat_host's tunables changed: update support.py"
    with open(dest + "/case.yaml", "w") as f:
        f.write(text.replace(old, DECISIVE_REPEAT))
    return dest


def fake_llm(src, tmp, env, script_dir, key):
    """Start tests/net/fake_llm.py answering from script_dir; returns the
    process and a KL_CONFIG file pointing an anthropic provider at it."""
    srv = subprocess.Popen(
        ["python3", src + "/tests/net/fake_llm.py", tmp + "/server.log"],
        stdout=subprocess.PIPE, text=True,
        env=dict(env, FAKE_LLM_SCRIPT=script_dir, ANTHROPIC_API_KEY=key))
    port = int(srv.stdout.readline().split()[1])
    config = tmp + "/config.yaml"
    with open(config, "w") as f:
        f.write("llm:\n  provider: anthropic\n  model: fake-model\n"
                "  base_url: http://127.0.0.1:%d/anthropic/script\n"
                "  max_retries: 0\n"
                "  prices:\n    fake-model: {input: 1000, output: 1000}\n"
                % port)
    return srv, port, config


def require_cuda(*tools):
    """Exit 77 (ctest's skip) without a CUDA device, or without any of the
    named tools on PATH (e.g. "nvcc", "ncu")."""
    if (shutil.which("nvidia-smi") is None or
            subprocess.run(["nvidia-smi", "-L"],
                           capture_output=True).returncode):
        print("skipped: no CUDA device here")
        sys.exit(77)
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        print("skipped: no %s on PATH" % " or ".join(missing))
        sys.exit(77)


def require_cuda_torch():
    """Exit 77 (ctest's skip) without a CUDA device, torch or triton."""
    require_cuda()
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        print("skipped: %s" % e)
        sys.exit(77)


def nvcc_checked(argv, source, include_dirs=(), scratch=None, timeout=600):
    """Run nvcc argv, a compile whose only use is its exit status (its
    output is thrown away), as subprocess.run would: (returncode, stderr).

    With KL_TEST_NVCC_CACHE set to a folder (.ci/run sets it), a compile
    that passed is remembered there under the hash of what decides it: the
    nvcc binary (path, size, mtime), the argv with the source and output
    left out, the source's bytes and every file under include_dirs but kl
    run's records (runs/, *.jsonl, *.csv: no compile reads them), with the
    test's scratch folder's path written as $SCRATCH (a harness names its
    case folder in a comment). The same bytes compiled again (the sanitizer
    pass after the plain one) pass without nvcc; anything else, a failure
    included, compiles. The source's own folder is not hashed: the tests
    write their harnesses to a scratch folder that holds no headers."""
    import hashlib
    cache = os.environ.get("KL_TEST_NVCC_CACHE")
    key = None
    if cache:
        h = hashlib.sha256()

        def add(data):
            if scratch:
                data = data.replace(scratch.encode(), b"$SCRATCH")
            h.update(data + b"\0")

        exe = shutil.which(argv[0]) or argv[0]
        st = os.stat(exe)
        add(("%s %d %d" % (os.path.realpath(exe), st.st_size,
                           st.st_mtime_ns)).encode())
        out = argv[argv.index("-o") + 1] if "-o" in argv else None
        add(json.dumps([a for a in argv[1:] if a not in (source, out)])
            .encode())
        with open(source, "rb") as f:
            add(f.read())
        for d in include_dirs:
            for root, dirs, files in os.walk(d):
                dirs[:] = sorted(x for x in dirs if x not in ("runs", "agent"))
                for name in sorted(files):
                    if name.endswith((".jsonl", ".csv", ".lock")):
                        continue
                    path = os.path.join(root, name)
                    add(os.path.relpath(path, d).encode())
                    with open(path, "rb") as f:
                        add(f.read())
        key = os.path.join(cache, h.hexdigest())
        if os.path.exists(key):
            return 0, ""
    b = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if key and b.returncode == 0:
        os.makedirs(cache, exist_ok=True)
        with open(key, "w") as f:
            f.write(" ".join(argv) + "\n")
    return b.returncode, b.stderr
