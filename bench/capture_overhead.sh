#!/usr/bin/env bash
# bench/capture_overhead.sh [BUILD_DIR] [OUT_DIR] — what capturing costs the
# captured program, kvscope beside torch.profiler, in paired rounds inside
# each process: a round measures a process's plain and profiled modes once
# each, back to back (the order turning each round), and its overhead is
# that round's profiled / the same round's plain - 1. Process-to-process
# noise (the same plain loop ranged 32-53 ms between processes on the H200)
# so cancels. Needs a GPU; python3 with torch for the PyTorch rows
# (transformers for the decode row: said and skipped when missing).
#
#   bench/capture_overhead.sh build out/capture_bench
#
# A measurement is short (1000 launches, 10 copies, one 12-step generation)
# so that it pairs tightly with its plain neighbour: on the H200 the launch
# time switches between two levels from one moment to the next, and a pair
# that straddles a switch is an outlier the median ignores.
# Processes, run one after another (every one pinned to the CPUs next to
# the GPU, KVS_BENCH_CPUS), each a warm-up round then KVS_BENCH_ROUNDS
# rounds (default 40):
#   bare_start, bare_end  python3 bench/capture_torch.py, plain only, no
#                         profiler and no kvscope: first and last process
#   torch                 plain, torch.profiler CPU+CUDA (tp_cpu_cuda) and
#                         CUDA only (tp_cuda), each profiled measurement in
#                         its own profiler session (start/stop not timed)
#   kvs_default           under kvscope capture --window cudaProfilerStart:
#   kvs_gpuonly           plain (subscribed, window closed) and kvs (the
#   kvs_all               measurement between cudaProfilerStart and Stop);
#                         default activities, kernel,memcpy,memset,extcorr,nvtx,
#                         and all (every runtime and driver call; only with
#                         KVS_BENCH_EXTRA=1)
# PyTorch workloads: 1000 one-element in-place adds (launch-bound), 10 x
# 1 GiB device copies (copy-bound), the median step of a 12-step greedy
# decode of a 4-layer bf16 Llama with random weights. The C program
# (bench/capture_overhead.cu --paired: 1000 one-element kernels, the same
# with each in an NVTX push/pop range, 10 x 1 GiB copies) the same way:
# c_bare_start, c_default, c_gpuonly, c_all, c_bare_end (and, with
# KVS_BENCH_EXTRA=1, kernel+runtime and kernel+driver records: where a
# launch's cost goes). kvscope gets --max-buffers KVS_BENCH_MAX_BUFFERS
# (default 512 of 4 MiB, allocated as needed) so that many rounds' records
# all fit; each trace's records, dropped records and denied buffers go into
# the table (a trace that lost records says so).
#
# Prints the table (bench/capture_table.py: medians, per-round overheads
# with p25..p75 and min..max, plain against the bare processes, kvscope's overhead over
# torch.profiler's against issue 20's target with a verdict per criterion,
# rows for docs/benchmarks.md) and the seconds each process took and in
# all (budget: 240 s for 40 rounds without EXTRA). OUT_DIR keeps raw.txt
# (every RESULT/TRACE/TIME line), table.md, stderr.txt, traces.txt (what
# each trace holds: its kvscope object, events by category, API calls by
# name, CUPTI overhead records) and the `kvscope report` of the default
# captures; the traces themselves are deleted.
# Environment: KVS_BENCH_ROUNDS, KVS_BENCH_EXTRA=1, KVS_BENCH_TORCH=0 (the C
# program alone), KVS_BENCH_CPUS (a CPU list, or none), KVS_BENCH_MAX_BUFFERS.
# --help prints this.
set -u
case ${1:-} in
-h|--help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
out=${2:-out/capture_bench}
rounds=${KVS_BENCH_ROUNDS:-40}
maxbuf=${KVS_BENCH_MAX_BUFFERS:-512}
mkdir -p "$out"
bench=$build/libtrace/capture_overhead
kvs=$build/cli/kvscope
raw=$out/raw.txt
err=$out/stderr.txt
: >"$raw"
: >"$err"
if [ ! -x "$bench" ] || [ ! -x "$kvs" ]; then
    echo "no $bench or $kvs: build with CUDA first" >&2
    exit 1
