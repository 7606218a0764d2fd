#!/bin/sh
# tests/test_cli_report.sh KVSCOPE — `kvscope report`'s contract on the
# hand-written fixtures (tests/fixtures/): --help, every bad usage and every
# unreadable input exits 2 with a message that says why (malformed JSON: the
# byte offset), a truncated trace is reported with a warning (exit 0), stdin
# and .gz work, -o writes the file, each format renders; several traces (the
# ranks of a run: kineto_small is rank 0, old_schema rank 3) too.
set -u
kvs=$1
fx=${KVS_SOURCE_ROOT:?run through meson test}/tests/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
. "$(dirname "$0")/cli_check.sh"
check 0 "report --help" "--kv-capacity" -- "$kvs" report --help
check 2 "no trace" "which trace" -- "$kvs" report
check 2 "several traces, one missing: named" "none.json" -- "$kvs" report "$fx/kineto_small.json" "$tmp/none.json"
check 2 "stdin twice" "once" -- "$kvs" report - -
check 2 "unknown option" "unknown option" -- "$kvs" report "$fx/kineto_small.json" --frob
check 2 "bad format" "text, md, json or html" -- "$kvs" report "$fx/kineto_small.json" --format pdf
check 2 "bad capacity" "--kv-capacity" -- "$kvs" report "$fx/kineto_small.json" --kv-capacity 12x
check 2 "negative peak" "--peak-gbps" -- "$kvs" report "$fx/kineto_small.json" --peak-gbps -3
check 2 "device and peak" "not both" -- "$kvs" report "$fx/kineto_small.json" --device H200 --peak-gbps 10
check 2 "missing value" "needs a value" -- "$kvs" report "$fx/kineto_small.json" --model
check 2 "unknown model" "not a bundled model" -- "$kvs" report "$fx/kineto_small.json" --model nope
# --model as Hugging Face reads a config.json
glm5=$KVS_SOURCE_ROOT/analyzers/data/models/glm5.json
mkdir "$tmp/ckpt" && cp "$glm5" "$tmp/ckpt/config.json"
check 0 "--model a checkpoint folder: said" "reading $tmp/ckpt/config.json" -- \
    "$kvs" report "$fx/kineto_small.json" --model "$tmp/ckpt"
check 0 "--model a checkpoint folder: read" "model   glm_moe_dsa (78 layers)" -- \
    "$kvs" report "$fx/kineto_small.json" --model "$tmp/ckpt"
cp "$tmp/ckpt/config.json" "$tmp/ckpt.keep"
check 2 "-o the checkpoint folder's config.json: refused" "is the --model file" -- \
    "$kvs" report "$fx/kineto_small.json" --model "$tmp/ckpt" -o "$tmp/ckpt/config.json"
if cmp -s "$tmp/ckpt/config.json" "$tmp/ckpt.keep"; then echo "ok   the checkpoint's config.json unchanged"
else echo "FAIL -o replaced the checkpoint's config.json"; fail=1; fi
mkfifo "$tmp/cfg.pipe"
(timeout 20 sh -c "cat '$glm5' > '$tmp/cfg.pipe'" >/dev/null 2>&1 &)
check 0 "--model a pipe" "model   glm_moe_dsa (78 layers)" -- \
    "$kvs" report "$fx/kineto_small.json" --model "$tmp/cfg.pipe"
# several traces (and compare's two): the pipe is read once, not waited on again
(timeout 20 sh -c "cat '$glm5' > '$tmp/cfg.pipe'" >/dev/null 2>&1 &)
check 0 "--model a pipe, two traces" "glm_moe_dsa (78 layers)" -- \
    timeout 20 "$kvs" report "$fx/kineto_small.json" "$fx/kineto_small.json" --model "$tmp/cfg.pipe"
(timeout 20 sh -c "cat '$glm5' > '$tmp/cfg.pipe'" >/dev/null 2>&1 &)
check 0 "compare --model a pipe" "" -- \
    timeout 20 "$kvs" compare "$fx/kineto_small.json" "$fx/kineto_small.json" --model "$tmp/cfg.pipe"
