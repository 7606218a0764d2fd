#!/usr/bin/env bash
# run.sh — kvscope's set-up, main job and tests, on a fresh Debian/Ubuntu machine.
#
#   ./run.sh          install what is missing, build, run the main job
#                     (examples/demo.sh: trace GLM-5 decode with the bug and
#                     the fix on this GPU, or read the bundled H200 traces
#                     without one; report, compare, summary, HTML into out/)
#   ./run.sh test     install what is missing, build, run every test;
#                     ends with the line "N passed, N failed"
#   ./run.sh setup    install what is missing and configure, nothing else
#
# Extra arguments after `test` go to `meson test` (e.g. --suite unit).
# Environment: KVS_BUILD_DIR (default build), KVS_MESON_ARGS (extra setup flags),
# KVS_NO_INSTALL=1 (never call apt-get; print what is missing instead),
# KVS_JOBS (parallel build jobs; ninja's default otherwise),
# KVS_OUT_DIR (the main job's outputs, default out), KVS_DEMO_SOURCE=bundled
# (the main job never touches the GPU; more in examples/demo.sh).
set -euo pipefail
cd "$(dirname "$0")"
root=$(pwd)
build=${KVS_BUILD_DIR:-build}
read -r -a meson_args <<<"${KVS_MESON_ARGS:-}"
jobs=()
[ -n "${KVS_JOBS:-}" ] && jobs=(-j "$KVS_JOBS")

