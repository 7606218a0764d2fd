#!/usr/bin/env python3
"""tests/test_gate.py KVSCOPE — `kvscope compare --fail-on regression` end to
end: exit codes, reasons in text / JSON / markdown, JUnit XML read back with
Python's xml parser, several AFTERs, bad usage.

- The bundled engine traces (examples/traces): fp8-direct -> full-cast exits 3
  with the new kv_full_buffer_cast and a significant rise of GPU and wall
  time per step; the reverse exits 0; a trace against itself exits 0 with no
  reason.
- Generated traces (ProfilerStep ranges, one kernel each) whose step times
  are chosen here: NEW 3% slower with 10% step-to-step noise -> not
  significant, exit 0; NEW 20% slower with 2% noise -> exit 3; one step each
  -> decided on the threshold alone, and said so. kvscope's change and 95%
  interval are checked against a brute-force Hodges-Lehmann / Mann-Whitney
  computed here from the trace's own numbers (every pairwise difference
  sorted; the exact null distribution from integer counts, or the normal
  formula past 2500 pairs).

Exit 0 pass, 1 fail.
"""
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvs_test import check, finish  # noqa: E402

kvscope = sys.argv[1]
root = os.environ.get("KVS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
bundled = os.path.join(root, "examples", "traces")
tmp = tempfile.mkdtemp(prefix="kvs_gate_")


def run(*args):
    return subprocess.run([kvscope, "compare", *args, "--quiet"], capture_output=True, text=True)


def gate_json(*args):
    out = run(*args, "--fail-on", "regression", "--format", "json")
    doc = json.loads(out.stdout) if out.stdout.strip().startswith("{") else {}
    return out.returncode, doc, out.stderr


def by_kind(gate, kind, what=None):
    return [c for c in gate.get("checks", []) if c["kind"] == kind and (what is None or c["what"] == what)]


# ---------------------------------------------------------------------------
# brute force: Hodges-Lehmann and the Mann-Whitney interval

def mw_counts(m, n):
    """arrangements of m + n values by U (pairs of a second-sample value below a first-sample one)"""
    c = [[None] * (n + 1) for _ in range(m + 1)]
    for a in range(m + 1):
        for b in range(n + 1):
            if a == 0 or b == 0:
                c[a][b] = [1]
                continue
            up, left = c[a - 1][b], c[a][b - 1]
            c[a][b] = [(up[v - b] if 0 <= v - b < len(up) else 0) + (left[v] if v < len(left) else 0)
                       for v in range(a * b + 1)]
    return c[m][n]


def interval(x, y):
    """(shift, low, high) or (shift, None, None), all pairs y_j - x_i"""
    d = sorted(b - a for a in x for b in y)
    N = len(d)
    shift = d[N // 2] if N % 2 else (d[N // 2 - 1] + d[N // 2]) / 2
    m, n = len(x), len(y)
    if N <= 2500:
        counts = mw_counts(m, n)
        total, k, acc = sum(counts), 0, 0
        for u in range(N // 2 + 1):
            acc += counts[u]
            if acc / total > 0.025 * (1 + 1e-12):
                break
            k = u + 1
    else:
        k = math.floor(N / 2 - statistics.NormalDist().inv_cdf(0.975) * math.sqrt(N * (m + n + 1) / 12))
    if k < 1:
        return shift, None, None
    return shift, d[k - 1], d[N - k]


# ---------------------------------------------------------------------------
# generated traces

KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"


def write_trace(name, walls_ms):
    """one ProfilerStep per wall time (ns-rounded), a kernel of 90% of it inside"""
    ev, t, steps = [], 1000.0, []
    for i, w in enumerate(walls_ms):
        dur = round(w * 1000, 3)  # us with ns decimals, as Kineto writes them
        kdur = round(dur * 0.9, 3)
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i, "ts": t,
                   "dur": dur, "pid": 1, "tid": 1})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 1,
                   "dur": 2, "pid": 1, "tid": 1, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": KERNEL, "ts": t + 5, "dur": kdur, "pid": 0,
                   "tid": 7, "args": {"correlation": i + 1, "device": 0, "stream": 7}})
        steps.append((dur / 1000, kdur / 1000))
        t += dur + 50
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump({"traceEvents": ev, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}]}, f)
    return path, steps