printf '{"num_hidden_layers": 61, "kv_lora_rank": -512}' > "$tmp/neg.json"
check 2 "--model a negative count: named" '"kv_lora_rank" is -512' -- \
    "$kvs" report "$fx/kineto_small.json" --model "$tmp/neg.json"
printf '{"model_type": "dup", "num_hidden_layers": 3, "num_hidden_layers": 78}' > "$tmp/dup.json"
check 0 "--model duplicate keys: the last value" "model   dup (78 layers)" -- \
    "$kvs" report "$fx/kineto_small.json" --model "$tmp/dup.json"
printf '{"num_hidden_layers": 61}\n{"num_hidden_layers": 3}\n' > "$tmp/trail.json"
check 2 "--model data after the object" "more after the object" -- \
    "$kvs" report "$fx/kineto_small.json" --model "$tmp/trail.json"
# a 14 MB config took 1.1 GB: refused, at a small peak (RSS of kvscope itself)
python3 -c 'import sys; sys.stdout.write("{\"num_hidden_layers\": 61, \"x\": [" + "0," * (7 << 20) + "0]}")' > "$tmp/bomb.json"
check 2 "--model a 14 MB config: refused" "more than the 1048576" -- \
    "$kvs" report "$fx/kineto_small.json" --model "$tmp/bomb.json"
peak=$(python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
    "$kvs" report "$fx/kineto_small.json" --model "$tmp/bomb.json")
if [ "$peak" -lt 98304 ]; then echo "ok   --model a 14 MB config: peak $peak KiB"
else echo "FAIL --model a 14 MB config: peak $peak KiB, over 96 MiB"; fail=1; fi
check 2 "bad step regex" "step-regex" -- "$kvs" report "$fx/kineto_small.json" --step-regex "(["
check 2 "missing file" "cannot open" -- "$kvs" report "$tmp/none.json"
: > "$tmp/empty.json"
check 2 "empty file" "empty" -- "$kvs" report "$tmp/empty.json"
printf '{"traceEvents": []}' > "$tmp/noevents.json"
check 2 "no events" "no events" -- "$kvs" report "$tmp/noevents.json"
printf '{"traceEvents": [{"ph": "X", "ts": 1} {"ph": "X"}]}' > "$tmp/bad.json"
check 2 "malformed: byte offset" "byte 38: expected" -- "$kvs" report "$tmp/bad.json"

check 0 "text report" "aten::copy_" -- "$kvs" report "$fx/kineto_small.json"
check 0 "model and capacity" "KV capacity" -- "$kvs" report "$fx/kineto_small.json" --model glm5 --kv-capacity 16384
check 0 "markdown" "|" -- "$kvs" report "$fx/kineto_small.json" --format md
check 0 "html" "<html" -- "$kvs" report "$fx/kineto_small.json" --format html
check 0 "json" "kvscope.report/1" -- "$kvs" report "$fx/kineto_small.json" --format json
check 0 "stdin" "kv_full_buffer_cast" -- sh -c "\"$kvs\" report - --format json < \"$fx/kineto_small.json\""
gzip -c "$fx/kineto_small.json" > "$tmp/k.json.gz"
check 0 ".gz" "kv_full_buffer_cast" -- "$kvs" report "$tmp/k.json.gz" --format json
check 0 "-o FILE" "" -- "$kvs" report "$fx/old_schema.json" --format json -o "$tmp/out.json" --quiet
grep -q '"schema": "kvscope.report/1"' "$tmp/out.json" && echo "ok   -o wrote the report" ||
    { echo "FAIL -o wrote no report"; fail=1; }
head -c 3000 "$fx/kineto_small.json" > "$tmp/cut.json"
check 0 "truncated: reported with a warning" "truncated" -- "$kvs" report "$tmp/cut.json"
check 0 "--quiet keeps warnings" "truncated" -- "$kvs" report "$tmp/cut.json" --quiet
check 0 "no steps: said so" "no step markers" -- "$kvs" report "$fx/old_schema.json"
check 0 "--batch without steps: said so, even --quiet" "gives no tokens/s without step markers" -- \
    "$kvs" report "$fx/old_schema.json" --batch 8 --quiet
