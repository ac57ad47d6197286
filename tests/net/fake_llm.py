#!/usr/bin/env python3
"""A fake Anthropic Messages API and OpenAI-compatible chat-completions
server for kernlab's net tests: a small real HTTP server on loopback.

URL paths are /<api>/<scenario>/..., api being anthropic or openai; the
scenario picks the behaviour, and a per-scenario counter lets a scenario
fail first and succeed later. Every request is appended to the log file
(argv[1]) as one JSON line: the path, the request number within its
scenario, whether the API key header matched the key in this process's
environment (the key itself is never written), and the request body.
Prints "PORT <n>" on its first line of output, then serves until killed.
"""
import http.server
import json
import os
import sys
import time

LOG = sys.argv[1]
COUNTS = {}


def ok_reply(api, text, n, req):
    cached = req.get("system", [{}])[0].get("cache_control", {}).get("type") \
        if api == "anthropic" and req and isinstance(req.get("system"), list) \
        else None
    if cached:
        text += " [cache_control=%s]" % cached
    if api == "anthropic":
        return {"type": "message", "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 120, "output_tokens": 30,
                          "cache_creation_input_tokens": 2000 if n == 1 else 0,
                          "cache_read_input_tokens": 0 if n == 1 else 2000}}
    return {"choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 40,
                      "prompt_tokens_details": {"cached_tokens": 600}}}


def cut_reply(api, text):
    if api == "anthropic":
        return {"content": [{"type": "text", "text": text}],
                "stop_reason": "max_tokens",
                "usage": {"input_tokens": 100, "output_tokens": 8192}}
    return {"choices": [{"finish_reason": "length",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 8192}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        parts = self.path.strip("/").split("/")
        api, scen = parts[0], parts[1]
        key = api + "/" + scen
        COUNTS[key] = COUNTS.get(key, 0) + 1
        n = COUNTS[key]
        try:
            req = json.loads(body)
        except ValueError:
            req = None
        if api == "anthropic":
            sent = self.headers.get("x-api-key", "")
            want = os.environ.get("ANTHROPIC_API_KEY", "")
        else:
            sent = self.headers.get("authorization", "")
            want = "Bearer " + os.environ.get("OPENAI_API_KEY", "")
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "n": n, "t": time.time(),
                                "auth_ok": sent == want, "body": req}) + "\n")
        err = {"type": "error", "error": {"type": "api_error",
                                          "message": "boom"}}
        if scen == "script":
            # the n-th reply is the file NNN.txt of $FAKE_LLM_SCRIPT, the
            # script starting over when it runs out
            d = os.environ.get("FAKE_LLM_SCRIPT", ".")
            count = len([f for f in os.listdir(d) if f.endswith(".txt")])
            if count == 0:
                return self.send(503, err)
            path = os.path.join(d, "%03d.txt" % ((n - 1) % count + 1))
            # a model's latency, where a benchmark wants one
            time.sleep(float(os.environ.get("FAKE_LLM_DELAY", "0")))
            with open(path) as f:
                return self.send(200, ok_reply(api, f.read(), 2, None))
        if scen == "ok":
            return self.send(200, ok_reply(api, "hello from " + api, n, req))
        if scen == "retry429" and n == 1:
            return self.send(429, {"error": {"message": "slow down"}},
                             [("retry-after", "0.3")])
        if scen == "err500x2" and n <= 2:
            return self.send(500, err)
        if scen == "overloaded" and n == 1:
            return self.send(529, {"type": "error", "error": {
                "type": "overloaded_error", "message": "Overloaded"}})
        if scen == "slow":
            time.sleep(2)
            return self.send(200, ok_reply(api, "too late", n, req))
        if scen == "truncated":
            msgs = req.get("messages", [])
            if n == 1:
                return self.send(200, cut_reply(api, "part one, "))
            if msgs and msgs[-2].get("content") == "part one, ":
                return self.send(200, ok_reply(api, "part two", n, req))
            return self.send(400, {"error": {"message": "no continuation"}})
        if scen == "always_cut":
            return self.send(200, cut_reply(api, "more "))
        if scen == "malformed":
            return self.send(200, b"{not json")
        if scen == "empty":
            return self.send(200, {"content": [], "stop_reason": "end_turn"}
                             if api == "anthropic" else {"choices": []})
        if scen == "bad_request":
            return self.send(400, {"error": {"message": "max_tokens too large"}})
        if scen == "echo_key":
            return self.send(401, {"error": {"message": "bad key " + sent}})
        if scen == "down":
            return self.send(503, err)
        if scen == "huge":
            return self.send(200, b"x" * (3 << 20))
        return self.send(200, ok_reply(api, "hello again from " + api, n, req))


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("PORT %d" % server.server_address[1], flush=True)
server.serve_forever()
