#!/usr/bin/env bash
# bench/capture_overhead.sh [BUILD_DIR] [OUT_DIR] — what capturing costs the
# captured program, kvscope beside torch.profiler, measured against bare
# processes of the same run (no profiler, no kvscope), which take turns
# with the profiled ones. Needs a GPU; python3 with torch for the PyTorch
# rows (transformers for the decode row: said and skipped when missing).
#
#   bench/capture_overhead.sh build out/capture_bench
#
# Processes (each pinned as bench/bench_cpus.sh says), KVS_BENCH_CYCLES
# cycles (default 2), the order turning each cycle, a bare process before
# every two others and one at the end:
#   PyTorch, python3 bench/capture_torch.py, each a warm-up round then
#   KVS_BENCH_ROUNDS rounds (default 12) of its modes, the order turning
#   (KVS_BENCH_WORKLOADS: the workloads each runs, default launch,copy,decode):
#     bare         plain only
#     torch        plain, torch.profiler CPU+CUDA (tp_cpu_cuda), CUDA only
#                  (tp_cuda): each profiled measurement in a session of its own
#     kvs_default  under `kvscope capture --window cudaProfilerStart`: plain
#     kvs_gpuonly  (between windows) and kvs (the measurement between
#                  cudaProfilerStart and Stop); default activities, and
#                  kernel,memcpy,memset,extcorr,nvtx
#     kvs_closed   under the same window, never opened: plain only (what being
#                  under kvscope costs before anything is recorded)
#     kvs_all      --activities all (only with KVS_BENCH_EXTRA=1)
#     kvs_set_NAME one kind for each NAME=LIST of KVS_BENCH_SETS (space-
#                  separated; LIST an --activities list): plain and kvs under
#                  that list, to split a cost between activities, e.g.
#                  KVS_BENCH_SETS="drv=kernel,memcpy,memset,extcorr,nvtx,driver"
#   C (KVS_BENCH_C=0: none), bench/capture_overhead.cu --paired (1000 one-element kernels, the same
#   each in an NVTX range, 10 x 1 GiB copies): c_bare, c_default, c_gpuonly,
#   c_all (every runtime and driver call), c_closed (--bare under the window)
#   whole-process, bench/capture_whole.py (5 x 5000 adds timed inside a
#   program run whole), KVS_BENCH_WHOLE rounds (default 10; 0: none), each
#   round three processes: whole_bare (plain), whole_kvs (`kvscope capture`
#   with its default window: the whole run), whole_torch (one torch.profiler
#   CPU+CUDA session around the work, its trace exported)
#   torch ops (KVS_BENCH_TORCHOPS=1 adds them, =only runs them
#   alone: no C program, no issue-32 kind): the torch process also measures
#   tp_shapes (torch.profiler CPU+CUDA with record_shapes=True); kvs_torch
#   under `kvscope capture --window cudaProfilerStart --torch-ops on` (plain,
#   kvs: kvscope with torch ops); whole rounds gain whole_kvs_torch (`kvscope
#   capture --torch-ops on`, the whole run) and whole_torch_shapes (the
#   profiler session with record_shapes=True). Every other kvscope process
#   runs with --torch-ops off.
# PyTorch workloads: 1000 one-element in-place adds (launch-bound), 10 x
# 1 GiB device copies (copy-bound), the median step of a 12-step greedy
# decode of a 4-layer bf16 Llama with random weights. kvscope gets
# --max-buffers KVS_BENCH_MAX_BUFFERS (default 512 of 4 MiB, allocated as
# needed) so that every round's records fit; each trace's records, dropped
# records, denied buffers and kernels without their launch call go into the
# table (a trace that lost records says so).
#
# Prints the table (bench/capture_table.py: every mode against the bare
# processes — all of them, the ones run just before and after, fastest
# round against fastest — the verdicts of the capture targets, the paired
# view inside each process as a second view, rows for docs/benchmarks.md)
# and the seconds each process took. OUT_DIR keeps raw.txt (every line the
# table reads, each process's tagged with cycle= and seq=, its number in the
# run), table.md, stderr.txt, traces.txt (what each trace holds) and the
# `kvscope report` of the first default capture; the traces are deleted.
# Environment: KVS_BENCH_CYCLES, KVS_BENCH_ROUNDS, KVS_BENCH_WHOLE,
# KVS_BENCH_EXTRA=1, KVS_BENCH_SETS, KVS_BENCH_WORKLOADS, KVS_BENCH_C=0 (no C
# program), KVS_BENCH_TORCH=0 (the C program alone), KVS_BENCH_TORCHOPS
# (0 default, 1, only), KVS_BENCH_CPUS
# (a CPU list, none, or probe: one CPU, the fastest of a short probe),
# KVS_BENCH_MAX_BUFFERS, KVS_BENCH_PY_KINDS (the PyTorch kinds besides bare,
# space-separated; default "torch kvs_default kvs_gpuonly kvs_closed"), KVS_BENCH_SETTLE_MS (default 100: a sleep before
# every measurement of every process, so that a plain measurement after a
# window times the state kvscope leaves between windows, not what the close
# sets going; 0: none), KVS_BENCH_CONTEXTS (default 1: the
# C program's CUDA contexts a process, one after another, each a unit of the
# table; bench/capture_overhead.cu --contexts). --help prints this.
set -u
case ${1:-} in
-h|--help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
out=${2:-out/capture_bench}
rounds=${KVS_BENCH_ROUNDS:-12}
settle=${KVS_BENCH_SETTLE_MS:-100}
contexts=${KVS_BENCH_CONTEXTS:-1}
cycles=${KVS_BENCH_CYCLES:-2}
whole=${KVS_BENCH_WHOLE:-10}
maxbuf=${KVS_BENCH_MAX_BUFFERS:-512}
torchops=${KVS_BENCH_TORCHOPS:-0}
case $torchops in 0|1|only) ;; *) echo "KVS_BENCH_TORCHOPS is 0, 1 or only" >&2; exit 2 ;; esac
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