[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin

say() { printf '==> %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------
# set-up: Debian packages by name, nothing vendored

missing_packages() {
    local -a pk=()
    command -v meson >/dev/null || pk+=(meson)
    command -v ninja >/dev/null || pk+=(ninja-build)
    command -v pkg-config >/dev/null || pk+=(pkg-config)
    command -v cc >/dev/null || pk+=(gcc libc6-dev)
    command -v c++ >/dev/null || pk+=(g++)
    command -v python3 >/dev/null || pk+=(python3)
    if command -v pkg-config >/dev/null; then
        pkg-config --exists libcjson || pk+=(libcjson-dev)
        pkg-config --exists zlib || pk+=(zlib1g-dev)
        pkg-config --exists sqlite3 || pk+=(libsqlite3-dev)
    else
        pk+=(libcjson-dev zlib1g-dev libsqlite3-dev)
    fi
    echo "${pk[@]}"
}

setup() {
    local pk
    pk=$(missing_packages)
    if [ -n "$pk" ]; then
        local sudo=""
        [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo=sudo
        if [ "${KVS_NO_INSTALL:-0}" = 1 ] || ! command -v apt-get >/dev/null ||
           { [ "$(id -u)" -ne 0 ] && [ -z "$sudo" ]; }; then
            say "missing: $pk"
            say "install them with:  sudo apt-get install -y $pk"
            exit 1
        fi
        say "installing Debian packages: $pk"
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        # shellcheck disable=SC2086
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pk >/dev/null
    fi
    # optional: ISA-L's inflate reads .gz traces 3-4x faster than zlib (the
    # build falls back to zlib without it); installed where apt has it (the
    # package lists fetched first when they do not know it yet)
    if command -v pkg-config >/dev/null && ! pkg-config --exists libisal &&
       [ "${KVS_NO_INSTALL:-0}" != 1 ] && command -v apt-get >/dev/null; then
        local sudo=""
        [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo=sudo
        if [ "$(id -u)" -eq 0 ] || [ -n "$sudo" ]; then
            apt-cache show libisal-dev >/dev/null 2>&1 ||
                $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
            if apt-cache show libisal-dev >/dev/null 2>&1; then
                say "installing Debian packages: libisal-dev (optional: faster .gz reading)"
                $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libisal-dev >/dev/null ||
                    say "libisal-dev did not install: .gz traces inflate with zlib"
            else
                say "no libisal-dev in apt: .gz traces inflate with zlib"
            fi
        fi
    fi
    # meson.build needs meson >= 1.0 (Debian 12, Ubuntu 24.04 and later ship it;
    # Debian 11 and Ubuntu 22.04 ship 0.5x/0.61)
    local mv
    mv=$(meson --version 2>/dev/null || echo 0)
    if [ "${mv%%.*}" -lt 1 ] 2>/dev/null; then
        say "meson $mv is too old: kvscope needs meson >= 1.0; install a newer one with"
        say "  python3 -m pip install --user 'meson>=1.0'   (then make sure ~/.local/bin is first in PATH)"
        exit 1
    fi
    if ! command -v nvcc >/dev/null; then
        say "no CUDA toolkit (nvcc) found: building the analyzers, reports and CLI only;"
        say "install the CUDA toolkit (with CUPTI and NCCL) for capture, kernels and the engine"
    fi
    if [ ! -f "$build/build.ninja" ]; then
        say "configuring $build"
        meson setup "$build" "${meson_args[@]}" >"$root/.setup.log" 2>&1 ||
            { cat "$root/.setup.log" >&2; exit 1; }
        sed -n '/^kvscope /,$p' "$root/.setup.log" >&2
    fi
    rm -f "$root/.setup.log"
}

# Optional tools that let more tests run (they skip with 77 without them):
# chromium renders the HTML report in tests/test_html_chromium.sh.
optional_test_tools() {
    command -v chromium >/dev/null || command -v chromium-browser >/dev/null && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo=sudo
    if [ "${KVS_NO_INSTALL:-0}" = 1 ] || ! command -v apt-get >/dev/null ||
       { [ "$(id -u)" -ne 0 ] && [ -z "$sudo" ]; }; then
        say "no chromium: the HTML browser test will skip (apt-get install chromium)"
        return 0
    fi
    say "installing chromium for the HTML browser test"
    { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } \
        >/dev/null 2>&1 || say "could not install chromium: the HTML browser test will skip"
}

compile() {
    say "building in $build"
    ninja -C "$build" "${jobs[@]}" >"$build/kvs-build.log" 2>&1 ||
        { cat "$build/kvs-build.log" >&2; exit 1; }
}

# ---------------------------------------------------------------------------
# tests: meson's own runner, then one closing line from its JSON log

run_tests() {
    local rc=0
    meson test -C "$build" --print-errorlogs "$@" || rc=$?
    python3 - "$build/meson-logs/testlog.json" "$build/kvs-test-counts" <<'PY'
import json, sys
passed = failed = skipped = 0
with open(sys.argv[1]) as f:
    for line in f:
        r = json.loads(line).get("result", "")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
with open(sys.argv[2], "w") as f:
    f.write(f"{passed} {failed} {skipped}\n")
print(f"({skipped} skipped: no GPU or optional tool absent)" if skipped else "(none skipped)")
print(f"{passed} passed, {failed} failed")
PY
    return $rc
}

# ---------------------------------------------------------------------------
# the main job

# examples/demo.sh: fresh engine traces on a GPU (else the bundled H200 ones),
# report, compare, summary; it ends by saying where the HTML report is.
main_job() {
    examples/demo.sh "$build" "${KVS_OUT_DIR:-out}" "$@"
}

# The main job needs kvscope, and the engine only where there is a GPU to run
# it on: build just those (a laptop skips the CUDA kernels and the tests).
compile_demo() {
    local -a targets=(cli/kvscope)
    if { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; } ||
       [ -e /dev/nvidia0 ]; then
        targets=()   # the engine, the capture library, kernels: everything
    fi
    say "building in $build${targets[*]:+ (${targets[*]})}"
    ninja -C "$build" "${jobs[@]}" "${targets[@]}" >"$build/kvs-build.log" 2>&1 ||
        { cat "$build/kvs-build.log" >&2; exit 1; }
}

cmd=${1:-demo}
[ $# -gt 0 ] && shift
case "$cmd" in
    setup) setup ;;
    test) setup; optional_test_tools; compile; run_tests "$@" ;;
    demo) setup; compile_demo; main_job "$@" ;;
    -h|--help|help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' ;;
    *) echo "run.sh: unknown command '$cmd' (try ./run.sh --help)" >&2; exit 2 ;;
esac
