"""A webhook receiver on loopback for the tests. Prints "port N" on its
first line, then appends one JSON line per request to the log file given
as its argument: {"path", "content_type", "body"}. The answer depends on
the path's first part: /ok/... 204, /fail/... 500 (with a body naming the
path, as some servers do, to prove kernlab blots it out)."""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace")
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path,
                                "content_type": self.headers.get(
                                    "Content-Type"),
                                "body": body}) + "\n")
        if self.path.startswith("/fail/"):
            reply = ("no such webhook: %s" % self.path).encode()
            self.send_response(500)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
        else:
            self.send_response(204)
            self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("port", server.server_address[1], flush=True)
server.serve_forever()
