#!/bin/sh
# tests/test_html_chromium.sh CMD [ARG...] — render the HTML page that CMD
# writes to stdout (or, with --shared REL KVSCOPE, `kvscope report` of a
# trace under $KVS_SHARED_DIR; more ARGs: more traces, the ranks of one run)
# in headless Chromium and check that it loads offline with
# no console messages (errors, CSP refusals), that the DOM holds the
# report's parts (charts, tables) and no element injected from trace names,
# and that the screenshot is not blank.
# Exit 77 (skipped) when chromium is not installed; 99 when the harness
# itself is broken (a control page's console error is not seen).
#
#   meson test -C build test_html_chromium
set -u
browser=""
for b in chromium chromium-browser google-chrome; do
    command -v "$b" >/dev/null 2>&1 && { browser=$b; break; }
done
[ -n "$browser" ] || { echo "skip: no chromium (apt-get install chromium)"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "skip: no python3"; exit 77; }

# --shared REL KVSCOPE [ARG...]: the report of ../shared/REL (77 when absent)
if [ "${1:-}" = "--shared" ]; then
    trace=${KVS_SHARED_DIR:-}/$2
    [ -n "${KVS_SHARED_DIR:-}" ] && [ -f "$trace" ] || { echo "skip: no $2 in \$KVS_SHARED_DIR"; exit 77; }
    kvs=$3; shift 3
    set -- "$kvs" report "$trace" --format html --quiet "$@"
fi

dir=$(mktemp -d) || exit 99
trap 'rm -rf "$dir"' EXIT
"$@" >"$dir/page.html" || { echo "FAIL: '$*' exited $?"; exit 1; }

run_browser() { # run_browser ERRFILE ARGS... (output on stdout)
    err=$1; shift
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --disable-extensions \
        --user-data-dir="$dir/profile" --enable-logging=stderr --v=0 "$@" 2>"$err"
}

# the harness must see a console error when there is one
printf '<!DOCTYPE html><html><body><p>control</p><script>console.error("kvs-control")</script></body></html>' \
    >"$dir/control.html"
run_browser "$dir/control.err" --dump-dom "file://$dir/control.html" >/dev/null
grep -q 'CONSOLE.*kvs-control' "$dir/control.err" ||
    { echo "harness broken: the control page's console error was not seen"; cat "$dir/control.err"; exit 99; }

run_browser "$dir/dom.err" --dump-dom "file://$dir/page.html" >"$dir/dom.html" ||
    { echo "FAIL: chromium could not load the page"; cat "$dir/dom.err"; exit 1; }
run_browser "$dir/shot.err" --window-size=1200,1600 --screenshot="$dir/shot.png" \
    "file://$dir/page.html" >/dev/null ||
    { echo "FAIL: chromium could not screenshot the page"; cat "$dir/shot.err"; exit 1; }

fail=0
if grep -h 'CONSOLE' "$dir/dom.err" "$dir/shot.err"; then
    echo "FAIL: the page logged console messages (above)"; fail=1
fi
python3 - "$dir/dom.html" "$dir/shot.png" <<'PY' || fail=1
import sys, zlib, struct
dom = open(sys.argv[1], encoding="utf-8", errors="replace").read()
bad = []
wants = ["<svg", "<table", "<rect", "Findings"]
if "<h1>kvscope compare" in dom:
    wants += ["Verdict", "Step time: GPU versus wall", "Copy/cast groups paired by role"]
elif "Across ranks" in dom:  # several ranks: the summary, then each rank's report
    wants += ["Each rank's step", "Findings by rank", 'id="rank-0"', 'id="rank-1"',
              "Bandwidth roofline", "Top kernels"]
else:
    wants += ["Bandwidth roofline", "GPU time per step", "Top kernels", "Roofline of every op group",
              "Roofline table"]
if "Roofline of every op group" in dom:  # the log-log chart: its points and both roofs
    chart = dom.split('id="op-roofline"', 1)[1].split("</svg>", 1)[0]
    for want in ("arithmetic intensity", "achieved TFLOP/s"):
        if want not in chart:
            bad.append(f"the op roofline chart lacks {want!r}")
    if "no op group with both bytes and FLOPs known" not in chart and "</title><circle" not in chart:
        bad.append("the op roofline chart has no point (and does not say why)")
    if "roofs unknown for this device" not in chart and chart.count('class="peak"') < 2:
        bad.append("the op roofline chart lacks a roof (bandwidth slope and compute flat)")
for want in wants:
    if want not in dom:
        bad.append(f"DOM lacks {want!r}")
low = dom.lower()
if "<script" in low:
    bad.append("DOM holds a <script> element (injected from a trace string?)")
if "http://" in low.replace('xmlns="http://www.w3.org/2000/svg"', "") or "https://" in low:
    bad.append("page references the network")

# decode the PNG (8-bit RGB/RGBA, non-interlaced: what Chromium writes)
data = open(sys.argv[2], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, typ = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if typ == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        bpp = {2: 3, 6: 4}[ctype]
        assert depth == 8
    elif typ == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
nonwhite = colored = 0
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        r, g, bl = line[x], line[x + 1], line[x + 2]
        if r < 240 or g < 240 or bl < 240:
            nonwhite += 1
        if max(r, g, bl) - min(r, g, bl) > 80:   # a saturated colour: the charts' bars
            colored += 1
    prev = line
total = w * h
print(f"screenshot {w}x{h}: {nonwhite / total:.1%} non-white, {colored} coloured pixels")
if nonwhite / total < 0.02:
    bad.append("the screenshot is (nearly) blank")
if colored < 200:
    bad.append("no chart colour in the screenshot")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
[ "$fail" -eq 0 ] && echo "ok   page renders in $browser without console messages"
exit $fail
