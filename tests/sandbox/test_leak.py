#!/usr/bin/env python3
"""Candidate code reaches no secret and no network (docs/integrity.md).

kl runs with fake secrets in its environment (an Anthropic and an OpenAI
key, a webhook URL with a token, KL_TEST_SECRET), a fake key file in its
home, and a listener on loopback. Then:
  probe      a candidate that looks for them at load time (getenv, the
             whole environment, its parent's /proc/PID/environ, the key
             file), sends what it found to the listener over IPv4 and IPv6,
             prints it and crashes: it finds nothing, reaches nothing, and
             says so in the CRASHED verdict's log tail
  include    a candidate that #includes the key file: COMPILE_ERROR that
             shows nothing of the file
  printer    a candidate that carries the key (reversed in its source),
             prints it and crashes: the redactor blots it out of what comes
             back
  run        kl run with a model (the command provider) that replies with
             the probe and the printer: both recorded, CRASHED
  honest     an honest candidate still passes in the same sandbox
  nowhere    none of the secrets is in kl's output, at the listener, or in
             any file under the scratch folder (records, cache, logs)
usage: test_leak.py KL SOURCE_DIR host|cuda   (cuda: exit 77 without a GPU)
"""
import json
import os
import secrets
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import (FAILS, check, copy_case, require_cuda,  # noqa: E402
                     scratch, small_saxpy)

KL, SRC, MODE = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
HERE = os.path.dirname(os.path.abspath(__file__))
TMP, ENV = scratch(SRC, "kl-leak-%s-" % MODE)

if MODE == "cuda":
    require_cuda()
    CASE, EXT = "vector_add", "cu"
    KERNEL = """
extern "C" __global__ void vector_add(float *c, const float *a,
                                      const float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}
"""
else:
    CASE, EXT = "host_saxpy", "c"
    KERNEL = """
void saxpy(float *y, const float *x, float a, int n) {
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
}
"""

# ---- the secrets --------------------------------------------------------
KEY = "sk-ant-api03-" + secrets.token_hex(24)
OPENAI = "sk-proj-" + secrets.token_hex(24)
TOKEN = secrets.token_hex(20)
HOOK = "https://discord.com/api/webhooks/1234567890/" + TOKEN
OTHER = "other-" + secrets.token_hex(16)
MARKER = "FAKE-PRIVATE-KEY-" + secrets.token_hex(16)
SECRETS = [KEY, OPENAI, TOKEN, OTHER, MARKER]
home = os.path.join(TMP, "home")
os.makedirs(home + "/.ssh")
KEYFILE = home + "/.ssh/id_rsa"
with open(KEYFILE, "w") as f:
    f.write("-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n"
            "-----END OPENSSH PRIVATE KEY-----\n" % MARKER)
ENV = dict(ENV, HOME=home, ANTHROPIC_API_KEY=KEY, OPENAI_API_KEY=OPENAI,
           KL_WEBHOOK_URL=HOOK, KL_TEST_SECRET=OTHER)


def landlock():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    v = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return v if v > 0 else 0


CONFINED = landlock() > 0

# ---- the listener ---------------------------------------------------------
heard = []


def listen(family, addr):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, PORT))
    s.listen(16)

    def serve():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            c.settimeout(2)
            try:
                heard.append(c.recv(65536) or b"(connected)")
            except OSError:
                heard.append(b"(connected)")
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    return s


v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
v4.bind(("127.0.0.1", 0))
PORT = v4.getsockname()[1]
v4.close()
listeners = [listen(socket.AF_INET, "127.0.0.1")]
try:
    listeners.append(listen(socket.AF_INET6, "::1"))
except OSError:
    print("no IPv6 loopback here: the probe's IPv6 try goes nowhere anyway")

# ---- candidates -----------------------------------------------------------
with open(os.path.join(HERE, "probe_body.c")) as f:
    BODY = f.read()


def candidate(name, text):
    path = os.path.join(TMP, name + "." + EXT)
    with open(path, "w") as f:
        f.write(text)
    return path


probe = candidate("probe", "#define PROBE_PORT %d\n#define PROBE_FILE \"%s\"\n"
                  % (PORT, KEYFILE) + BODY + KERNEL)
include = candidate("include", "#include \"%s\"\n" % KEYFILE + KERNEL)
# the key as a model could only have it: built at run time, never in the
# source as it is
printer = candidate("printer", """#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static const char reversed[] = "%s";
__attribute__((constructor)) static void leak(void) {
  char key[256];
  size_t n = strlen(reversed);
  for (size_t i = 0; i < n; i++)
    key[i] = reversed[n - 1 - i];
  key[n] = '\\0';
  printf("leak: %%s\\n", key);
  fprintf(stderr, "leak: %%s\\n", key);
  fflush(stdout);
  abort();
}
""" % KEY[::-1] + KERNEL)

outputs = []


def kl(*args, want=None, env=None):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=env or ENV, timeout=900)
    outputs.append(p.stdout + p.stderr)
    if want is not None:
        check(p.returncode == want, "kl %s: exit %d, want %d: %s" % (
            " ".join(args), p.returncode, want, p.stderr[-500:]))
    return p


