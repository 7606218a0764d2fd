#!/bin/sh
# tests/gpu/test_capture_default.sh KVSCOPE CAPTURE_TARGET — `kvscope
# capture`'s default activities keep what the analysis reads.
# tests/gpu/capture_target.cu (4 steps of 6 kernels, a copy, a memset, NVTX
# ranges, cudaGetLastError after each launch) is captured twice: with the
# default (only the runtime/driver calls kvs_trace_api_recorded names) and
# with --activities all (every runtime and driver call, the old default),
# and with recording switched on after CUDA started (--window
# cudaProfilerStart: there the first way of asking CUPTI for chosen calls
# recorded none), and a program launching through the driver's
# cuLaunchKernel as well as the runtime (the default records chosen calls
# by CUPTI callbacks, libtrace/capture_api.c; a runtime kernel launch as the
# driver launch it makes), that program again with the runtime's calls only.
# Checked on the default trace: the trace's "activities" list; every kernel
# linked by correlation to the launch call that started it; the copies,
# memsets, synchronize calls (CUPTI sync records only with --activities all), the NVTX ranges and
# their projection onto the GPU all there, as many as with "all"; calls the
# analysis does not read (cudaGetLastError) left out; and `kvscope report`
# finds the same steps, groups and findings in both. Exits 77 without a GPU.
#   meson test -C build --suite gpu test_capture_default
set -u
kvs=$1
target=$2
"$target" probe || { echo "skip: no usable GPU"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 needed to check traces"; exit 77; }
tmp=$(mktemp -d /tmp/kvs_default.XXXXXX) || exit 99
keep=${KVS_KEEP_TRACE:-}
trap '[ -n "$keep" ] || rm -rf "$tmp"' EXIT
fail=0

"$kvs" capture -o "$tmp/default.json" -- "$target" run || { echo "FAIL default capture"; fail=1; }
"$kvs" capture --activities all -o "$tmp/all.json" -- "$target" run ||
    { echo "FAIL --activities all capture"; fail=1; }
# recording switched on once CUDA is up (cudaProfilerStart): where asking
# CUPTI for chosen calls alone once recorded none on the H200
"$kvs" capture --window cudaProfilerStart -o "$tmp/window.json" -- "$target" window ||
    { echo "FAIL --window cudaProfilerStart capture"; fail=1; }
"$kvs" capture -o "$tmp/driver.json" -- "$target" driver ||
    { echo "FAIL driver-launch capture"; fail=1; }
# the runtime's calls without the driver's: runtime launches are records of
# their own then, and the driver's own launches are missing (and counted)
rtonly=kernel,memcpy,memset,runtime,sync,extcorr,overhead,nvtx
"$kvs" capture --activities $rtonly -o "$tmp/rtonly.json" -- "$target" driver ||
    { echo "FAIL runtime-only capture"; fail=1; }
for m in default all; do
    "$kvs" report --quiet --format json -o "$tmp/$m.report.json" "$tmp/$m.json" ||
        { echo "FAIL kvscope report $m"; fail=1; }
done
[ $fail = 0 ] || exit 1

python3 - "$tmp" <<'PY' || fail=1
import collections, json, sys
d = sys.argv[1]
fails = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)

def load(m):
    doc = json.load(open("%s/%s.json" % (d, m)))
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    by = collections.defaultdict(list)
    for e in ev:
        by[e.get("cat")].append(e)
    names = collections.Counter(e["name"] for e in by["cuda_runtime"] + by["cuda_driver"])
    flows = sum(1 for e in doc["traceEvents"] if e.get("ph") == "s")
    return doc, by, names, flows

dd, dby, dnames, dflows = load("default")
ad, aby, anames, aflows = load("all")
check(dd["kvscope"].get("activities") == ["kernel", "memcpy", "memset", "runtime", "driver",
                                           "extcorr", "overhead", "nvtx"],
      "the default trace lists its activities: %s" % dd["kvscope"].get("activities"))