check 0 "--step-regex" "" -- "$kvs" report "$fx/kineto_small.json" --step-regex '^layer_[0-9]+$' --batch 2
# -o naming an input trace is refused before anything is written
cp "$fx/kineto_small.json" "$tmp/keep.json"
check 2 "-o onto the trace itself" "would overwrite it" -- "$kvs" report "$tmp/keep.json" -o "$tmp/keep.json"
cmp -s "$fx/kineto_small.json" "$tmp/keep.json" && echo "ok   the trace is untouched" ||
    { echo "FAIL -o overwrote the trace"; fail=1; }
check 2 "compare -o onto AFTER" "would overwrite it" -- "$kvs" compare "$fx/kineto_small.json" "$tmp/keep.json" -o "$tmp/keep.json"
cmp -s "$fx/kineto_small.json" "$tmp/keep.json" && echo "ok   AFTER is untouched" ||
    { echo "FAIL compare -o overwrote AFTER"; fail=1; }

# -o's extension picks the format when --format is not given; --format wins
check 0 "-o x.html writes HTML" "" -- "$kvs" report "$fx/kineto_small.json" -o "$tmp/r.html" --quiet
head -1 "$tmp/r.html" | grep -q '<!DOCTYPE html>' && echo "ok   -o x.html is HTML" ||
    { echo "FAIL -o x.html is not HTML: $(head -c 80 "$tmp/r.html")"; fail=1; }
check 0 "-o x.JSON writes JSON" "" -- "$kvs" report "$fx/kineto_small.json" -o "$tmp/r.JSON" --quiet
python3 -m json.tool "$tmp/r.JSON" >/dev/null 2>&1 && echo "ok   -o x.JSON is JSON" ||
    { echo "FAIL -o x.JSON is not JSON"; fail=1; }
check 0 "--format text -o x.html" "" -- "$kvs" report "$fx/kineto_small.json" --format text -o "$tmp/t.html" --quiet
head -1 "$tmp/t.html" | grep -q '^kvscope report' && echo "ok   --format wins over -o's extension" ||
    { echo "FAIL --format text -o x.html: $(head -c 80 "$tmp/t.html")"; fail=1; }
check 0 "-o x.out (no known extension) writes text" "" -- "$kvs" report "$fx/kineto_small.json" -o "$tmp/r.out" --quiet
head -1 "$tmp/r.out" | grep -q '^kvscope report' && echo "ok   -o x.out is text" ||
    { echo "FAIL -o x.out is not text"; fail=1; }
check 0 "compare -o x.md writes markdown" "" -- "$kvs" compare "$fx/kineto_small.json" "$fx/kineto_small.json" -o "$tmp/c.md" --quiet
head -1 "$tmp/c.md" | grep -q '^# kvscope compare' && echo "ok   compare -o x.md is markdown" ||
    { echo "FAIL compare -o x.md: $(head -c 80 "$tmp/c.md")"; fail=1; }

# several AFTERs: each compared with BEFORE, then IN SHORT; json is one
# kvscope.summary/1 document; html takes one AFTER
check 0 "compare BEFORE AFTER AFTER closes with IN SHORT" "^IN SHORT" -- "$kvs" compare "$fx/kineto_small.json" "$fx/kineto_small.json" "$fx/kineto_small.json" --quiet
check 0 "compare --summary: IN SHORT for one AFTER" "The bottleneck" -- "$kvs" compare "$fx/kineto_small.json" "$fx/kineto_small.json" --summary --quiet
check 0 "compare --summary --format md" "## In short" -- "$kvs" compare "$fx/kineto_small.json" "$fx/kineto_small.json" --summary --format md --quiet
check 0 "compare BEFORE AFTER AFTER --format json" '"schema": "kvscope.summary/1"' -- "$kvs" compare "$fx/kineto_small.json" "$fx/kineto_small.json" "$fx/kineto_small.json" --format json --quiet
check 0 "compare --summary --format json" '"bottleneck": ' -- "$kvs" compare "$fx/kineto_small.json" "$fx/kineto_small.json" --summary --format json --quiet
check 2 "compare BEFORE AFTER AFTER --format html refused" "html takes one AFTER" -- "$kvs" compare "$fx/kineto_small.json" "$fx/kineto_small.json" "$fx/kineto_small.json" --format html
check 2 "compare --summary --format html refused" "text, md and json" -- "$kvs" compare "$fx/kineto_small.json" "$fx/kineto_small.json" --summary --format html
check 2 "compare with two stdin traces refused" "only one of the traces" -- "$kvs" compare - "$fx/kineto_small.json" -
n=$("$kvs" compare "$fx/kineto_small.json" "$fx/kineto_small.json" --quiet | grep -c '^IN SHORT')
[ "$n" -eq 0 ] && echo "ok   compare BEFORE AFTER: no IN SHORT without --summary" ||
    { echo "FAIL compare BEFORE AFTER printed IN SHORT"; fail=1; }

