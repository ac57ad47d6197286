"""A benchmark that already exists, standing in for a server's or a
repository's own (kernlab's tests): it reads the candidate file (JSON: a
`rate` and a `mode`), does a little work, logs a few lines and prints its
metrics as the last JSON object on stdout. The rate is the candidate's own
with a fraction of a percent of noise, as a real measurement has."""
import json
import os
import random
import socket
import sys
import time

cand = json.load(open(sys.argv[1]))
mode = cand.get("mode", "ok")
print("warming up ...")
print("serving 64 requests")
sys.stdout.flush()
if mode == "fail":
    print("error: the server refused the model", file=sys.stderr)
    sys.exit(3)
if mode == "hang":
    time.sleep(60)
if mode == "probe":  # what a hostile candidate could reach
    leaked = [k for k in os.environ if "KEY" in k or "TOKEN" in k]
    try:
        socket.create_connection(("127.0.0.1", cand["port"]), 2).close()
        net = True
    except OSError:
        net = False
    if leaked or net:
        print("sandbox: leaked %s, network %s" % (leaked, net))
        sys.exit(9)
if mode == "loopback":  # a server and its benchmark, both in the sandbox
    try:
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        cli = socket.create_connection(("127.0.0.1", srv.getsockname()[1]), 2)
        conn, _ = srv.accept()
        cli.sendall(b"token")
        assert conn.recv(5) == b"token"
    except OSError as e:
        print("no loopback: %s" % e, file=sys.stderr)
        sys.exit(4)
    reached = []
    for host, port in (("127.0.0.1", cand["port"]), ("192.0.2.1", 80)):
        try:  # the host's listener, an address outside
            socket.create_connection((host, port), 2).close()
            reached.append(host)
        except OSError:
            pass
    if reached:
        print("sandbox: the loopback reached %s" % reached)
        sys.exit(9)
if mode == "garbage":
    print("tokens/s: fast")
    sys.exit(0)
# a tunable, as kernlab passes it: in the environment
batch = {"8": 1.0, "16": 1.2, "32": 1.1}[os.environ.get("BATCH", "8")]
rate = cand["rate"] * batch * (1 + random.gauss(0, 0.003))
time.sleep(0.01)
metrics = {"tokens_per_s": rate, "p50_ms": 1000.0 / rate, "requests": 64,
           # kernlab names the candidate in the environment too
           "same_file": os.environ.get("KL_CANDIDATE") == sys.argv[1]}
if mode == "missing":
    del metrics["p50_ms"]
print(json.dumps({"note": "an earlier object, not the last"}))
print(json.dumps(metrics, indent=2))