def noisy(n, mean, noise, rng):
    """n step times of `mean` ms with a spread of `noise` (a fraction: the normal
    quantiles of the steps, in a shuffled order), so the noise is what it says"""
    q = [mean * (1 + noise * statistics.NormalDist().inv_cdf((i + 0.5) / n)) for i in range(n)]
    rng.shuffle(q)
    return q


def check_against_brute_force(label, check_obj, xs, ys):
    shift, lo, hi = interval(xs, ys)
    med = statistics.median(xs)
    check(abs(check_obj["before"] - med) <= 1e-9 * med, "%s: before is BASE's median (%s vs %.6f)" %
          (label, check_obj["before"], med))
    check(abs(check_obj["change_pct"] - 100 * shift / med) <= 1e-9,
          "%s: change %.4f%% = brute-force Hodges-Lehmann %.4f%%" % (label, check_obj["change_pct"],
                                                                    100 * shift / med))
    iv = check_obj["interval_pct"]
    if lo is None:
        check(iv is None, "%s: no interval (brute force has none)" % label)
    else:
        check(iv is not None and abs(iv[0] - 100 * lo / med) <= 1e-9 and abs(iv[1] - 100 * hi / med) <= 1e-9,
              "%s: interval %s = brute force [%.4f, %.4f]" % (label, iv, 100 * lo / med, 100 * hi / med))


def generated(label, n, slower, noise, seed, expect_rc, expect_sig):
    rng = random.Random(seed)
    base, bsteps = write_trace(label + "_base.json", noisy(n, 10.0, noise, rng))
    new, nsteps = write_trace(label + "_new.json", [v * (1 + slower) for v in noisy(n, 10.0, noise, rng)])
    rc, doc, err = gate_json(base, new)
    check(rc == expect_rc, "%s: exit %d (%d; %s)" % (label, expect_rc, rc, err.strip()[-200:]))
    gate = doc.get("gate", {})
    for kind, col in (("wall_time", 0), ("gpu_time", 1)):
        c = by_kind(gate, kind)
        if not check(len(c) == 1, "%s: one %s check" % (label, kind)):
            continue
        c = c[0]
        check(c["significant"] is expect_sig, "%s: %s significant is %s (%s)" %
              (label, kind, expect_sig, c["message"]))
        check(c["steps"] == [n, n], "%s: %s from %d and %d steps (%s)" % (label, kind, n, n, c["steps"]))
        check_against_brute_force("%s %s" % (label, kind), c, [s[col] for s in bsteps],
                                  [s[col] for s in nsteps])
    return gate


# 3% slower, 10% noise: inside the noise (and under the threshold)
g = generated("slower3_noise10", 20, 0.03, 0.10, 1, 0, False)
wall = by_kind(g, "wall_time")
check(bool(wall) and "not significant" in wall[0]["message"], "3%%/10%%: the text says not significant (%s)" %
      (wall[0]["message"] if wall else None))
check(g.get("reasons") == [], "3%/10%: no reason")
# the same traces with the threshold at 0: still not significant, still exit 0
rng = random.Random(1)
b0, _ = write_trace("t0_base.json", noisy(20, 10.0, 0.10, rng))
n0, _ = write_trace("t0_new.json", [v * 1.03 for v in noisy(20, 10.0, 0.10, rng)])
rc, doc, _ = gate_json(b0, n0, "--threshold", "0")
check(rc == 0, "3%%/10%% at --threshold 0: exit 0, the change is inside the noise (%d)" % rc)

# 20% slower, 2% noise: a regression
g = generated("slower20_noise2", 20, 0.20, 0.02, 2, 3, True)
reasons = {r["kind"] for r in g.get("reasons", [])}
check({"wall_time", "gpu_time"} <= reasons, "20%%/2%%: wall and GPU time are reasons (%s)" % sorted(reasons))
check(g.get("passed") is False and g.get("threshold_pct") == 5, "20%/2%: passed false, threshold_pct 5")
# past the exact table (60 x 60 = 3600 pairs): the normal approximation
generated("slower20_noise2_n60", 60, 0.20, 0.02, 3, 3, True)
generated("slower3_noise10_n60", 60, 0.03, 0.10, 4, 0, False)