# every process, plain and profiled alike, on the CPUs next to the GPU
. bench/bench_cpus.sh
# KVS_BENCH_CPUS=probe: every process on one CPU, the one of that list
# where a PyTorch launch loop runs fastest (on the H200 machine processes
# ran it in ~6 or ~9 ms, the same in every round of a process: where it
# lands decides). Each candidate (every fourth CPU) runs it twice; PROBE
# lines say what each took
if [ "${KVS_BENCH_CPUS:-}" = probe ] && [ "${KVS_BENCH_TORCH:-1}" != 0 ] && [ -n "$cpus" ]; then
    best= bestms=
    for c in $(python3 -c 'import sys
out = []
for part in sys.argv[1].split(","):
    a, _, b = part.partition("-")
    out += range(int(a), int(b or a) + 1)
print(" ".join(str(c) for c in out[::4]))' "$cpus"); do
        for k in 1 2; do
            ms=$(taskset -c "$c" python3 bench/capture_torch.py --label probe --modes plain --workloads launch \
                     --rounds 5 2>>"$err" | python3 -c 'import re, statistics, sys
v = [float(m) for r, m in re.findall(r"round=(\d+) .*ms=(\S+)", sys.stdin.read()) if r != "0"]
print("%.4f" % statistics.median(v) if v else "")')
            echo "PROBE cpu=$c try=$k launch_ms=${ms:-none}" >>"$raw"
            [ -n "$ms" ] && { [ -z "$bestms" ] || python3 -c "import sys; sys.exit(0 if $ms < $bestms else 1)"; } &&
                best=$c bestms=$ms
        done
    done
    [ -n "$best" ] && cpus=$best pin=(taskset -c "$best")
    echo "cpus chosen by the probe: ${cpus:-none} (${bestms:-?} ms)" | tee -a "$raw"
fi
command -v nvidia-smi >/dev/null &&
    echo "DEVICE $(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)" >>"$raw"
echo "cpus: ${cpus:-all} (${pin[*]:-not pinned}); $(nproc) online; cycles $cycles; rounds $rounds;" \
     "whole-process rounds $whole; max buffers $maxbuf; settle $settle ms; C contexts $contexts" |
    tee -a "$raw"

# activities PROC : the --activities list of a kvscope process
activities() {
    case $1 in
    kvs_set_*) set_list "${1#kvs_set_}" ;;
    *_gpuonly) echo "$gpuonly" ;;
    *_all) echo all ;;
    *) echo default ;;
    esac
}

