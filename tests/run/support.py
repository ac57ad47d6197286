"""What both kl run tests share: a scratch folder and environment (no user
config, no LLM settings from the caller, a private compile cache), failure
bookkeeping, a copy of a bundled case, and the fake LLM server."""
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


def scratch(src, prefix):
    """(folder, environment) for a test run against source tree src."""
    tmp = tempfile.mkdtemp(prefix=prefix)
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


def require_cuda_torch():
    """Exit 77 (ctest's skip) without a CUDA device, torch or triton."""
    if (shutil.which("nvidia-smi") is None or
            subprocess.run(["nvidia-smi", "-L"],
                           capture_output=True).returncode):
        print("skipped: no CUDA device here")
        sys.exit(77)
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        print("skipped: %s" % e)
        sys.exit(77)