# one step each: the threshold alone, said so
b1, bs = write_trace("one_base.json", [10.0])
n1, ns = write_trace("one_new.json", [12.0])
rc, doc, _ = gate_json(b1, n1)
check(rc == 3, "one step each, 20%% slower: exit 3 (%d)" % rc)
w = by_kind(doc.get("gate", {}), "wall_time")
if check(len(w) == 1, "one step each: a wall-time check"):
    w = w[0]
    check(w["significant"] is None and w["interval_pct"] is None, "one step each: significance null, no interval")
    check("significance cannot be judged from one step per trace" in w["message"] and
          "threshold alone decides" in w["message"], "one step each: said so (%s)" % w["message"])
    check(abs(w["change_pct"] - 20.0) < 1e-9, "one step each: +20%% (%s)" % w["change_pct"])
n1b, _ = write_trace("one_new3.json", [10.3])
rc, doc, _ = gate_json(b1, n1b)
check(rc == 0, "one step each, 3%% slower: exit 0 (%d)" % rc)
w = by_kind(doc.get("gate", {}), "wall_time")
check(bool(w) and "within the 5% threshold; significance cannot be judged from one step per trace" in w[0]["message"],
      "one step each, 3%%: within the threshold, said so (%s)" % (w[0]["message"] if w else None))
out = run(b1, n1, "--fail-on", "regression")
check(out.returncode == 3 and "significance cannot be judged from one step per trace" in out.stdout,
      "one step each: text says so")

# ---------------------------------------------------------------------------
# the bundled engine traces

fp8 = os.path.join(bundled, "glm5_fp8-direct.json.gz")
full = os.path.join(bundled, "glm5_full-cast.json.gz")
active = os.path.join(bundled, "glm5_active-cast.json.gz")
opts = ["--model", "glm5", "--kv-capacity", "495552", "--batch", "1"]

rc, doc, err = gate_json(fp8, full, *opts)
check(rc == 3, "fp8-direct -> full-cast: exit 3 (%d; %s)" % (rc, err.strip()[-200:]))
gate = doc.get("gate", {})
reasons = gate.get("reasons", [])
check(any(r["kind"] == "finding" and r["what"] == "kv_full_buffer_cast" for r in reasons),
      "fp8-direct -> full-cast: the new kv_full_buffer_cast is a reason")
for kind in ("gpu_time", "wall_time"):
    r = [x for x in reasons if x["kind"] == kind]
    check(len(r) == 1 and r[0]["significant"] is True and r[0]["change_pct"] > 200 and r[0]["interval_pct"][0] > 5,
          "fp8-direct -> full-cast: %s rose, significant (%s)" % (kind, r[0]["message"] if r else None))
check(any(r["kind"] == "copy_bytes" and "Float8_e4m3fn" in r["what"] for r in reasons),
      "fp8-direct -> full-cast: the FP8 cast role is a reason (new, 66.8 GB per step)")
check(all(set(r) >= {"kind", "what", "before", "after", "change_pct", "significant"} for r in reasons),
      "every reason has kind, what, before, after, change_pct, significant")
# the figures against the raw trace: GPU busy per step from the report's steps
steps = {}
for name, path in (("fp8", fp8), ("full", full)):
    rep = json.loads(subprocess.run([kvscope, "report", path, "--format", "json", "--quiet"],
                                    capture_output=True, text=True).stdout)
    steps[name] = rep["steps"]["items"]
r = [x for x in reasons if x["kind"] == "gpu_time"]
if r:
    check_against_brute_force("fp8-direct -> full-cast gpu_time", r[0],
                              [s["gpu_busy_ms"] for s in steps["fp8"]], [s["gpu_busy_ms"] for s in steps["full"]])
