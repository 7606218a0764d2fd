#!/usr/bin/env bash
# examples/gpu_session.sh — the end-to-end run on a GPU machine, in one
# command, for docs/benchmarks.md: the README's main command (fresh GLM-5
# engine traces, report, compare, summary), example 4 (kvscope capture of the
# CUDA program examples/naive_kv_cast.cu) and example 5 (torch.profiler trace
# of examples/torch_mla_decode.py + kvscope report/compare). It builds
# nothing: BUILD_DIR must hold a CUDA build (meson setup build-dev && ninja -C build-dev).
#
#   examples/gpu_session.sh OUTDIR [BUILD_DIR (default build-dev)] [main] [cuda] [torch]
#
# Leaves at most five files in OUTDIR (the device tool brings back 8):
#   main.log, cuda.log, torch.log   what each part printed (with its exit code)
#   session.txt                     date, GPU, driver, torch version, kvscope version
#   session.tar.gz                  every trace, report (HTML/JSON/text) and engine
#                                   log; main/glm5_{full-cast,fp8-direct,active-cast}.{json.gz,log}
#                                   are named as in examples/traces/, ready to bundle
# Parts run in that order (all three by default); one failing does not stop the others,
# the exit code is 1 if any failed. About 3 minutes on one H200.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
[ $# -ge 1 ] || { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
outdir=$1; shift
build=build-dev
if [ $# -gt 0 ] && [ -d "$1" ]; then build=$1; shift; fi
case $build in /*) ;; *) build=$root/$build ;; esac
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(main cuda torch)
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
    echo "kvscope: $("$build/cli/kvscope" version 2>&1)"
    echo "torch: $(${PYTHON:-python3} -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1 | tail -n 1)"
    echo "build: $build"
} >"$outdir/session.txt"
cat "$outdir/session.txt"

status=0
part() { # part NAME CMD... : run one part, its output into NAME.log
    local name=$1 rc=0; shift
    echo "===== $name: $*"
    local t0=$SECONDS
    "$@" >"$outdir/$name.log" 2>&1 || rc=$?
    echo "exit $rc after $((SECONDS - t0)) s" >>"$outdir/$name.log"
    tail -n 3 "$outdir/$name.log"
    [ $rc -eq 0 ] || status=1
}

main_part() {
    # the README's command; if run.sh's set-up finds packages missing (it may
    # not install here: no network), the main job it would run, directly
    if KVS_BUILD_DIR=$build KVS_NO_INSTALL=1 ./run.sh setup; then
        KVS_BUILD_DIR=$build KVS_NO_INSTALL=1 KVS_OUT_DIR=$work/main KVS_DEMO_SOURCE=gpu ./run.sh
    else
        echo "(./run.sh's set-up wants packages it may not install here; running its main job directly)"
        KVS_DEMO_SOURCE=gpu examples/demo.sh "$build" "$work/main"
    fi
}

for p in "${parts[@]}"; do
    case $p in
        main) part main main_part ;;
        cuda) part cuda env KVS_BUILD_DIR="$build" KVS_OUT_DIR="$work/cuda" examples/4_capture_cuda.sh ;;
        torch) part torch env KVS_BUILD_DIR="$build" KVS_OUT_DIR="$work/torch" PYTHONUNBUFFERED=1 \
                   examples/5_pytorch_profiler.sh ;;
        *) echo "gpu_session: unknown part '$p' (main, cuda, torch)" >&2; status=1 ;;
    esac
done
tar -czf "$outdir/session.tar.gz" -C "$work" . && ls -la "$outdir"
exit $status