fi
tmp=$(mktemp -d /tmp/kvs_capbench.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
gpuonly=kernel,memcpy,memset,extcorr,nvtx
start=$(date +%s)

# every process, plain and captured alike, on the CPUs next to the GPU (a
# launch from the far socket is slower, and which socket a process lands on
# varies between runs); KVS_BENCH_CPUS overrides, KVS_BENCH_CPUS=none turns it off
cpus=${KVS_BENCH_CPUS:-}
if [ -z "$cpus" ] && command -v nvidia-smi >/dev/null; then
    bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 2>/dev/null | head -1 |
          tr 'A-F' 'a-f' | sed 's/^0000\(....:\)/\1/')
    [ -n "$bus" ] && [ -r "/sys/bus/pci/devices/$bus/local_cpulist" ] &&
        cpus=$(cat "/sys/bus/pci/devices/$bus/local_cpulist")
fi
pin=()
if [ -n "$cpus" ] && [ "$cpus" != none ] && command -v taskset >/dev/null; then
    pin=(taskset -c "$cpus")
fi
command -v nvidia-smi >/dev/null &&
    echo "DEVICE $(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)" >>"$raw"
echo "cpus: ${cpus:-all} (${pin[*]:-not pinned}); $(nproc) online; rounds $rounds; max buffers $maxbuf" |
    tee -a "$raw"

# activities PROC : the --activities list of a kvscope process (c_kernel+runtime -> kernel,runtime)
activities() {
    case $1 in
    *_default) echo default ;;
    *_gpuonly) echo "$gpuonly" ;;
    *_all) echo all ;;
    *) local a=${1#c_}; echo "${a//+/,}" ;;
    esac
}

# run PROC CMD... : one process; its RESULT/SKIP/SETUP/CONFIG lines and a TIME line
# into raw; kvs_* and c_* processes (not c_bare*) run
# under kvscope capture with the window on cudaProfilerStart
run() {
    local proc=$1 t0 rc lines ms; shift
    t0=$(date +%s%N)
    case $proc in
    c_bare*|bare*|torch) lines=$("${pin[@]}" "$@" 2>>"$err") ;;
    *) lines=$("${pin[@]}" "$kvs" capture --window cudaProfilerStart --max-buffers "$maxbuf" \
                   --activities "$(activities "$proc")" -o "$tmp/$proc.json" -- "$@" 2>>"$err") ;;
    esac
    rc=$?
    echo "$lines" | grep '^\(RESULT\|SKIP\|SETUP\|CONFIG\)' >>"$raw"
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    printf 'TIME proc=%s seconds=%d.%d\n' "$proc" $((ms / 1000)) $((ms % 1000 / 100)) | tee -a "$raw" >&2
    if [ $rc -ne 0 ] || ! echo "$lines" | grep -q '^RESULT'; then
        echo "FAIL proc=$proc exit=$rc (see $err)" | tee -a "$raw" >&2
        return 1
    fi
}

c_procs=(c_bare_start c_default c_gpuonly c_all)
py_procs=(bare_start torch kvs_default kvs_gpuonly)
if [ "${KVS_BENCH_EXTRA:-0}" = 1 ]; then
    c_procs+=(c_kernel+runtime c_kernel+driver)
    py_procs+=(kvs_all)
fi
c_procs+=(c_bare_end)
py_procs+=(bare_end)

for proc in "${c_procs[@]}"; do
    args=(--paired "$rounds" --label "$proc" --launches 1000 --copies 10 --reps 1)
    case $proc in c_bare*) args+=(--bare) ;; esac
    run "$proc" "$bench" "${args[@]}"
