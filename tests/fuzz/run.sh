#!/usr/bin/env bash
# tests/fuzz/run.sh — run kvscope's libFuzzer harnesses, one after another.
#
#   tests/fuzz/run.sh HARNESS|all SECONDS     HARNESS: trace scan gz model devices cli grow
#
# Configures and builds build-fuzz (CC=clang, -Dfuzz=enabled -Dcuda=disabled)
# when it is missing, generates the seeds (tests/fuzz/make_seeds.py: cuts of a
# small trace, slices of ../shared/traces) once, then runs each harness for
# SECONDS with its dictionary, over its working corpus (kept between runs),
# the committed corpus tests/fuzz/corpus/HARNESS and the seeds. One process,
# one job: the machine is shared.
# Each run appends a line to $work/runs.tsv (date, harness, seconds,
# executions, exec/s, corpus inputs, coverage, result) and prints it.
#
# Exit 0: no finding. 1: a harness found a crash, leak, UB, timeout or broken
# property; its input is in $work/artifacts/HARNESS/ and its log in
# $work/logs/. 2: bad usage or no clang with libFuzzer.
# Environment: KVS_FUZZ_BUILD (build-fuzz), KVS_FUZZ_WORK ($build/fuzz-work),
# KVS_FUZZ_ARGS (more libFuzzer flags), KVS_SHARED_DIR (../shared).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
all=(trace scan gz model devices cli grow)
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -eq 2 ] || usage
what=$1 secs=$2
[[ $secs =~ ^[0-9]+$ ]] && [ "$secs" -gt 0 ] || usage
if [ "$what" = all ]; then
    harnesses=("${all[@]}")
else
    [[ " ${all[*]} " == *" $what "* ]] || { echo "run.sh: no harness '$what' (${all[*]})" >&2; exit 2; }
    harnesses=("$what")
fi
build=${KVS_FUZZ_BUILD:-build-fuzz}
work=${KVS_FUZZ_WORK:-$build/fuzz-work}
shared=${KVS_SHARED_DIR:-$root/../shared}

if [ ! -f "$build/build.ninja" ]; then
    command -v clang >/dev/null || { echo "run.sh: clang is needed for libFuzzer (apt-get install clang)" >&2; exit 2; }
    CC=clang meson setup "$build" -Dfuzz=enabled -Dcuda=disabled >"$root/.fuzz-setup.log" 2>&1 ||
        { cat "$root/.fuzz-setup.log" >&2; rm -f "$root/.fuzz-setup.log"; exit 2; }
    rm -f "$root/.fuzz-setup.log"
fi
ninja -C "$build" fuzz >"$build/fuzz-build.log" 2>&1 || { cat "$build/fuzz-build.log" >&2; exit 2; }

mkdir -p "$work/logs"
if [ ! -f "$work/seeds/.done" ] || [ tests/fuzz/make_seeds.py -nt "$work/seeds/.done" ]; then
    rm -rf "$work/seeds"
    python3 tests/fuzz/make_seeds.py --generated "$work/seeds" --shared "$shared" || exit 2
    touch "$work/seeds/.done"
fi
[ -f "$work/runs.tsv" ] || printf 'date\tharness\tseconds\texecutions\texec_per_s\tcorpus\tcoverage\tresult\n' >"$work/runs.tsv"

read -r -a extra <<<"${KVS_FUZZ_ARGS:-}"
found=0
for h in "${harnesses[@]}"; do
    # trace: inputs up to 1 MiB (the generated many-event traces); cli: its
    # stderr (a usage error a run) closed, sanitizer reports still come out;
    # grow: -timeout covers a 16 MiB value read twice under the sanitizers
    quiet=()
    case $h in
        model) dict=model.dict max_len=4096 ;;
        devices) dict=devices.dict max_len=8192 ;;
        trace) dict=trace.dict max_len=1048576 ;;
        cli) dict=cli.dict max_len=65536 quiet=(-close_fd_mask=2) ;;
        # grow: small seeds whose marked value the harness grows to 16 MiB; any
        # single allocation over 16 MB (a value held whole) is a finding
        grow) dict=trace.dict max_len=4096 quiet=(-malloc_limit_mb=16) ;;
        *) dict=trace.dict max_len=8192 ;;
    esac
    mkdir -p "$work/corpus/$h" "$work/artifacts/$h" "$work/seeds/$h"
    log=$work/logs/$h-$(date +%Y%m%d-%H%M%S).log
    echo "==> fuzz_$h for ${secs}s (log: $log)"
    start=$(date +%s)
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
    "$build/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len="$max_len" -dict="tests/fuzz/$dict" -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/$h/" "${quiet[@]}" "${extra[@]}" \
        "$work/corpus/$h" "tests/fuzz/corpus/$h" "$work/seeds/$h" >"$log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    corpus=$(find "$work/corpus/$h" -type f | wc -l)
    result=ok
    if [ $rc -ne 0 ]; then
        result="FINDING (exit $rc)"
        found=1
        grep -E 'ERROR|runtime error|property failed|SUMMARY|Test unit written|leak' "$log" | head -20
    fi
    line=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$(date -u +%Y-%m-%dT%H:%MZ)" "$h" "$took" \
        "${execs:-?}" "${rate:-?}" "$corpus" "${cov:-?}" "$result")
    echo "$line" >>"$work/runs.tsv"
    echo "$line"
done
exit $found
