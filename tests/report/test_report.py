#!/usr/bin/env python3
"""Reports, history and webhooks, end to end on the host backend.

Three short runs of a small host_matmul copy, with a webhook receiver on
loopback (tests/net/webhook_receiver.py):
  webhook on    run_start, each acceptance and run_end arrive; the summary's
                webhook_* fields say 3+ attempted and sent
  --no-webhook  nothing arrives; the fields say it was configured but
                turned off
  receiver down the run still succeeds; attempted, none sent, status says
                why; the URL's token appears nowhere
then kl webhook test in each format and with bad settings, kl history, and
kl report as markdown and HTML (links resolve; nothing fetched). The HTML
page is also loaded in headless Chromium when it is installed (test.sh
installs it): no console message at all, and a screenshot in which the
curve's colour draws a line across the chart. Two control pages prove the
checks can fail.
usage: test_report.py KL SOURCE_DIR
"""
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "run"))
from support import FAILS, check, copy_case, scratch, small_matmul  # noqa: E402,E501

KL, SRC = sys.argv[1], sys.argv[2]
TMP, ENV = scratch(SRC, "kl-report-test-")
TOKEN = "T0KEN-5ecret-9f8e7d"
for k in ("KL_WEBHOOK_URL", "KL_WEBHOOK_FORMAT"):
    ENV.pop(k, None)


def kl(*args, env=None, want=0):
    p = subprocess.run([KL] + list(args), capture_output=True, text=True,
                       env=env or ENV, timeout=600)
    if p.returncode != want:
        check(False, "kl %s exited %d, want %d\n%s%s" % (
            " ".join(args), p.returncode, want, p.stdout, p.stderr))
    return p


def small_case(name):
    return small_matmul(SRC, os.path.join(TMP, name))


def received():
    try:
        with open(TMP + "/webhook.log") as f:
            return [json.loads(line) for line in f]
    except FileNotFoundError:
        return []


receiver = subprocess.Popen(
    ["python3", SRC + "/tests/net/webhook_receiver.py", TMP + "/webhook.log"],
    stdout=subprocess.PIPE, text=True)
PORT = int(receiver.stdout.readline().split()[1])
URL = "http://127.0.0.1:%d/ok/%s" % (PORT, TOKEN)
outputs = []  # every stdout and stderr, for the token check