check(ad["kvscope"].get("activities") == ["kernel", "memcpy", "memset", "runtime-all",
                                           "driver-all", "sync", "extcorr", "overhead", "nvtx"],
      "--activities all lists runtime-all, driver-all: %s" % ad["kvscope"].get("activities"))

# every busy kernel linked to the launch call that started it, before it ran
launch = {e["args"]["correlation"]: e for e in dby["cuda_runtime"] + dby["cuda_driver"]
          if "Launch" in e["name"] and "correlation" in e.get("args", {})}
busy = [k for k in dby["kernel"] if "busy" in k["name"]]
linked = [k for k in busy if k["args"].get("correlation") in launch and
          launch[k["args"]["correlation"]]["ts"] <= k["ts"]]
check(len(busy) == 24 and len(linked) == 24,
      "24 kernels, each linked to its launch call: %d of %d" % (len(linked), len(busy)))
check(dflows >= 32, "a flow for each kernel, copy and memset: %d" % dflows)

# copies, memsets: as many as with every call recorded; CUPTI's sync records
# only with them asked for (the default records the synchronize calls)
for cat in ("gpu_memcpy", "gpu_memset"):
    check(len(dby[cat]) == len(aby[cat]) and len(dby[cat]) >= 4,
          "%s: %d, with all %d" % (cat, len(dby[cat]), len(aby[cat])))
check(len(dby["cuda_sync"]) == 0 and len(aby["cuda_sync"]) >= 4,
      "cuda_sync: none by default (%d), with all %d" % (len(dby["cuda_sync"]), len(aby["cuda_sync"])))
for nm in ("cudaMemcpyAsync", "cudaMemsetAsync", "cudaDeviceSynchronize"):
    check(dnames[nm] == 4 and anames[nm] == 4,
          "%s recorded: %d (all: %d)" % (nm, dnames[nm], anames[nm]))
check(dnames["cudaGetLastError"] == 0 and anames["cudaGetLastError"] >= 24,
      "cudaGetLastError left out by default (%d), recorded with all (%d)"
      % (dnames["cudaGetLastError"], anames["cudaGetLastError"]))
check(sum(dnames.values()) < sum(anames.values()),
      "fewer API records: %d against %d" % (sum(dnames.values()), sum(anames.values())))

# NVTX ranges and their projection onto the GPU
rng = lambda by, c: sorted(collections.Counter(e["name"] for e in by[c]).items())
check(rng(dby, "user_annotation") == rng(aby, "user_annotation") and
      dict(rng(dby, "user_annotation")).get("layer") == 8,
      "the same NVTX ranges: %s" % rng(dby, "user_annotation"))
check(rng(dby, "gpu_user_annotation") == rng(aby, "gpu_user_annotation") and
      dict(rng(dby, "gpu_user_annotation")).get("step_0") == 2,
      "the same ranges projected onto the GPU: %s" % rng(dby, "gpu_user_annotation"))

# with recording switched on after CUDA started: still every kernel linked
wd, wby, wnames, wflows = load("window")
wlaunch = {e["args"]["correlation"] for e in wby["cuda_runtime"] + wby["cuda_driver"]
           if "Launch" in e["name"] and "correlation" in e.get("args", {})}
wbusy = [k for k in wby["kernel"] if "busy" in k["name"]]
check(len(wbusy) == 12 and all(k["args"].get("correlation") in wlaunch for k in wbusy),
      "window opened after CUDA started: %d kernels, %d linked to a launch call"
      % (len(wbusy), sum(k["args"].get("correlation") in wlaunch for k in wbusy)))
check(wnames["cudaGetLastError"] == 0 and wnames["cudaMemcpyAsync"] == 2,
      "... and only the chosen calls: cudaGetLastError %d, cudaMemcpyAsync %d"
      % (wnames["cudaGetLastError"], wnames["cudaMemcpyAsync"]))

for m, doc in (("default", dd), ("window", wd)):
    check(doc["kvscope"].get("runtime_launches") == "driver" and
          doc["kvscope"].get("kernels_without_call") == 0,
          "%s: runtime launches recorded as their driver launch, no kernel without its call: "
          "%s, %s" % (m, doc["kvscope"].get("runtime_launches"),
                      doc["kvscope"].get("kernels_without_call")))