# set_list NAME : the activity list of KVS_BENCH_SETS's NAME
set_list() {
    local item
    for item in ${KVS_BENCH_SETS:-}; do
        [ "${item%%=*}" = "$1" ] && { echo "${item#*=}"; return; }
    done
    echo "KVS_BENCH_SETS names no set $1" >&2
    exit 2
}

# torch_ops PROC : the --torch-ops of a kvscope process
torch_ops() {
    case $1 in
    kvs_torch|whole_kvs_torch) echo on ;;
    *) echo off ;;
    esac
}

# run PROC CYCLE CMD... : one process; its lines, tagged cycle= and seq=, into
# raw, and a TIME line. kvs_*/c_* processes but the bare ones run under
# `kvscope capture --window cudaProfilerStart`, whole_kvs under its default
# window
seq=0
run() {
    local proc=$1 cycle=$2 t0 rc lines ms; shift 2
    seq=$((seq + 1))
    local trace=$tmp/$proc.$seq.json
    local cap=("$kvs" capture --torch-ops "$(torch_ops "$proc")" --max-buffers "$maxbuf"
               --activities "$(activities "$proc")" -o "$trace" --)
    t0=$(date +%s%N)
    case $proc in
    *bare*|torch|whole_torch*) lines=$("${pin[@]}" "$@" 2>>"$err") ;;
    whole_kvs*) lines=$("${pin[@]}" "${cap[@]}" "$@" 2>>"$err") ;;
    *) lines=$("${pin[@]}" "${cap[0]}" capture --window cudaProfilerStart "${cap[@]:2}" "$@" 2>>"$err") ;;
    esac
    rc=$?
    echo "$lines" | grep '^\(RESULT\|SKIP\|SETUP\|CONFIG\|WHOLE\)' |
        sed "s/^\([A-Z]*\) /\1 cycle=$cycle seq=$seq /" >>"$raw"
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    printf 'TIME proc=%s cycle=%s seq=%d seconds=%d.%d\n' "$proc" "$cycle" "$seq" $((ms / 1000)) \
        $((ms % 1000 / 100)) | tee -a "$raw" >&2
    if [ $rc -ne 0 ] || ! echo "$lines" | grep -q '^RESULT'; then
        echo "FAIL proc=$proc seq=$seq exit=$rc (see $err)" | tee -a "$raw" >&2
        return 1
    fi
}

# schedule KIND-OF-BARE KINDS... : the kinds in turn for $cycles cycles, the
# order turning each cycle, a bare process before every two and one at the end
schedule() {
    local b=$1 c i; shift
    local ks=("$@") n=$#
    for ((c = 0; c < cycles; c++)); do
        for ((i = 0; i < n; i++)); do
            [ $((i % 2)) = 0 ] && one "$b" "$c"
            one "${ks[$(( (i + c) % n ))]}" "$c"
        done
    done
    one "$b" "$cycles"
}

# one PROC CYCLE: the process PROC with its arguments
one() {
    local proc=$1 cycle=$2 args modes
    case $proc in
    c_*)
        args=(--paired "$rounds" --label "$proc" --launches 1000 --copies 10 --reps 1
              --contexts "$contexts" --settle-ms "$settle")
        case $proc in c_bare|c_closed) args+=(--bare) ;; esac
        run "$proc" "$cycle" "$bench" "${args[@]}" ;;
    *)
        case $proc in
        bare|kvs_closed) modes=plain ;;
        torch) modes=plain,tp_cpu_cuda,tp_cuda
               [ "$torchops" = 1 ] && modes+=,tp_shapes
               [ "$torchops" = only ] && modes=plain,tp_cpu_cuda,tp_shapes ;;
        *) modes=plain,kvs ;;
        esac
        run "$proc" "$cycle" python3 bench/capture_torch.py --label "$proc" --modes "$modes" \
            --rounds "$rounds" --workloads "${KVS_BENCH_WORKLOADS:-launch,copy,decode}" \
            --settle-ms "$settle" ;;
    esac
}

