#!/bin/sh
# tests/test_examples_syntax.sh — every walkthrough in examples/ parses: the
# shell scripts with `bash -n`, the Python scripts with py_compile (the
# PyTorch example needs torch and a GPU to run, so CPU tests only compile it).
# Each must also open with a comment saying what it shows and how to run it.
#   meson test -C build test_examples_syntax
set -u
src=${KVS_SOURCE_ROOT:-.}
fail=0 n=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
for f in "$src"/examples/*.sh "$src"/examples/*.py "$src"/examples/traces/*.py "$src"/examples/fleet/*.sh "$src"/examples/fleet/*.py; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    case $f in
        *.sh) bash -n "$f" 2>"$tmp/err" ;;
        *.py) python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
                  "$f" "$tmp/out.pyc" 2>"$tmp/err" ;;
    esac
    if [ $? -ne 0 ]; then
        echo "FAIL $f does not parse:"; cat "$tmp/err"; fail=1; continue
    fi
    # the header: a comment in the first lines that names the file and how to run it
    rel=${f#"$src"/}
    if ! head -n 4 "$f" | grep -q "$rel"; then
        echo "FAIL $f: its opening comment does not name it ($rel)"; fail=1; continue
    fi
    echo "ok   $f"
done
[ "$n" -gt 0 ] || { echo "FAIL no examples found under $src/examples"; fail=1; }
exit $fail