# --name=value, as compare takes it: the same report as --name value
check 0 "--format=json" "kvscope.report/1" -- "$kvs" report "$fx/kineto_small.json" --format=json --kv-capacity=16384 --quiet
"$kvs" report "$fx/kineto_small.json" --format json --kv-capacity 16384 --quiet > "$tmp/spaced.json" 2>&1
"$kvs" report "$fx/kineto_small.json" --format=json --kv-capacity=16384 --quiet > "$tmp/equals.json" 2>&1
cmp -s "$tmp/spaced.json" "$tmp/equals.json" && echo "ok   --name=value reports as --name value" ||
    { echo "FAIL --name=value gives another report than --name value"; fail=1; }
check 2 "--quiet=1 is no option" "unknown option '--quiet=1'" -- "$kvs" report "$fx/kineto_small.json" --quiet=1
check 2 "--top=0 checked like --top 0" "--top wants" -- "$kvs" report "$fx/kineto_small.json" --top=0
# a real trace with a 16-input op (HTA's trace_diff: a compiled graph's
# CompiledFunction group): its dims and dtypes are cut in the tables, so no
# row stretches past the widest ordinary one; JSON keeps them whole
hta=${KVS_SHARED_DIR:-}/traces/hta
if [ -f "$hta/trace_diff__test__test.json.gz" ]; then
    widest() { awk '{ if (length > m) m = length } END { print m + 0 }'; }
    w=$("$kvs" report "$hta/trace_diff__test__test.json.gz" --quiet 2>/dev/null | widest)
    [ "$w" -gt 100 ] && [ "$w" -le 170 ] && echo "ok   report text rows at most 170 columns ($w)" ||
        { echo "FAIL report text: widest row $w columns"; fail=1; }
    w=$("$kvs" compare "$hta/trace_diff__control__control.json.gz" "$hta/trace_diff__test__test.json.gz" \
        --quiet 2>/dev/null | widest)
    [ "$w" -gt 100 ] && [ "$w" -le 210 ] && echo "ok   compare text rows at most 210 columns ($w)" ||
        { echo "FAIL compare text: widest row $w columns"; fail=1; }
    "$kvs" report "$hta/trace_diff__test__test.json.gz" --format json --quiet 2>/dev/null |
        python3 -c 'import json, sys
g = [g for g in json.load(sys.stdin)["groups"] if g["op"] == "CompiledFunction"]
sys.exit(0 if g and len(g[0]["dims"]) == 16 and len(g[0]["dtypes"]) == 16 else 1)' &&
        echo "ok   JSON keeps the 16 tensors' dims whole" || { echo "FAIL JSON dims cut"; fail=1; }
else
    echo "skip ../shared/traces/hta: the wide-table checks"
fi

# several traces: the ranks of one run, in every format
check 0 "two ranks: text" "ACROSS RANKS" -- "$kvs" report "$fx/kineto_small.json" "$fx/old_schema.json"
check 0 "two ranks: markdown" "## Across ranks" -- "$kvs" report "$fx/kineto_small.json" "$fx/old_schema.json" --format md
check 0 "two ranks: html" "id=\"rank-3\"" -- "$kvs" report "$fx/kineto_small.json" "$fx/old_schema.json" --format html
check 0 "two ranks: json" "kvscope.multirank/1" -- "$kvs" report "$fx/kineto_small.json" "$fx/old_schema.json" --format json
exit $fail
