#!/usr/bin/env python3
"""kl serve-bench against a loopback OpenAI-compatible server that streams
at a known rate (tests/serve/fake_openai.py; ctest label unit).

  rates      tokens/s and the inter-token latency kernlab measures are
             within 5% of what the server's own log says it sent; TTFT is
             the server's delay; every request's tokens counted
  concurrency  at most C streams in flight, and C at once: the server saw
             them overlap so
  chat       /v1/chat/completions; the key from --api-key-env reaches the
             server as a bearer token and no output shows it
  prompts    --prompts FILE: its lines in order, again from the first
  errors     HTTP 500 and streams cut short are errors with their reason
             (exit 1); a server that goes away mid-run: a clear error, and
             what the finished requests measured is kept
  usage      no URL, a URL that is not http: exit 2
The comparisons are with the server's recorded send times, not with
wall-clock expectations, so a loaded machine moves both sides alike.
usage: test_serve.py KL SOURCE_DIR
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, scratch  # noqa: E402

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-serve-")


def server(name, ttft=40, itl=20):
    log = os.path.join(TMP, name + ".log")
    p = subprocess.Popen([sys.executable, SRC + "/tests/serve/fake_openai.py",
                          log], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, TTFT_MS=str(ttft),
                                  ITL_MS=str(itl)))
    port = int(p.stdout.readline().split()[1])
    return p, "http://127.0.0.1:%d" % port, log


def bench(url, *args, env=None):
    p = subprocess.run([KL, "serve-bench", url, "--json"] + list(args),
                       capture_output=True, text=True, env=env or ENV,
                       timeout=300)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except ValueError:
        return p.returncode, {}, p.stdout + p.stderr


def streams(log):
    with open(log) as f:
        return [json.loads(ln) for ln in f if ln.strip()]


srv, url, log = server("rate")
try:
    rc, r, err = bench(url, "--requests", "12", "--concurrency", "4",
                       "--max-tokens", "25", "--prompt-tokens", "64")
    s = streams(log)
    check(rc == 0 and r.get("ok") == 12 and r.get("errors") == 0 and
          r.get("output_tokens") == 300 and len(s) == 12,
          "12 requests of 25 tokens, all counted: %d %s %s" % (rc, r, err))
    gaps = [b - a for x in s for a, b in zip(x["sent"], x["sent"][1:])]
    server_itl = statistics.median(gaps) * 1e3
    span = max(x["done"] for x in s) - min(x["arrived"] for x in s)
    server_rate = sum(len(x["sent"]) for x in s) / span
    itl = (r.get("itl_ms") or {}).get("median") or 0
    rate = r.get("tokens_per_s") or 0
    check(abs(itl - server_itl) <= 0.05 * server_itl,
          "ITL median %.2f ms, the server sent every %.2f ms" % (itl,
                                                                server_itl))
    check(abs(rate - server_rate) <= 0.05 * server_rate,
          "%.1f tok/s measured, %.1f tok/s sent" % (rate, server_rate))
    ttft = (r.get("ttft_ms") or {}).get("median") or 0
    check(40 <= ttft < 40 + 0.5 * server_itl + 25,
          "TTFT median %.1f ms: the server's 40 ms first-token delay" % ttft)
    # concurrency: how many streams overlapped at the busiest moment
    events = sorted([(x["arrived"], 1) for x in s] +
                    [(x["done"], -1) for x in s])
    most = cur = 0
    for _, d in events:
        cur += d
        most = max(most, cur)
    check(most == 4, "4 streams in flight at most, and at once: %d" % most)
    check(abs(r.get("requests_per_s", 0) - 12 / r.get("wall_s", 1)) < 0.01,
          "requests per second over the run: %s" % r.get("requests_per_s"))

    # chat, with a key from the environment
    open(log, "w").close()
    key = "sk-serve-test-key"
    rc, r, err = bench(url, "--chat", "--requests", "3", "--max-tokens", "5",
                       "--api-key-env", "SERVE_KEY",
                       env=dict(ENV, SERVE_KEY=key))
    s = streams(log)
    check(rc == 0 and r.get("ok") == 3 and r.get("endpoint") ==
          "/chat/completions" and all(x["auth"] for x in s) and
          all(x["path"] == "/v1/chat/completions" for x in s),
          "chat completions with the bearer key: %s %s" % (r, s))
    check(key not in json.dumps(r) + err, "the key is shown nowhere")

    # errors
    rc, r, err = bench(url, "--model", "error500", "--requests", "3")
    check(rc == 1 and r.get("errors") == 3 and r.get("error") ==
          "HTTP status 500" and "3 of 3 requests failed" in err,
          "HTTP 500: errors with the reason, exit 1: %d %s %s" % (rc, r, err))
    rc, r, err = bench(url, "--model", "cut", "--requests", "2",
                       "--max-tokens", "8")
    check(rc == 1 and r.get("errors") == 2 and
          "without data: [DONE]" in (r.get("error") or ""),
          "a stream cut short is an error: %s" % r)
finally:
    srv.kill()

# prompts from a file: sent in order, again from the first
srv, url, log = server("prompts", ttft=5, itl=2)
try:
    pf = os.path.join(TMP, "prompts.txt")
    with open(pf, "w") as f:
        f.write("first prompt here\n\nsecond one\r\nthird prompt of five words\n")
    rc, r, err = bench(url, "--prompts", pf, "--requests", "4",
                       "--concurrency", "1", "--max-tokens", "2")
    sent = [x.get("prompt") for x in streams(log)]
    check(rc == 0 and r.get("ok") == 4 and r.get("prompt_tokens") == 0 and
          sent == ["first prompt here", "second one",
                   "third prompt of five words", "first prompt here"],
          "--prompts: the file's prompts in order, then again: %s %s %s" %
          (rc, sent, err[-200:]))
    with open(pf, "w") as f:
        f.write("\n\n")
    rc, r, err = bench(url, "--prompts", pf)
    check(rc == 2 and "no prompt in it" in err, "an empty prompts file: %s" % err)
finally:
    srv.kill()

# a server that goes away mid-run
srv, url, log = server("away", ttft=10, itl=20)
p = subprocess.Popen([KL, "serve-bench", url, "--json", "--requests", "40",
                      "--concurrency", "2", "--max-tokens", "25"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True, env=ENV)
deadline = time.time() + 120
while time.time() < deadline and (not os.path.exists(log) or
                                  len(streams(log)) < 4):
    time.sleep(0.05)
srv.kill()
out, err = p.communicate(timeout=300)
try:
    r = json.loads(out)
except ValueError:
    r = {}
check(p.returncode == 1 and r.get("ok", 0) >= 4 and r.get("errors", 0) > 0
      and r.get("ok", 0) + r.get("errors", 0) == 40 and
      (r.get("tokens_per_s") or 0) > 0 and r.get("error") and
      "requests failed" in err,
      "the server went away: what finished is kept, the rest failed with "
      "a reason: %d %s %s" % (p.returncode, r, err[-300:]))

p = subprocess.run([KL, "serve-bench"], capture_output=True, text=True,
                   env=ENV)
check(p.returncode == 2, "no URL: exit 2: %s" % p.stderr)
p = subprocess.run([KL, "serve-bench", "ftp://x"], capture_output=True,
                   text=True, env=ENV)
check(p.returncode == 2 and "URL" in p.stderr, "not http: exit 2: %s"
      % p.stderr)

if FAILS:
    print("%d failed" % len(FAILS))
    sys.exit(1)
shutil.rmtree(TMP, ignore_errors=True)
print("all passed")