out = run(fp8, full, *opts, "--fail-on", "regression")
text = out.stdout
check(out.returncode == 3 and "GATE  FAILED" in text and text.index("GATE") < text.index("VERDICT"),
      "text: the gate first, FAILED")
check("  FAIL  kv_full_buffer_cast: new in NEW, of severity high" in text, "text: the finding's reason")
md = run(fp8, full, *opts, "--fail-on", "regression", "--format", "md").stdout
check("## Gate: **failed**" in md and "- **FAIL** GPU time per step: " in md, "md: the gate as a PR comment")

rc, doc, _ = gate_json(full, fp8, *opts)
check(rc == 0 and doc.get("gate", {}).get("passed") is True and doc["gate"]["reasons"] == [],
      "full-cast -> fp8-direct: exit 0, no reason (%d)" % rc)
rc, doc, _ = gate_json(full, full, *opts)
g = doc.get("gate", {})
check(rc == 0 and g.get("reasons") == [] and all(c["result"] == "pass" for c in g.get("checks", [])),
      "full-cast against itself: exit 0, no reason, every check passes (%d)" % rc)
check(all(c["change_pct"] == 0 for c in g.get("checks", []) if c["kind"] in ("gpu_time", "wall_time")),
      "full-cast against itself: no change")
# without --fail-on: exit 0, no gate
out = run(fp8, full, *opts, "--format", "json")
check(out.returncode == 0 and "gate" not in json.loads(out.stdout), "without --fail-on: exit 0, no gate key")
# a threshold above the time changes: the finding and the bytes still fail it
rc, doc, _ = gate_json(fp8, full, *opts, "--threshold", "300")
kinds = sorted({r["kind"] for r in doc.get("gate", {}).get("reasons", [])})
check(rc == 3 and kinds == ["copy_bytes", "finding"], "--threshold 300: only the finding and the bytes (%s)" % kinds)

# several AFTERs: each gated, 3 when any regresses
rc, doc, _ = gate_json(fp8, fp8, full, *opts)
cmps = doc.get("comparisons", [])
check(rc == 3 and doc.get("schema") == "kvscope.summary/1" and len(cmps) == 2, "BASE A B: exit 3, two comparisons")
check([c.get("gate", {}).get("passed") for c in cmps] == [True, False], "BASE A B: A passes, B fails")
rc, _, _ = gate_json(full, fp8, full, *opts)
check(rc == 0, "full-cast -> fp8-direct, full-cast: exit 0 (%d)" % rc)

# ---------------------------------------------------------------------------
# JUnit XML


def junit(*args):
    out = run(*args, "--fail-on", "regression", "--format", "junit")
    try:
        return out.returncode, ET.fromstring(out.stdout)
    except ET.ParseError as e:
        check(False, "junit parses (%s)" % e)
        return out.returncode, None


rc, x = junit(fp8, full, active, *opts)
check(rc == 3, "junit, BASE A B: exit 3 (%d)" % rc)
if x is not None:
    check(x.tag == "testsuites", "junit: root <testsuites>")
    suites = x.findall("testsuite")
    check(len(suites) == 2, "junit: one testsuite per AFTER (%d)" % len(suites))
    total = 0
    for s in suites:
        cases = s.findall("testcase")
        fails = [f for c in cases for f in c.findall("failure")]
        skips = [f for c in cases for f in c.findall("skipped")]
        total += len(cases)
        check(s.get("name") and int(s.get("tests")) == len(cases) and int(s.get("failures")) == len(fails)
              and int(s.get("skipped")) == len(skips) and s.get("errors") == "0",
              "junit: %s: tests/failures/skipped match its testcases" % s.get("name"))
        check(all(c.get("name") and c.get("classname") for c in cases), "junit: every testcase has name and classname")
        check(all(f.get("message") and f.text == f.get("message") for f in fails), "junit: every failure has its reason")
        check(all(len(c.findall("failure")) <= 1 for c in cases), "junit: at most one failure a testcase")
    check(int(x.get("tests")) == total, "junit: testsuites counts every testcase")
    first = suites[0] if suites else None
    names = [c.get("name") for c in first.findall("testcase")] if first is not None else []
    failed = [c.get("name") for c in first.findall("testcase") if c.find("failure") is not None] if first is not None else []
    check("finding kv_full_buffer_cast" in failed and "GPU time per step" in failed,
          "junit: full-cast's failures include the finding and GPU time (%s)" % failed)
    check(len(names) == len(set(names)), "junit: testcase names are distinct in a suite")
