#!/usr/bin/env python3
"""A small OpenAI-compatible server for kernlab's serving-benchmark tests:
/v1/completions and /v1/chat/completions, streaming only, on loopback.

Each request streams max_tokens chunks of one token: the first after
TTFT_MS, then one every ITL_MS (environment, defaults 30 and 10), then a
usage chunk and `data: [DONE]`. The model name picks a failure: "error500"
answers HTTP 500, "cut" stops the stream halfway without [DONE]. Every
finished stream is logged (argv[1], JSON lines) with the time each chunk
was sent, so a test compares kernlab's rates with the server's own.
Prints "PORT <n>" first (the port PORT says, else any free one), then
serves until killed."""
import http.server
import json
import os
import socketserver
import sys
import threading
import time

LOG = sys.argv[1]
TTFT = float(os.environ.get("TTFT_MS", "30")) / 1000
ITL = float(os.environ.get("ITL_MS", "10")) / 1000
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        arrived = time.time()
        n = int(self.headers.get("Content-Length", "0"))
        req = json.loads(self.rfile.read(n) or b"{}")
        chat = self.path.endswith("/chat/completions")
        model = req.get("model", "")
        if model == "error500":
            body = b'{"error": {"message": "overloaded"}}'
            self.send_response(500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        want = int(req.get("max_tokens", 16))
        sent = []
        time.sleep(TTFT)
        for i in range(want):
            if model == "cut" and i == want // 2:
                self.wfile.flush()
                self.close_connection = True
                return
            if chat:
                chunk = {"choices": [{"delta": {"content": "tok%d " % i}}]}
            else:
                chunk = {"choices": [{"text": "tok%d " % i}]}
            self.wfile.write(("data: %s\n\n" % json.dumps(chunk)).encode())
            self.wfile.flush()
            sent.append(time.time())
            if i + 1 < want:
                time.sleep(ITL)
        usage = {"choices": [], "usage": {"prompt_tokens": len(
            (req.get("prompt") or "x").split()), "completion_tokens": want}}
        self.wfile.write(("data: %s\n\ndata: [DONE]\n\n"
                          % json.dumps(usage)).encode())
        self.wfile.flush()
        self.close_connection = True
        with lock, open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "sent": sent,
                                "prompt": req.get("prompt") or
                                req.get("messages", [{}])[0].get("content"),
                                "arrived": arrived, "done": time.time(),
                                "auth": self.headers.get("Authorization")
                                == "Bearer sk-serve-test-key"}) + "\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
print("PORT %d" % srv.server_address[1], flush=True)
srv.serve_forever()
