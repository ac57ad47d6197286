"""The server a candidate is: tests/serve/fake_openai.py, an
OpenAI-compatible stand-in that streams a token every itl_ms after ttft_ms,
started with the candidate's (server.json and candidates/*.json) on the
port the case names, as a model server would be started with the kernel
build a candidate is. kl serve-bench starts it (--start) inside the
sandbox and stops it after each measurement."""
import json
import os
import sys

cand = json.load(open(sys.argv[1]))
here = os.path.dirname(os.path.abspath(__file__))
server = os.path.join(here, "..", "..", "serve", "fake_openai.py")
if not os.path.exists(server):  # a copy of the case: the server beside it
    server = os.path.join(here, "fake_openai.py")
os.environ.update(TTFT_MS=str(cand["ttft_ms"]), ITL_MS=str(cand["itl_ms"]),
                  PORT=sys.argv[2])
os.execv(sys.executable, [sys.executable, server, os.devnull])