c_kinds=(c_default c_gpuonly c_closed c_all)
py_kinds=(torch kvs_default kvs_gpuonly kvs_closed)
[ -n "${KVS_BENCH_PY_KINDS:-}" ] && read -r -a py_kinds <<<"$KVS_BENCH_PY_KINDS"
[ "${KVS_BENCH_EXTRA:-0}" = 1 ] && py_kinds+=(kvs_all)
for item in ${KVS_BENCH_SETS:-}; do
    case $item in
    [a-z0-9]*=?*) ;;
    *) echo "KVS_BENCH_SETS: each item is NAME=LIST (NAME of a-z0-9), not '$item'" >&2; exit 2 ;;
    esac
    n=${item%%=*}
    [[ $n =~ ^[a-z0-9]+$ ]] || { echo "KVS_BENCH_SETS: bad name '$n'" >&2; exit 2; }
    py_kinds+=("kvs_set_$n")
    echo "SET name=$n activities=${item#*=}" >>"$raw"
done
w=(whole_bare whole_kvs whole_torch)
case $torchops in
1) py_kinds+=(kvs_torch); w+=(whole_kvs_torch whole_torch_shapes) ;;
only) py_kinds=(torch kvs_torch); w=(whole_bare whole_kvs_torch whole_torch_shapes) ;;
esac
[ "$torchops" = only ] || [ "${KVS_BENCH_C:-1}" = 0 ] || schedule c_bare "${c_kinds[@]}"

have_torch=0 # asked without importing torch (an import costs seconds)
if [ "${KVS_BENCH_TORCH:-1}" != 0 ]; then
    python3 -c 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("torch") else 1)' 2>/dev/null &&
        have_torch=1
fi
[ $have_torch = 1 ] || echo "no python3 torch: PyTorch rows skipped" | tee -a "$raw"
if [ $have_torch = 1 ]; then
    python3 -c 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("transformers") else 1)' 2>/dev/null ||
        echo "no transformers: the decode row is skipped" | tee -a "$raw"
    schedule bare "${py_kinds[@]}"
    # whole processes: plainly, under kvscope capture, under torch.profiler
    for ((r = 0; r < whole; r++)); do
        for ((i = 0; i < ${#w[@]}; i++)); do
            p=${w[$(( (i + r) % ${#w[@]} ))]}
            a=(python3 bench/capture_whole.py --label "$p")
            case $p in
            whole_torch) a+=(--profiler torch --trace "$tmp/torch.$r.json") ;;
            whole_torch_shapes) a+=(--profiler torch --shapes --trace "$tmp/torch.$r.json") ;;
            esac
            run "$p" "$r" "${a[@]}"
            rm -f "$tmp/torch.$r.json"
        done
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
    if not f.endswith(".json") or f.startswith("torch."):
        continue
    path, (proc, seq) = os.path.join(d, f), f[:-5].rsplit(".", 1)
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
    keys = ("records", "dropped_records", "buffer_requests_denied", "host_dropped", "kernels_without_call",
            "buffers_used", "buffers_max")
    with open(raw, "a") as r:
        r.write("TRACE proc=%s seq=%s %s\n" % (proc, seq, " ".join("%s=%s" % (k, meta.get(k, "unknown"))
                                                                  for k in keys)))
    print("== %s (%.1f MB)" % (f, os.path.getsize(path) / 1e6))
    print("kvscope:", json.dumps(meta))
    print("events by category:", dict(cats.most_common()))
    print("API calls by name (top 25):", api.most_common(25))
    print("CUPTI overhead records (count, total us):", {k: (v[0], round(v[1], 1)) for k, v in ovh.items()})
    print()
PY
for p in c_default kvs_default kvs_torch; do
    f=$(ls "$tmp"/$p.*.json 2>/dev/null | head -1)
    [ -n "$f" ] && "$kvs" report "$f" >"$out/report_$p.txt" 2>&1
done
echo "TOTAL seconds=$(( $(date +%s) - start ))" | tee -a "$raw" >&2

python3 bench/capture_table.py "$raw" | tee "$out/table.md"