check(dnames["cudaLaunchKernel"] == 0 and dnames["cuLaunchKernel"] == 24 and
      anames["cudaLaunchKernel"] == 24,
      "default: each runtime launch is its driver launch (cuLaunchKernel %d, cudaLaunchKernel "
      "%d); all: cudaLaunchKernel %d" % (dnames["cuLaunchKernel"], dnames["cudaLaunchKernel"],
                                         anames["cudaLaunchKernel"]))

# kernels launched through the driver and through the runtime: each linked
# to a launch call, one record per launch (the runtime's is its driver
# launch: no callback on the runtime's launch by default)
vd, vby, vnames, vflows = load("driver")
vlaunch = {e["args"]["correlation"]: e for e in vby["cuda_runtime"] + vby["cuda_driver"]
           if "Launch" in e["name"] and "correlation" in e.get("args", {})}
vbusy = sorted((k for k in vby["kernel"] if "busy" in k["name"]), key=lambda k: k["ts"])
via = collections.Counter(vlaunch[k["args"]["correlation"]]["cat"] for k in vbusy
                          if k["args"].get("correlation") in vlaunch)
check(len(vbusy) == 6 and via == {"cuda_driver": 6},
      "driver and runtime launches: %d kernels, linked through %s" % (len(vbusy), dict(via)))
check(vnames["cuLaunchKernel"] == 6 and vnames["cudaLaunchKernel"] == 0,
      "... one record per launch call: cuLaunchKernel %d, cudaLaunchKernel %d"
      % (vnames["cuLaunchKernel"], vnames["cudaLaunchKernel"]))
check(all(vlaunch[k["args"]["correlation"]]["ts"] <= k["ts"] for k in vbusy
          if k["args"].get("correlation") in vlaunch),
      "... each launch call before its kernel")
check(vd["kvscope"].get("kernels_without_call") == 0,
      "... none without its call: %s" % vd["kvscope"].get("kernels_without_call"))

# the runtime without the driver: the runtime's launches are cudaLaunchKernel
# records, the program's own cuLaunchKernel ones are missing and counted
rd, rby, rnames, rflows = load("rtonly")
rlaunch = {e["args"]["correlation"] for e in rby["cuda_runtime"] + rby["cuda_driver"]
           if "Launch" in e["name"] and "correlation" in e.get("args", {})}
rbusy = [k for k in rby["kernel"] if "busy" in k["name"]]
check(rnames["cudaLaunchKernel"] == 3 and rnames["cuLaunchKernel"] == 0 and
      "runtime_launches" not in rd["kvscope"],
      "runtime only: cudaLaunchKernel %d, cuLaunchKernel %d, runtime_launches %s"
      % (rnames["cudaLaunchKernel"], rnames["cuLaunchKernel"], rd["kvscope"].get("runtime_launches")))
check(len(rbusy) == 6 and sum(k["args"].get("correlation") in rlaunch for k in rbusy) == 3 and
      rd["kvscope"].get("kernels_without_call") == 3,
      "... 3 of 6 kernels linked, kernels_without_call %s" % rd["kvscope"].get("kernels_without_call"))

# the report finds the same in both
rep = {m: json.load(open("%s/%s.report.json" % (d, m))) for m in ("default", "all")}
steps = {m: rep[m]["steps"]["count"] for m in rep}
check(steps["default"] == 4 and steps["all"] == 4, "4 steps in both reports: %s" % steps)
grp = {m: sorted((g["op"], g["calls"], g.get("bytes_per_call")) for g in rep[m]["groups"])
       for m in rep}
check(grp["default"] == grp["all"] and grp["default"],
      "the same groups: %s" % grp["default"])
fnd = {m: sorted(f["id"] for f in rep[m]["findings"]) for m in rep}
check(fnd["default"] == fnd["all"], "the same findings: %s / %s" % (fnd["default"], fnd["all"]))
sys.exit(1 if fails else 0)
PY
[ -n "$keep" ] && echo "traces kept in $tmp"
exit $fail