try:
    case = small_case("matmul")

    # ---- a run with a webhook -------------------------------------------
    env = dict(ENV, KL_WEBHOOK_URL=URL)
    # 1.5 s a comparison: the acceptance below must survive a busy machine
    p = kl("run", case, "--iterations", "3", "--no-profile", "--hot",
           "--time-cap", "1500", "--json", env=env)
    outputs += [p.stdout, p.stderr]
    s = json.loads(p.stdout)
    msgs = [json.loads(m["body"]) for m in received()]
    events = [m["event"] for m in msgs]
    accepted = s["verdicts"]["ACCEPTED"]
    check(accepted >= 1, "the tune run accepts the faster loop order")
    check(events == ["run_start"] + ["accepted"] * accepted + ["run_end"],
          "events in order: %r" % events)
    check(all(m["path"] == "/ok/" + TOKEN and
              m["content_type"] == "application/json" for m in received()),
          "posted as JSON to the URL")
    end = msgs[-1]
    check(end["run"] == s["run"] and end["case"] == "host_matmul" and
          abs(end["speedup"] - s["best_speedup"]["speedup"]) < 1e-3 and
          end["detail"] == s["stop_reason"], "run_end carries the result")
    check(msgs[1]["speedup"] > 1 and msgs[1]["iteration"] >= 1,
          "accepted carries its speedup against the baseline")
    want = {"webhook_enabled_by_config": True,
            "webhook_disabled_by_flag": False, "webhook_expected": True,
            "webhook_attempted": 2 + accepted, "webhook_sent": 2 + accepted}
    check(all(s[k] == v for k, v in want.items()) and
          s["webhook_status"] == "sent (HTTP 204)",
          "status fields of a delivered run: %r" %
          {k: s.get(k) for k in list(want) + ["webhook_status"]})
    with open(os.path.join(case, "runs", s["run"], "summary.json")) as f:
        on_disk = json.load(f)
    check(all(on_disk[k] == s[k] for k in want) and
          on_disk["webhook_status"] == s["webhook_status"],
          "summary.json records the same fields")
    run1 = s["run"]

    # ---- --no-webhook ---------------------------------------------------
    before = len(received())
    p = kl("run", case, "--iterations", "1", "--no-profile", "--hot",
           "--time-cap", "300", "--json", "--no-webhook", env=env)
    outputs += [p.stdout, p.stderr]
    s = json.loads(p.stdout)
    check(len(received()) == before, "--no-webhook sends nothing")
    check(s["webhook_enabled_by_config"] and s["webhook_disabled_by_flag"] and
          not s["webhook_expected"] and s["webhook_attempted"] == 0 and
          s["webhook_sent"] == 0 and
          s["webhook_status"] == "disabled by --no-webhook",
          "status fields with --no-webhook: %r" % s)

    # ---- the receiver down: the run goes on -----------------------------
    down = dict(ENV, KL_WEBHOOK_URL="http://127.0.0.1:1/hook/" + TOKEN,
                KL_WEBHOOK_FORMAT="slack")
    p = kl("run", case, "--iterations", "1", "--no-profile", "--hot",
           "--time-cap", "300", "--json", env=down)
    outputs += [p.stdout, p.stderr]
    s = json.loads(p.stdout)
    check(s["webhook_expected"] and s["webhook_attempted"] >= 2 and
          s["webhook_sent"] == 0 and
          s["webhook_status"].startswith("failed: webhook http://127.0.0.1"
                                         ":1/...:"),
          "a dead receiver is recorded, the run unharmed: %r" %
          s.get("webhook_status"))

    # ---- no webhook configured ------------------------------------------
    p = kl("run", case, "--iterations", "1", "--no-profile", "--hot",
           "--time-cap", "300", "--json")
    s = json.loads(p.stdout)
    check(not s["webhook_enabled_by_config"] and not s["webhook_expected"] and
          s["webhook_status"] == "not configured", "no webhook configured")

    # ---- kl webhook test: formats, sources, errors ------------------------
    before = len(received())
    p = kl("webhook", "test", case, env=dict(ENV, KL_WEBHOOK_URL=URL,
                                             KL_WEBHOOK_FORMAT="discord"))
    outputs += [p.stdout, p.stderr]
    body = json.loads(received()[-1]["body"])
    check(len(received()) == before + 1 and "content" in body and
          "host_matmul" in body["content"], "discord format: %r" % body)
    check("HTTP 204" in p.stdout and TOKEN not in p.stdout and
          "127.0.0.1:%d/..." % PORT in p.stdout, "test reports, redacted")
    with open(TMP + "/wh.yaml", "w") as f:
        f.write("webhook:\n  url_env: MY_HOOK\n  format: slack\n")
    p = kl("webhook", "test", env=dict(ENV, KL_CONFIG=TMP + "/wh.yaml",
                                       MY_HOOK=URL))
    body = json.loads(received()[-1]["body"])
    check(list(body) == ["text"] and "wh.yaml" in p.stdout,
          "slack format from the user config's url_env: %r" % p.stdout)
    with open(case + "/case.yaml") as f:
        text = f.read()
    with open(case + "/case.yaml", "w") as f:
        f.write(text + "webhook:\n  url_env: MY_HOOK\n  format: generic\n")
    p = kl("webhook", "test", case, env=dict(ENV, KL_CONFIG=TMP + "/wh.yaml",
                                             MY_HOOK=URL))
    body = json.loads(received()[-1]["body"])
    check(body.get("event") == "test" and "from case" in p.stdout,
          "the case's section wins over the user's: %r" % p.stdout)
    with open(case + "/case.yaml", "w") as f:
        f.write(text)
    p = kl("webhook", "test", env=dict(
        ENV, KL_WEBHOOK_URL="http://127.0.0.1:%d/fail/%s" % (PORT, TOKEN)),
        want=1)
    outputs += [p.stdout, p.stderr]
    check("HTTP 500" in p.stderr and TOKEN not in p.stderr,
          "a 500 is reported without the token: %r" % p.stderr)
    with open(TMP + "/bad.yaml", "w") as f:
        f.write("webhook:\n  url: http://x/y\n  fromat: slack\n")
    p = kl("webhook", "test", env=dict(ENV, KL_CONFIG=TMP + "/bad.yaml"),
           want=2)
    check(re.search(r"bad\.yaml:3:3: .*unknown key 'fromat'.*'format'",
                    p.stderr), "a bad key is located: %r" % p.stderr)
    p = kl("webhook", "test", env=dict(ENV, KL_WEBHOOK_URL=URL,
                                       KL_WEBHOOK_FORMAT="teams"), want=2)
    check("KL_WEBHOOK_FORMAT" in p.stderr, "a bad format is named")
    p = kl("webhook", "test", want=2)
    check("no webhook configured" in p.stderr, "nothing configured: exit 2")

    # the token is in no file of the case and no output
    for path in glob.glob(case + "/**", recursive=True):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                check(TOKEN.encode() not in f.read(),
                      "the webhook token leaked into " + path)
    check(all(TOKEN not in o for o in outputs), "the token leaked to output")

    # ---- kl history -------------------------------------------------------
    p = kl("history", case)
    lines = p.stdout.strip().splitlines()
    check(len(lines) == 5 and lines[1].startswith(run1) and
          "iterations" in lines[1], "history: a line per run: %r" % lines)
    h = json.loads(kl("history", case, "--json").stdout)
    check([r["run"] for r in h["runs"]][0] == run1 and
          h["runs"][0]["iterations"] == 3 and
          h["runs"][0]["best_speedup"]["speedup"] > 1,
          "history --json: %r" % h["runs"][0])
    empty = small_case("empty")
    check("(no runs yet)" in kl("history", empty).stdout, "no runs")
    kl("report", empty, want=2)

    # ---- kl report ---------------------------------------------------------
    md = kl("report", case, "--run", run1).stdout
    for part in ("# kernlab run " + run1, "## Best so far", "## Per shape",
                 "| n128 |", "| n192 |", "## Findings before",
                 "## Budget", "## Every candidate", "ACCEPTED"):
        check(part in md, "markdown report has %r" % part)
    link = "](%s/runs/%s/iter_001/)" % (
        os.path.relpath(os.path.realpath(case), os.path.realpath(os.getcwd())),
        run1)
    check(link in md, "markdown links are relative to the current folder: "
          "want %r" % link)
    kl("report", case, "--run", "nope", want=2)
    kl("report", case, "--format", "pdf", want=2)
    os.makedirs(TMP + "/out/deep")
    html_path = TMP + "/out/deep/report.html"
    kl("report", case, "--run", run1, "-o", html_path)
    with open(html_path) as f:
        html = f.read()
    check(html.startswith("<!DOCTYPE html>") and 'id="curve"' in html and
          'id="scatter"' in html and "class=\"best\"" in html and
          "class=\"band\"" in html, "HTML with both charts")
    check("<script" not in html and not re.search(
        r"(src|href)=\"(https?:)?//", html), "no scripts, no fetches")
    hrefs = re.findall(r'href="([^"]+)"', html)
    check(len(hrefs) >= 8 and all(
        os.path.isdir(os.path.join(os.path.dirname(html_path), h))
        for h in hrefs), "every link reaches an iteration folder")
    kl("report", case, "--run", run1, "-o", html_path)  # replaced whole
    check(os.listdir(TMP + "/out/deep") == ["report.html"],
          "no temporary left behind")
    shutil.copy(html_path, TMP + "/report.html")

    # ---- a real GPU run's records (tune on gemm_f32, H200, 2026-11-22) ----
    gpu = copy_case(SRC, "gemm_f32", TMP + "/gemm_f32")
    fixture = SRC + "/tests/report/fixtures/gemm_h200"
    shutil.copytree(fixture + "/runs", gpu + "/runs")
    for f in ("solutions.jsonl", "benchmark.csv"):
        shutil.copy(os.path.join(fixture, f), gpu)
    md = kl("report", gpu).stdout
    for part in ("on NVIDIA H200", "x1.214 [1.209, 1.218] against the "
                 "baseline", "| s1024 | 419.30 | 348.11 | x1.207 [1.199, "
                 "1.215] |", "% | compute_bound → compute_bound |",
                 "**poor_coalescing** (high; s512, s1024, tall) — gone after",
                 "**stall_lg_throttle**", "worker s (GPU)"):
        check(part in md, "GPU report has %r" % part)
    # written before measurements were kept: the report says so, not more
    check("- iteration 0 (BASELINE): not recorded (a line written before "
          "kernlab kept how its numbers were obtained)" in md,
          "an old record's measurement is named as not recorded")
    check(re.search(r"\| 6\d\.\d GB/s, 5\d{3}\.\d GFLOP/s \| \d\.\d%", md),
          "achieved rates and share of the roofline from the profile")
    kl("report", gpu, "-o", TMP + "/gpu_report.html")