# host_saxpy at 1M and 2M (its 16M shape costs seconds of CPU a candidate;
# what is checked is where the candidates reach, not a size's numbers)
case = (small_saxpy(SRC, os.path.join(TMP, "case")) if CASE == "host_saxpy"
        else copy_case(SRC, CASE, os.path.join(TMP, "case")))

# probe
p = kl("compare", case, "--candidate", probe, "--json", want=3)
doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
reason = doc.get("reason") or ""
print("probe:", doc.get("verdict"), reason[-160:])
check(doc.get("verdict") == "CRASHED", "the probe was not CRASHED: %s" % doc)
summary = [l for l in reason.split("probe: ")[1:]]
check(summary, "the probe's account is not in the log tail: %s" % reason)
if summary:
    got = summary[-1].split()[:5]
    want = ["env=none", "parent=%s" % ("denied" if CONFINED else "read"),
            "file=%s" % ("denied" if CONFINED else "read"), "net4=blocked",
            "net6=blocked"]
    if not CONFINED:
        print("no Landlock here: the parent's environment and the key file "
              "are readable; only the redactor and the network hold")
    check(got == want, "the probe reached something: %s, want %s"
          % (got, want))
check(not heard, "the listener heard from the probe: %s" % heard[:2])
check(json.dumps(doc.get("sandbox", {})) != "{}", "no sandbox in the report")
print("sandbox:", json.dumps(doc.get("sandbox")))

# include
p = kl("compare", case, "--candidate", include, "--json", want=3)
doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
print("include:", doc.get("verdict"), (doc.get("reason") or "")[:160])
check(doc.get("verdict") == "COMPILE_ERROR",
      "including the key file: %s" % doc.get("verdict"))
if CONFINED:
    check("ermission denied" in json.dumps(doc),
          "the compiler was not refused the key file: %s" % doc.get("reason"))

# printer
p = kl("compare", case, "--candidate", printer, "--json", want=3)
doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
print("printer:", doc.get("verdict"), (doc.get("reason") or "")[-120:])
check("leak: [redacted]" in (doc.get("reason") or ""),
      "the printed key is not blotted out: %s" % doc.get("reason"))

# run: a model that replies with the probe, then the printer
replies = os.path.join(TMP, "replies")
os.makedirs(replies)
for i, path in enumerate((probe, printer)):
    with open(os.path.join(replies, "%03d.txt" % (i + 1)), "w") as f:
        f.write("A faster kernel.\n\n```%s\n%s```\nMEMO: try %d\n"
                % ("cuda" if EXT == "cu" else "c", open(path).read(), i))
model = os.path.join(TMP, "model.py")
with open(model, "w") as f:
    f.write("""import os, sys
sys.stdin.read()
d = %r
n = len(os.listdir(d + "/../used")) + 1
open(d + "/../used/%%d" %% n, "w").close()
sys.stdout.write(open(os.path.join(d, "%%03d.txt" %% n)).read())
""" % replies)
os.makedirs(os.path.join(TMP, "used"))
config = os.path.join(TMP, "config.yaml")
with open(config, "w") as f:
    f.write("llm:\n  provider: command\n  command: [python3, %s]\n" % model)
p = kl("run", case, "--json", "--iterations", "2", "--patience", "5",
       "--no-profile", "--time-cap", "100", "--no-webhook",
       env=dict(ENV, KL_CONFIG=config), want=0)
s = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
check(s.get("verdicts", {}).get("CRASHED") == 2,
      "the model's probe and printer were not both CRASHED: %s"
      % s.get("verdicts"))
sols = [json.loads(l) for l in open(os.path.join(case, "solutions.jsonl"))]
check(all(isinstance(r.get("environment", {}).get("sandbox"), dict)
          for r in sols), "records without their sandbox")
with open(os.path.join(case, "runs", s.get("run", "x"), "run.json")) as f:
    check("sandbox" in json.load(f), "run.json says nothing of the sandbox")
check(not heard, "the listener heard from the run: %s" % heard[:2])

# honest
p = kl("bench", case, "--json", "--time-cap-ms", "100", want=0)
doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
check(doc.get("verdict") == "OK", "the baseline fails in the sandbox: %s"
      % doc.get("reason"))

# nowhere
for text in outputs:
    for sec in SECRETS:
        check(sec not in text, "a secret is in kl's output: ...%s..."
              % text[max(0, text.find(sec) - 80):text.find(sec) + 20])
for h in heard:
    check(False, "the listener heard: %r" % h[:200])
for root, dirs, files in os.walk(TMP):
    if os.path.abspath(root).startswith(home):
        continue
    for name in files:
        path = os.path.join(root, name)
        if path in (printer,):  # the test's own file: the key reversed
            continue
        try:
            data = open(path, "rb").read()
        except OSError:
            continue
        for sec in SECRETS:
            check(sec.encode() not in data, "a secret is in %s" % path)

for s in listeners:
    s.close()
if FAILS:
    print("%d failure(s); scratch kept at %s" % (len(FAILS), TMP))
    sys.exit(1)
subprocess.run(["rm", "-rf", TMP])
print("ok: no secret reached the candidates' reach, the listener or a record")