done

have_torch=0 # asked without importing torch (an import costs seconds)
if [ "${KVS_BENCH_TORCH:-1}" != 0 ]; then
    python3 -c 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("torch") else 1)' 2>/dev/null &&
        have_torch=1
fi
[ $have_torch = 1 ] || echo "no python3 torch: PyTorch rows skipped" | tee -a "$raw"
if [ $have_torch = 1 ]; then
    python3 -c 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("transformers") else 1)' 2>/dev/null ||
        echo "no transformers: the decode row is skipped" | tee -a "$raw"
    for proc in "${py_procs[@]}"; do
        case $proc in
        bare*) modes=plain ;;
        torch) modes=plain,tp_cpu_cuda,tp_cuda ;;
        *) modes=plain,kvs ;;
        esac
        run "$proc" python3 bench/capture_torch.py --label "$proc" --modes "$modes" --rounds "$rounds" ||
            { [ "$proc" = bare_start ] && { echo "PyTorch rows skipped: the first process failed" | tee -a "$raw"; break; }; }
    done
fi
echo "measuring took $(( $(date +%s) - start )) s" | tee -a "$raw" >&2

# what each trace holds: its kvscope object as a TRACE line into raw (the
# table flags lost records), the rest into traces.txt. A scan line by line
# (the writer puts one event on a line), not json.load: these traces hold
# hundreds of thousands of records
python3 - "$tmp" "$raw" >"$out/traces.txt" <<'PY'
import collections, json, os, re, sys
d, raw = sys.argv[1], sys.argv[2]
ev_rx = re.compile(r'"ph": "X", "cat": "([^"]*)", "name": "((?:[^"\\]|\\.)*)".*?"dur": ([0-9.]+)')
for f in sorted(os.listdir(d)):
    if not f.endswith(".json"):
        continue
    path, proc = os.path.join(d, f), f[:-5]
    cats, api, ovh = collections.Counter(), collections.Counter(), collections.defaultdict(lambda: [0, 0.0])
    head, meta = [], None
    with open(path, errors="replace") as fh:
        for line in fh:
            if meta is None:
                head.append(line)
                if '"traceEvents"' in line:
                    h = "".join(head)
                    at = h.find('"kvscope":')
                    try:
                        meta = json.JSONDecoder().raw_decode(h, h.index("{", at))[0] if at >= 0 else {}
                    except ValueError:
                        meta = {}
                continue
            m = ev_rx.search(line)
            if not m:
                continue
            cat, name = m.group(1), m.group(2)
            cats[cat] += 1
            if cat in ("cuda_runtime", "cuda_driver"):
                api[name] += 1
            elif cat == "overhead":
                ovh[name][0] += 1
                ovh[name][1] += float(m.group(3))
    meta = meta or {}
    keys = ("records", "dropped_records", "buffer_requests_denied", "host_dropped", "buffers_used", "buffers_max")
    with open(raw, "a") as r:
        r.write("TRACE proc=%s %s\n" % (proc, " ".join("%s=%s" % (k, meta.get(k, "unknown")) for k in keys)))
    print("== %s (%.1f MB)" % (f, os.path.getsize(path) / 1e6))
    print("kvscope:", json.dumps(meta))
    print("events by category:", dict(cats.most_common()))
    print("API calls by name (top 25):", api.most_common(25))
    print("CUPTI overhead records (count, total us):", {k: (v[0], round(v[1], 1)) for k, v in ovh.items()})
    print()
PY
for f in c_default kvs_default; do
    [ -s "$tmp/$f.json" ] && "$kvs" report "$tmp/$f.json" >"$out/report_$f.txt" 2>&1
done
echo "TOTAL seconds=$(( $(date +%s) - start ))" | tee -a "$raw" >&2

python3 bench/capture_table.py "$raw" | tee "$out/table.md"