finally:
    receiver.kill()


# ---- Chromium ----------------------------------------------------------------

def png_pixels(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB/RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and ctype in (2, 6), "unexpected PNG type"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 255
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return w, h, rows


def curve_drawn(png):
    """The curve's blue (#0969da) in enough pixels, spanning most of the
    chart's width."""
    _, _, rows = png_pixels(png)
    xs = [x for row in rows for x, (r, g, b) in enumerate(row)
          if abs(r - 9) < 30 and abs(g - 105) < 30 and abs(b - 218) < 30]
    return len(xs) > 800 and max(xs) - min(xs) > 400, len(xs)


def chromium(page, png):
    p = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
         "--window-size=1100,1600", "--screenshot=" + png,
         "file://" + page], capture_output=True, text=True, timeout=120)
    console = [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
    return p.returncode, console


BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
if BROWSER:
    with open(TMP + "/control_fetch.html", "w") as f:
        f.write(html.replace("</body>",
                             '<img src="http://example.invalid/a.png">'
                             "</body>"))
    with open(TMP + "/control_blank.html", "w") as f:
        f.write("<!DOCTYPE html><html><body><p>no chart</p></body></html>")
    for name in ("report", "gpu_report"):
        rc, console = chromium(TMP + "/%s.html" % name, TMP + "/%s.png" % name)
        check(rc == 0 and os.path.exists(TMP + "/%s.png" % name),
              "chromium took the screenshot of " + name)
        check(console == [], "%s logs nothing to the console: %r"
              % (name, console))
        ok, n = curve_drawn(TMP + "/%s.png" % name)
        check(ok, "the screenshot of %s shows the curve (%d curve pixels)"
              % (name, n))
    rc, console = chromium(TMP + "/control_fetch.html", TMP + "/c1.png")
    check(any("example.invalid" in line for line in console),
          "control: a fetching page is caught by the console check")
    chromium(TMP + "/control_blank.html", TMP + "/c2.png")
    check(not curve_drawn(TMP + "/c2.png")[0],
          "control: a page without the chart fails the pixel check")
    print("chromium: report loaded, %d curve pixels" % n)
else:
    print("SKIP chromium checks: no chromium (scripts/test.sh installs it)")

if FAILS:
    print("%d failure(s)" % len(FAILS))
    sys.exit(1)
shutil.rmtree(TMP, ignore_errors=True)
print("report and webhook tests passed")
