#!/usr/bin/env bash
# examples/fleet/slurm_fleet.sh — kvscope across a fleet as a Slurm job array:
# one array task per rank runs `kvscope report RANK_TRACE --format json` on its
# node (the map), then a job that waits for the whole array reduces the ranks'
# reports into the view across ranks (docs/fleet.md).
#
#   examples/fleet/slurm_fleet.sh submit ranks.txt OUT [-- REPORT_OPTIONS]
#       sbatch the array (one task per line of ranks.txt: a trace path as the
#       compute nodes see it) and the reduce (--dependency=afterok on the array)
#   examples/fleet/slurm_fleet.sh map ranks.txt OUT [-- ...]      (an array task: line
#       $SLURM_ARRAY_TASK_ID + 1 -> OUT/rank-NNNN.report.json)
#   examples/fleet/slurm_fleet.sh reduce ranks.txt OUT [-- ...]   (OUT/fleet.txt and
#       OUT/fleet.json from every rank's report; exit 2 naming any rank missing)
#
# Environment: KVSCOPE (default: kvscope on PATH), SBATCH_ARGS (extra sbatch
# arguments for both jobs: --partition, --account, --time, ...).
# OUT must be on a file system the compute nodes and the reduce share; the
# traces must be readable where each task runs (shared storage, or see
# docs/fleet.md for node-local traces).
set -euo pipefail
usage() { sed -n '2,22p' "$0" >&2; exit 2; }
[ $# -ge 3 ] || usage
step=$1 list=$2 out=$3
shift 3
[ "${1:-}" = "--" ] && shift
kvscope=${KVSCOPE:-kvscope}
[ -f "$list" ] || { echo "slurm_fleet: no rank list $list" >&2; exit 2; }
# the ranks: non-empty lines without comments
ranks() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list"; }
n=$(ranks | wc -l)
[ "$n" -gt 0 ] || { echo "slurm_fleet: $list names no trace" >&2; exit 2; }

case $step in
submit)
    mkdir -p "$out"
    read -r -a extra <<<"${SBATCH_ARGS:-}"
    here=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
    list_abs=$(cd "$(dirname "$list")" && pwd)/$(basename "$list")
    out_abs=$(cd "$out" && pwd)
    array=$(sbatch --parsable "${extra[@]}" --job-name=kvscope-map --array="0-$((n - 1))" \
        --output="$out_abs/map-%a.log" "$here" map "$list_abs" "$out_abs" -- "$@")
    array=${array%%;*} # --parsable prints "jobid[;cluster]"
    reduce=$(sbatch --parsable "${extra[@]}" --job-name=kvscope-reduce --dependency="afterok:$array" \
        --output="$out_abs/reduce.log" "$here" reduce "$list_abs" "$out_abs" -- "$@")
    echo "slurm_fleet: $n ranks: map array job ${array}, reduce job ${reduce%%;*}; the view: $out_abs/fleet.txt"
    ;;
map)
    i=${SLURM_ARRAY_TASK_ID:?the map step runs as a Slurm array task (SLURM_ARRAY_TASK_ID)}
    [ "$i" -lt "$n" ] || { echo "slurm_fleet: task $i, but $list has $n ranks" >&2; exit 2; }
    trace=$(ranks | sed -n "$((i + 1))p" | awk '{print $1}')
    report=$(printf '%s/rank-%04d.report.json' "$out" "$i")
    # -o replaces the file only once the report is complete: a task killed
    # half-way leaves no half report for the reduce
    exec "$kvscope" report "$trace" --format json --quiet -o "$report" "$@"
    ;;
reduce)
    reports=() missing=0
    for ((i = 0; i < n; i++)); do
        r=$(printf '%s/rank-%04d.report.json' "$out" "$i")
        if [ -f "$r" ]; then reports+=("$r"); else
            echo "slurm_fleet: rank $i ($(ranks | sed -n "$((i + 1))p")): no report $r" >&2
            missing=$((missing + 1))
        fi
    done
    [ "$missing" -eq 0 ] || { echo "slurm_fleet: $missing of $n ranks have no report: no view written" >&2; exit 2; }
    "$kvscope" report "${reports[@]}" "$@" -o "$out/fleet.txt"
    "$kvscope" report "${reports[@]}" "$@" --format json -o "$out/fleet.json"
    echo "slurm_fleet: the view across $n ranks: $out/fleet.txt ($out/fleet.json)"
    ;;
*) usage ;;
esac
