#!/usr/bin/env python3
"""tests/test_torch_ops.py — kvscope's PyTorch hook (libtrace/torch/) on a
machine without a GPU, with Debian's CPU-only torch (python3-torch) and
/usr/bin/python3:

  - the hook builds at the first `import torch` (cached after) and loads;
  - every op comes out as a `cpu_op` with torch.profiler's "Input Dims" /
    "Input type" (here held to the profiler of the same torch, op by op, on
    the same program), "Sequence number", nesting on the op's thread, the
    capture's clock (CLOCK_MONOTONIC), record_function as user_annotation;
  - a planted whole-cache repeat_kv copy is there with its shape, and
    `kvscope report` reads the trace;
  - the program's output is the same with and without the hook, closed
    window or open, and sys.path / sys.modules look the same;
  - a torch too old, a hook that cannot build, an injection library
    without the table: a warning each, the program runs on unchanged;
  - a sitecustomize the hook shadows still runs;
  - `kvscope capture --torch-ops auto|on|off`: which programs get the hook
    (python by name or #! line; a shell script only with on), PYTHONPATH.

Without a driver the injection library never starts, so the capture is
played by tests/torch_ops_sink.c (libkvs-torch-sink.so: the capture's own
op code and writer, CUPTI stubbed). The hook is loaded by putting
libtrace/torch first on PYTHONPATH, as `kvscope capture --torch-ops` does.

    test_torch_ops.py KVSCOPE SINK TORCH_DIR
Skips (77), saying why, without /usr/bin/python3 that imports torch or
without a C++ compiler.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvs_test import check, finish  # noqa: E402

PY = "/usr/bin/python3"

# The captured program: a GQA "static cache" whose repeat_kv copies the whole
# cache every layer (aten::reshape -> aten::clone -> aten::copy_ [1,4,4,512,64]),
# autograd (sequence numbers, backward nodes), a tensor list, a scalar list.
PROG = r'''
import json, os, sys, time
import torch
torch.set_num_threads(1)
torch.manual_seed(0)
t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
res = []
with torch.autograd.profiler.record_function("body"):
    cache = torch.randn(1, 4, 512, 64, dtype=torch.bfloat16)
    for step in range(2):
        with torch.autograd.profiler.record_function("step_%d" % step):
            for layer in range(2):
                full = cache[:, :, None].expand(1, 4, 4, 512, 64).reshape(1, 16, 512, 64)
                res.append(round(float(full.float().sum()), 2))
    w = torch.randn(8, requires_grad=True)
    (w * 3).sum().backward()
    c = torch.cat([torch.ones(2, 3), torch.zeros(2, 3)]).view(12, 1)
    res.append(round(float(w.grad.sum()), 3))
    res.append(list(c.shape))
t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
print(json.dumps({"res": res, "path": sys.path[1:], "mods": sorted(sys.modules),
                  "meta": [type(f).__name__ for f in sys.meta_path]}))
sys.stderr.write("CLOCK %d %d %d\n" % (t0, t1, os.getpid()))
'''

# The same program's body under torch.profiler (record_shapes): each op's
# name, input shapes and sequence number in order, inside the "body" range.
PROF = r'''
import json, sys
import torch
from torch.profiler import profile, ProfilerActivity
src = open(sys.argv[1]).read()
# every op as recorded: the event list would fold an op into its parent of
# the same name (aten::sum calling aten::sum.dim_IntList), which the
# profiler's own trace file (what kvscope reads) does not
torch.autograd.profiler_util.EventList._remove_dup_nodes = lambda self: None
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
    exec(compile(src, sys.argv[1], "exec"), {"__name__": "__main__"})
ev = p.events()
body = [e for e in ev if e.name == "body"][0]
b0, b1 = body.time_range.start, body.time_range.end
ops = [e for e in ev if e.name != "body" and not e.name.startswith("step_") and
       b0 <= e.time_range.start <= b1]
ops.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
json.dump([[e.name, e.input_shapes, e.sequence_nr, e.time_range.start] for e in ops],
          open(sys.argv[2], "w"))
'''


def run(args, env_extra, cwd, timeout=600):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KVS_", "CUDA_INJ", "NVTX_INJ"))}
    env.pop("PYTHONPATH", None)
    env.update(env_extra)
    p = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def events(path, cats=("cpu_op", "user_annotation")):
    with open(path) as f:
        d = json.load(f)
    return d, [e for e in d["traceEvents"] if e.get("cat") in cats]


def sink_program(work, name, body):
    """work/name: a Python program that imports torch, loads the capture's
    stand-in as `sink` (kvs_sink_set_running: the window) and runs body; its path"""
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write("import ctypes, os, torch\n"
                "sink = ctypes.CDLL(os.environ['CUDA_INJECTION64_PATH'])\n" + body)
    return path


def inside(a, b):
    """event a within event b (ts/dur in us), on the same thread"""
    return (a["tid"] == b["tid"] and b["ts"] <= a["ts"] and
            a["ts"] + a["dur"] <= b["ts"] + b["dur"] + 1e-3)


def main():
    if len(sys.argv) != 4:
        print("usage: test_torch_ops.py KVSCOPE SINK TORCH_DIR")
        return 99
    kvscope, sink, tdir = (os.path.abspath(a) for a in sys.argv[1:4])
    if not os.access(PY, os.X_OK):
        print("SKIP %s is missing (Debian's python3 with python3-torch)" % PY)
        return 77
    r = subprocess.run([PY, "-c", "import torch; print(torch.__version__)"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       universal_newlines=True)
    if r.returncode != 0:
        print("SKIP %s cannot import torch (apt-get install python3-torch libtorch-dev)" % PY)
        return 77
    if not shutil.which(os.environ.get("CXX") or "c++"):
        print("SKIP no C++ compiler to build the hook with")
        return 77
    print("torch %s" % r.stdout.strip())
    work = tempfile.mkdtemp(prefix="kvs_torch_ops_")
    try:
        return tests(kvscope, sink, tdir, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def tests(kvscope, sink, tdir, work):
    prog = os.path.join(work, "prog.py")
    with open(prog, "w") as f:
        f.write(PROG)
    with open(os.path.join(work, "prof.py"), "w") as f:
        f.write(PROF)
    cache = os.path.join(work, "cache")
    hook = {"PYTHONPATH": tdir, "CUDA_INJECTION64_PATH": sink, "XDG_CACHE_HOME": cache,
            "KVS_CAPTURE_TORCH_OPS": "auto"}

    # the program alone, and its profile
    rc, plain, err = run([PY, prog], {}, work)
    if not check(rc == 0, "the program runs plainly"):
        print(err)
        return finish()
    rc, _, err = run([PY, os.path.join(work, "prof.py"), prog, os.path.join(work, "prof.json")],
                     {}, work)
    check(rc == 0, "torch.profiler(record_shapes=True) over the same program")
    prof = json.load(open(os.path.join(work, "prof.json"))) if rc == 0 else []

    # first run under the hook: it is built, loaded, and records
    trace = os.path.join(work, "t1.json")
    rc, out, err = run([PY, prog], dict(hook, KVS_CAPTURE_OUTPUT=trace), work)
    check(rc == 0, "the program runs under the hook (exit %d)" % rc)
    check("building the hook for torch" in err, "the first run builds the hook (said on stderr)")
    check(out == plain, "its output is the program's own (results, sys.path, sys.modules, "
                        "sys.meta_path after import)")
    check("cannot" not in err and "warning" not in err.lower(), "no warning: %r" % err[-300:])
    built = [os.path.join(dp, n) for dp, _, ns in os.walk(cache) for n in ns
             if n == "kvs_torch_ops.so"]
    check(len(built) == 1, "one hook cached under XDG_CACHE_HOME/kvscope/torch-ops: %s" % built)
    if not check(os.path.exists(trace), "the stand-in capture wrote its trace"):
        print(err)
        return finish()
    clock = [ln.split() for ln in err.splitlines() if ln.startswith("CLOCK ")][0]
    t0, t1, pid = int(clock[1]), int(clock[2]), int(clock[3])
    doc, ev = events(trace)
    ops = [e for e in ev if e["cat"] == "cpu_op"]
    check(len(ops) > 50, "%d cpu_op events" % len(ops))
    ext = [e["args"]["External id"] for e in ev]
    check(len(set(ext)) == len(ext) and all(x > 0 for x in ext),
          "every op and range has its own External id")
    body = [e for e in ev if e["name"] == "body" and e["cat"] == "user_annotation"]
    steps = [e for e in ev if e["name"].startswith("step_") and e["cat"] == "user_annotation"]
    check(len(body) == 1 and len(steps) == 2,
          "record_function ranges are user_annotation events (body, step_0, step_1)")
    if not body:
        return finish()
    body = body[0]
    check(t0 <= body["ts"] * 1000 + 1 and (body["ts"] + body["dur"]) * 1000 <= t1 + 1,
          "times on the capture's clock (CLOCK_MONOTONIC, as the program read it around the body)")
    check(all(e["pid"] == pid and e["tid"] == pid for e in ev if inside(e, body)),
          "the body's ops are on the program's pid and main thread")
    mine = sorted((e for e in ops if inside(e, body)), key=lambda e: (e["ts"], -e["dur"]))

    # op by op against torch.profiler of the same torch. The profiler's times
    # are whole microseconds: ops that start in the same one (a fast op and
    # the op it calls) have no order there, so its ops are taken as runs of
    # one start each, and this capture's ops (ns times) in order cut into
    # runs of the same lengths; each pair of runs must hold the same ops
    def runs(seq, start):
        out = []
        for x in seq:
            if out and start(out[-1][-1]) == start(x):
                out[-1].append(x)
            else:
                out.append([x])
        return out
    pruns = runs(prof, lambda p: p[3])
    mruns, k = [], 0
    for r in pruns:
        mruns.append(mine[k:k + len(r)])
        k += len(r)

    from collections import Counter
    tl = lambda types: "TensorList" in (types or [])  # 1.13's profiler writes a tensor list as []
    ev_fn = lambda name: name.startswith("autograd::engine::evaluate_function: ")
    same_names = len(mine) == len(prof)
    n_dims = same_dims = n_seq = same_seq = 0
    for mr, pr in zip(mruns, pruns):
        same_names &= sorted(e["name"] for e in mr) == sorted(p[0] for p in pr)
        if not same_names:
            break
        ops_d = [e for e in mr if not tl(e["args"].get("Input type"))]
        ops_s = [e for e in ops_d if not ev_fn(e["name"])]
        # the profiler's op of a run holding a tensor list is the one whose
        # name the capture's tensor-list op has: take as many of each name out
        drop = Counter(e["name"] for e in mr if tl(e["args"].get("Input type")))
        pd = []
        for p in pr:
            if drop[p[0]]:
                drop[p[0]] -= 1
            else:
                pd.append(p)
        # the profiler gives "evaluate_function: X" the sequence number of the
        # node X inside it, once the run is over; the hook writes ops as they start
        ps = [p for p in pd if not ev_fn(p[0])]
        d = Counter((e["name"], json.dumps(e["args"].get("Input Dims"))) for e in ops_d)
        n_dims += len(ops_d)
        same_dims += sum((d & Counter((p[0], json.dumps(p[1])) for p in pd)).values())
        q = Counter((e["name"], e["args"].get("Sequence number", -1)) for e in ops_s)
        n_seq += len(ops_s)
        same_seq += sum((q & Counter((p[0], p[2]) for p in ps)).values())
    check(same_names, "the same %d ops in the same order as torch.profiler (%d; ops starting in "
          "the same microsecond of its clock as one run)" % (len(mine), len(prof)))
    check(n_dims > 100 and same_dims == n_dims, "Input Dims equal the profiler's on %d of %d "
          "ops (tensor lists aside)" % (same_dims, n_dims))
    check(n_seq > 100 and same_seq == n_seq, "Sequence number equal the profiler's on %d of %d "
          "ops (tensor lists and evaluate_function aside)" % (same_seq, n_seq))

    # the planted whole-cache copy, its nesting, the other inputs
    copies = [e for e in mine if e["name"] == "aten::copy_" and
              e["args"].get("Input Dims") == [[1, 4, 4, 512, 64], [1, 4, 4, 512, 64], []]]
    check(len(copies) == 4 and all(e["args"]["Input type"] == ["c10::BFloat16", "c10::BFloat16",
                                                               "Scalar"] for e in copies),
          "4 whole-cache aten::copy_ [1,4,4,512,64] bf16 <- bf16 (2 steps x 2 layers)")
    nested = 0
    for c in copies:
        clone = [e for e in mine if e["name"] == "aten::clone" and inside(c, e)]
        reshape = [e for e in mine if e["name"] == "aten::reshape" and clone and
                   inside(clone[0], e)]
        step = [e for e in steps if inside(c, e)]
        nested += bool(clone and reshape and step)
    check(nested == 4, "each copy inside aten::clone inside aten::reshape inside its step range")
    cat = [e for e in mine if e["name"] == "aten::cat"]
    check(len(cat) == 1 and cat[0]["args"]["Input Dims"] == [[[2, 3], [2, 3]], []] and
          cat[0]["args"]["Input type"] == ["TensorList", "Scalar"],
          "aten::cat: a tensor list nests its sizes, type TensorList (torch.profiler 2.x)")
    view = [e for e in mine if e["name"] == "aten::view"]
    check(view and view[-1]["args"]["Input type"] == ["float", "ScalarList"],
          "aten::view's size list is a ScalarList")
    mul = [e for e in mine if e["name"] == "aten::mul" and "Sequence number" in e["args"]]
    back = [e for e in mine if e["name"] == "MulBackward0"]
    check(mul and back and back[0]["args"].get("Sequence number") ==
          mul[0]["args"]["Sequence number"] and "Fwd thread id" in back[0]["args"],
          "autograd: aten::mul's sequence number comes back on MulBackward0")
    check(all("Sequence number" not in e["args"] for e in copies),
          "no sequence number where autograd gives none (the copies)")

    # kvscope report reads it
    rc, rep, err = run([kvscope, "report", trace, "--format", "json"], {}, work)
    ok = rc == 0
    if ok:
        try:
            rj = json.loads(rep)
        except ValueError:
            ok = False
    check(ok, "kvscope report reads the trace (exit %d) %s" % (rc, err[-200:]))

    # cached: the second run builds nothing
    trace2 = os.path.join(work, "t2.json")
    rc, out, err = run([PY, prog], dict(hook, KVS_CAPTURE_OUTPUT=trace2), work)
    check(rc == 0 and out == plain and "building" not in err and os.path.exists(trace2),
          "the second run loads the cached hook, builds nothing, same output")

    # a closed window: loaded, nothing recorded, nothing formatted
    trace3 = os.path.join(work, "t3.json")
    rc, out, err = run([PY, prog], dict(hook, KVS_CAPTURE_OUTPUT=trace3, KVS_SINK_RUNNING="0"),
                       work)
    ok = rc == 0 and out == plain and os.path.exists(trace3)
    check(ok and not events(trace3)[1], "capture not recording: no op recorded, same output")

    # a window opened and closed while the program runs (the stand-in's
    # kvs_sink_set_running, as cudaProfilerStart/Stop): the observer is off
    # while closed, only the ops inside the window are recorded
    win = sink_program(
        work, "win.py",
        "a = torch.ones(3)\n"
        "sink.kvs_sink_set_running(0)\n"
        "for _ in range(100): a.mul_(1)\n"
        "sink.kvs_sink_set_running(1)\n"
        "for _ in range(50): a.add_(1)\n"
        "sink.kvs_sink_set_running(0)\n"
        "for _ in range(70): a.sub_(1)\n"
        "sink.kvs_sink_set_running(1)\n"
        "for _ in range(30): a.div_(1)\n"
        "print(a.tolist())\n")
    tw = os.path.join(work, "win.json")
    rc, out, err = run([PY, win], dict(hook, KVS_CAPTURE_OUTPUT=tw), work)
    rc0, out0, _ = run([PY, win], {"CUDA_INJECTION64_PATH": sink,  # no hook: the plain output
                                   "KVS_CAPTURE_OUTPUT": os.path.join(work, "win0.json")}, work)
    names = [e["name"] for e in events(tw)[1]] if rc == 0 and os.path.exists(tw) else []
    count = {n: names.count(n) for n in ("aten::mul_", "aten::add_", "aten::sub_", "aten::div_")}
    check(rc == 0 and out == out0 and count == {"aten::mul_": 0, "aten::add_": 50, "aten::sub_": 0,
                                                "aten::div_": 30},
          "a window closed, opened, closed, opened: only the ops inside it (%s), same output" % count)

    # torch.autograd.profiler._is_profiler_enabled follows the window (as
    # Inductor reads it: its Triton launches become ranges only while true)
    # and keeps what torch.profiler writes into the module; 1.13 has no such
    # attribute, so the test forces it (KVS_TORCH_OPS_FLAG_TEST)
    flagp = sink_program(
        work, "flag.py",
        "import torch.autograd.profiler as ap\n"
        "r = []\n"
        "sink.kvs_sink_set_running(0); r.append(ap._is_profiler_enabled)\n"
        "sink.kvs_sink_set_running(1); r.append(ap._is_profiler_enabled)\n"
        "sink.kvs_sink_set_running(0); r.append(ap._is_profiler_enabled)\n"
        "ap.__dict__['_is_profiler_enabled'] = True; r.append(ap._is_profiler_enabled)\n"
        "ap.__dict__['_is_profiler_enabled'] = False; r.append(ap._is_profiler_enabled)\n"
        "ap._is_profiler_enabled = True; r.append(ap.__dict__['_is_profiler_enabled'])\n"
        "print(r)\n")
    rc, out, err = run([PY, flagp], dict(hook, KVS_CAPTURE_OUTPUT=os.path.join(work, "flag.json"),
                                         KVS_TORCH_OPS_FLAG_TEST="1"), work)
    check(rc == 0 and out.strip() == "[False, True, False, True, False, True]",
          "_is_profiler_enabled true while the window is open and while the profiler sets it "
          "(%r %s)" % (out.strip(), err.strip()[-200:]))
    rc, out, err = run([PY, "-c", "import torch.autograd.profiler as ap; "
                        "print(type(ap).__name__, '_is_profiler_enabled' in vars(ap))"],
                       dict(hook, KVS_CAPTURE_OUTPUT=os.path.join(work, "flag2.json")), work)
    check(rc == 0 and out.strip() == "module False",
          "torch without _is_profiler_enabled (1.13): the module left as it is (%r)" % out.strip())

    # torch._C._profiler._RecordFunctionFast (Inductor's range around each
    # Triton launch) records while the capture does, with the arguments
    # torch.profiler keeps; 1.13 has no such class, so the test forces a
    # stand-in over a no-op original (KVS_TORCH_OPS_FLAG_TEST)
    fastp = sink_program(
        work, "fast.py",
        "R = torch._C._profiler._RecordFunctionFast\n"
        "a = torch.ones(2, 3); b = torch.zeros(4, dtype=torch.int64)\n"
        "sink.kvs_sink_set_running(1)\n"
        "with R('triton_poi_fused_add_0', [a, b, 7, None, [1, 2], object()], {'grid': 'g'}):\n"
        "    a.add_(1)\n"
        "with R('a_range', None, {'scope': 'user_scope'}):\n"
        "    pass\n"
        "sink.kvs_sink_set_running(0)\n"
        "with R('not_recorded', [a]):\n"
        "    a.add_(1)\n"
        "print(a.tolist(), R.__name__)\n")
    tf = os.path.join(work, "fast.json")
    rc, out, err = run([PY, fastp], dict(hook, KVS_CAPTURE_OUTPUT=tf, KVS_TORCH_OPS_FLAG_TEST="1"), work)
    ev = events(tf)[1] if rc == 0 and os.path.exists(tf) else []
    tri = [e for e in ev if e["name"] == "triton_poi_fused_add_0"]
    add = [e for e in ev if e["name"] == "aten::add_"]
    check(rc == 0 and out.strip() == "[[3.0, 3.0, 3.0], [3.0, 3.0, 3.0]] _RecordFunctionFast" and
          len(tri) == 1 and tri[0]["cat"] == "cpu_op" and
          tri[0]["args"].get("Input Dims") == [[2, 3], [4], [], [], []] and
          tri[0]["args"].get("Input type") == ["float", "long int", "Scalar", "", "ScalarList"] and
          len(add) == 1 and inside(add[0], tri[0]),
          "_RecordFunctionFast while recording: the op with torch.profiler's inputs, its ops inside "
          "(%r %s %s)" % (out.strip(), tri, err.strip()[-200:]))
    rng = [e for e in ev if e["name"] == "a_range"]
    check(len(rng) == 1 and rng[0]["cat"] == "user_annotation" and
          not [e for e in ev if e["name"] == "not_recorded"],
          "_RecordFunctionFast: scope user_scope a user_annotation; nothing while not recording "
          "(%s)" % [e["name"] for e in ev])

    # a sitecustomize the hook's folder shadows still runs
    user = os.path.join(work, "user")
    os.makedirs(user)
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("import sys\nsys.stderr.write('USER-SITECUSTOMIZE\\n')\n")
    rc, out, err = run([PY, prog], dict(hook, PYTHONPATH=tdir + os.pathsep + user,
                                        KVS_CAPTURE_OUTPUT=os.path.join(work, "t4.json")), work)
    rc0, out0, err0 = run([PY, prog], {"PYTHONPATH": user}, work)
    check(rc == 0 and "USER-SITECUSTOMIZE" in err and "USER-SITECUSTOMIZE" in err0 and
          out == out0, "the user's sitecustomize runs under the hook as without it")

    # failures: a warning each, the program unchanged
    rc, out, err = run([PY, prog], dict(hook, CUDA_INJECTION64_PATH=os.path.join(work, "nope.so")),
                       work)
    check(rc == 0 and out == plain and "cannot load the injection library" in err,
          "an injection library that does not load: a warning, same output")
    libz = next((p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1",
                             "/lib64/libz.so.1") if os.path.exists(p)), None)
    if libz:
        rc, out, err = run([PY, prog], dict(hook, CUDA_INJECTION64_PATH=libz), work)
        check(rc == 0 and out == plain and "has no kvs_torch_ops_v1" in err,
              "a library without the table: a warning, same output")
    ro = os.path.join(work, "readonly")
    os.makedirs(ro)
    with open(os.path.join(ro, "kvscope"), "w") as f:
        f.write("a file where the cache folder would go\n")
    tmpdir = os.path.join(work, "tmp")
    os.makedirs(tmpdir)
    rc, out, err = run([PY, prog], dict(hook, XDG_CACHE_HOME=ro, TMPDIR=tmpdir,
                                        KVS_CAPTURE_OUTPUT=os.path.join(work, "t5.json")), work)
    check(rc == 0 and out == plain and os.path.exists(os.path.join(work, "t5.json")) and
          any(n.startswith("kvscope-torch-ops-") for n in os.listdir(tmpdir)),
          "a cache folder that cannot be made: built in the temporary folder, recorded, same output")
    bad = dict(hook, XDG_CACHE_HOME=os.path.join(work, "cache-bad"), CXX="false")
    rc, out, err = run([PY, prog], bad, work)
    check(rc == 0 and out == plain and "cannot build the hook" in err and "build.log" in err,
          "a compiler that fails: 'cannot build the hook' with its log, same output")
    rc, out, err = run([PY, prog], bad, work)
    check(rc == 0 and out == plain and "an earlier build of the hook" in err,
          "and the next run says so at once without building again")
    old = os.path.join(work, "oldtorch")
    os.makedirs(os.path.join(old, "torch"))
    with open(os.path.join(old, "torch", "__init__.py"), "w") as f:
        f.write("__version__ = '1.12.1'\n")
    oldprog = os.path.join(work, "old.py")
    with open(oldprog, "w") as f:
        f.write("import torch\nprint('torch', torch.__version__)\n")
    rc, out, err = run([PY, oldprog], dict(hook, PYTHONPATH=tdir + os.pathsep + old), work)
    check(rc == 0 and out == "torch 1.12.1\n" and "older than 1.13" in err,
          "torch 1.12: 'older than 1.13, which the hook needs', same output")
    rc, out, err = run([PY, "-c", "import sys; print(len(sys.argv))"], hook, work)
    check(rc == 0 and out == "1\n" and err == "", "a Python program without torch: untouched, silent")
    launcher(kvscope, sink, work, prog, plain, cache)
    return finish()


def launcher(kvscope, sink, work, prog, plain, cache):
    """kvscope capture --torch-ops auto|on|off, the sink as its injection library."""
    env = {"KVS_INJECT_LIB": sink, "XDG_CACHE_HOME": cache}

    def cap(mode, argv, name, extra=None):
        t = os.path.join(work, name)
        opt = ["--torch-ops", mode] if mode else []
        rc, out, err = run([kvscope, "capture", "-o", t] + opt + ["--"] + argv,
                           dict(env, **(extra or {})), work)
        n = len([e for e in events(t)[1] if e["cat"] == "cpu_op"]) if os.path.exists(t) else -1
        return rc, out, err, n

    rc, out, err, n = cap(None, [PY, prog], "c_auto.json")
    check(rc == 0 and out == plain and n > 50 and "wrote" in err,
          "kvscope capture -- python3 prog.py: torch ops by default (%d), same output" % n)
    script = os.path.join(work, "script")
    with open(script, "w") as f:
        f.write("#!%s\n" % PY + PROG)
    os.chmod(script, 0o755)
    rc, out, err, n = cap("auto", [script], "c_script.json")
    check(rc == 0 and out == plain and n > 50, "auto: a script whose #! names python (%d)" % n)
    sh = ["/bin/sh", "-c", '"$0" "$1"', PY, prog]
    rc, out, err, n = cap("auto", sh, "c_sh_auto.json")
    check(out == plain and n == -1 and "did the program use CUDA" in err,
          "auto: a shell script is not Python: no hook (nothing captured here), same output")
    rc, out, err, n = cap("on", sh, "c_sh_on.json")
    check(rc == 0 and out == plain and n > 50,
          "on: the Python the shell script runs gets the hook (%d)" % n)
    rc, out, err, n = cap("off", [PY, prog], "c_off.json")
    check(out == plain and n == -1 and "torch ops" not in err,
          "off: no hook, same output, nothing said")
    probe = [PY, "-c", "import os; print(os.environ.get('PYTHONPATH'))"]
    rc, out, err, n = cap("off", probe, "c_pp_off.json", {"PYTHONPATH": "/x"})
    check(out == "/x\n", "off: PYTHONPATH as the user set it (%r)" % out)
    rc, out, err, n = cap("auto", probe, "c_pp_auto.json", {"PYTHONPATH": "/x"})
    check(out.endswith(":/x\n") and out.split(":")[0].endswith("torch"),
          "auto: the hook's folder first, the user's PYTHONPATH after (%r)" % out.strip())
    rc, out, err, n = cap("on", [PY, "-c", "print(1)"], "c_notorch.json")
    check(out == "1\n" and "never imported torch" in err,
          "on: a program that never imports torch is told so")
    rc, out, err, n = cap("maybe", [PY, "-c", "print(1)"], "c_bad.json")
    check(rc == 2 and "--torch-ops must be auto, on or off" in err, "--torch-ops maybe: exit 2")


if __name__ == "__main__":
    sys.exit(main())