xml_path = os.path.join(tmp, "gate.xml")
out = run(full, fp8, *opts, "--fail-on", "regression", "-o", xml_path)
check(out.returncode == 0 and open(xml_path).read().startswith("<?xml"), "-o gate.xml with --fail-on: junit")
rc, x = junit(full, fp8, *opts)
check(rc == 0 and x is not None and x.find("testsuite").get("failures") == "0" and
      x.find("testsuite/testcase/failure") is None, "junit, the fix: no failure, exit 0")

# ---------------------------------------------------------------------------
# bad usage: exit 2, nothing read

for args, what in ((["--format", "junit"], "junit without --fail-on"),
                   (["--fail-on", "slowness"], "--fail-on other than regression"),
                   (["--threshold", "5"], "--threshold without --fail-on"),
                   (["--fail-on", "regression", "--threshold", "-1"], "a negative threshold"),
                   (["--fail-on", "regression", "--threshold", "x"], "a threshold that is no number"),
                   (["--fail-on", "regression", "--format", "junit", "--summary"], "junit with --summary")):
    out = run(fp8, full, *args)
    check(out.returncode == 2 and "kvscope compare:" in out.stderr, "%s: exit 2 (%d: %s)" %
          (what, out.returncode, out.stderr.strip()[:120]))
out = subprocess.run([kvscope, "report", fp8, "--format", "junit"], capture_output=True, text=True)
check(out.returncode == 2 and "junit" in out.stderr, "report --format junit: exit 2 (%d)" % out.returncode)
out = subprocess.run([kvscope, "compare", "--help"], capture_output=True, text=True)
check("--fail-on regression" in out.stdout and "--threshold PCT" in out.stdout and "junit" in out.stdout,
      "compare --help shows the gate")

# ---------------------------------------------------------------------------
# examples/6_ci_gate.sh: docs/ci.md's gate step

env = dict(os.environ, KVSCOPE=kvscope, KVS_OUT_DIR=os.path.join(tmp, "ci"))
script = os.path.join(root, "examples", "6_ci_gate.sh")
out = subprocess.run(["bash", script], capture_output=True, text=True, env=env)
check(out.returncode == 3 and "GATE  FAILED" in out.stdout, "6_ci_gate.sh (bundled): exit 3, the gate on the log (%d: %s)" %
      (out.returncode, out.stderr.strip()[-200:]))
files = {f: os.path.join(tmp, "ci", f) for f in ("gate.xml", "gate.md", "compare.html")}
check(all(os.path.getsize(p) > 0 for p in files.values() if os.path.exists(p)) and all(map(os.path.exists, files.values())),
      "6_ci_gate.sh: gate.xml, gate.md, compare.html written")
if os.path.exists(files["gate.xml"]):
    x = ET.parse(files["gate.xml"]).getroot()
    check(x.find("testsuite/testcase/failure") is not None, "6_ci_gate.sh: gate.xml has the failures")
if os.path.exists(files["compare.html"]):
    check("<h2>Gate: failed</h2>" in open(files["compare.html"]).read(), "6_ci_gate.sh: the HTML shows the gate")
out = subprocess.run(["bash", script, full, fp8, "--batch", "1"], capture_output=True, text=True, env=env)
check(out.returncode == 0, "6_ci_gate.sh full-cast fp8-direct: exit 0 (%d)" % out.returncode)
out = subprocess.run(["bash", script, full, os.path.join(tmp, "nonexistent.json")], capture_output=True, text=True,
                     env=env)
check(out.returncode == 2, "6_ci_gate.sh with a missing trace: exit 2, not a verdict (%d)" % out.returncode)

sys.exit(finish())
