"""Start the server with the candidate's settings, wait until it listens,
benchmark it with `kl serve-bench` (on PATH), print its JSON last, stop
the server. Runs inside kernlab's sandbox with a loopback of its own: the
server and the client meet on 127.0.0.1 of that namespace only. The
server is tests/serve/fake_openai.py, which streams a token every
itl_ms after ttft_ms, standing in for a model server whose kernels the
candidate changes. A tunable STREAMS (the environment) sets the
concurrency."""
import json
import os
import subprocess
import sys

cand = json.load(open(sys.argv[1]))
here = os.path.dirname(os.path.abspath(__file__))
server = os.path.join(here, "..", "..", "serve", "fake_openai.py")
if not os.path.exists(server):  # a copy of the case: the server beside it
    server = os.path.join(here, "fake_openai.py")
env = dict(os.environ, TTFT_MS=str(cand["ttft_ms"]), ITL_MS=str(cand["itl_ms"]))
srv = subprocess.Popen([sys.executable, server, os.devnull],
                       stdout=subprocess.PIPE, text=True, env=env)
try:
    port = int(srv.stdout.readline().split()[1])
    p = subprocess.run(["kl", "serve-bench", "http://127.0.0.1:%d" % port,
                        "--requests", "16",
                        "--concurrency", os.environ.get("STREAMS", "4"),
                        "--max-tokens", "16", "--prompt-tokens", "16",
                        "--json"], capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    print(p.stdout.strip())
    sys.exit(p.returncode)
finally:
    srv.kill()
