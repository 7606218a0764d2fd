#!/usr/bin/env python3
"""tests/test_scan_property.py SCAN_PROBE KVSCOPE — the streaming scanner's
skip and capture against Python's json on the same bytes, for values of
every kind (number, string, literal, array, object) from 1 byte to 64 MiB,
at every position relative to a refill boundary and to each bound that
decides whether a value is kept: the capture bound of kvs_scan_capture_max
(exactly at, one under and one over the value's size), the header bound
(1 MiB) and the dims bound (64 KiB).

Each document is "[V, 7]" with V padded by spaces. tests/scan_probe reads it
through a scanner of 64 bytes (every alignment of small values, many refills
inside big ones) or of 1 MiB (values starting just before, at and after the
first refill) and says what it got; the oracle is json.loads (integers kept
as text: Python's own 4300-digit limit is not the scanner's) and the limits
of docs/reliability.md: a number over 4096 characters and nesting over 512
levels are KVS_STATUS_LIMIT. Where json accepts the document, the probe must
read V and then ", 7 ]" to the end, and a capture must be exactly V's bytes
(length, offset and hash); where json rejects it (the document cut short, a
byte of its structure replaced), the probe must not read it whole. Known
leniency, not tested: a skipped string is not decoded, so an escape or a raw
control byte inside one is not checked (docs/analysis.md).

Then through `kvscope report`: deviceProperties of 1 MiB - 1, 1 MiB and 1
MiB + 1 (a string, an array and an object inside) is read or said skipped;
Input Dims whose Input Dims + Input type + 1 is 64 KiB - 1 .. 64 KiB + 1 is
kept as the op's shape or said cut.

Under AddressSanitizer (~8x slower) values over 1 MiB + 1 are left out, said.

    meson test -C build test_scan_property
"""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import zlib

from kvs_test import check, finish

PROBE, KVSCOPE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
ROOT = os.environ.get("KVS_SOURCE_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB, KiB = 1 << 20, 1 << 10
MAX_NUMBER, MAX_DEPTH = 4096, 512


def statuses():
    with open(os.path.join(ROOT, "common", "include", "kvscope", "base.h")) as f:
        body = f.read().split("enum kvs_status {", 1)[1].split("};", 1)[0]
    names = re.findall(r"^\s*(KVS_STATUS_[A-Z_]+)", body, re.M)
    return {n[len("KVS_STATUS_"):]: i for i, n in enumerate(names)}


ST = statuses()


def asan_build(path):
    with open(path, "rb") as f:
        return b"__asan_init" in f.read()


ASAN = asan_build(PROBE)


# ---------------------------------------------------------------------------
# values of exactly n bytes

def fill_list(n, open_, close, item, sep=b","):
    """open_ + items + close of exactly n bytes: item(k) gives the k-th item of
    about 1 KiB at most; the last one is cut or grown to fit. None: impossible."""
    body = n - len(open_) - len(close)
    if body < 0:
        return None
    if body == 0:
        return open_ + close
    parts, used, k = [], 0, 0
    while True:
        it = item(k, None)
        need = len(it) + (len(sep) if parts else 0)
        if used + need + len(sep) + 16 > body:  # room for a last item of 16 bytes or more
            break
        parts.append(it)
        used += need
        k += 1
    rest = body - used - (len(sep) if parts else 0)
    last = item(k, rest)
    if last is None or len(last) != rest:
        return None
    parts.append(last)
    return open_ + sep.join(parts) + close


def number(n):
    return b"1" * n if n >= 1 else None


def decimal(n):  # -1.55..5e-3 style, every grammar part
    return b"-1." + b"5" * (n - 6) + b"e-3" if n >= 7 else None


STRING_TOKENS = [b"a", b"b", b'\\"', b"c", b"\\\\", b"d", b"\\/", b"e", b"\\u00e9", b"f", b" ",
                 b"\\\\\\\\", b'\\"\\"', b"\xc3\xa9"]


def string(n):
    """escapes and backslash runs throughout (whole escapes only: a skipped
    string is not decoded, so one json rejects would not test the scanner),
    plain bytes to the exact size"""
    if n < 2:
        return None
    body, parts, used, k = n - 2, [], 0, 0
    if body > 4096:  # the token mix for the first 4 KiB, then plain bytes
        mix = string(4096 + 2)[1:-1]
        return b'"' + mix + b"x" * (body - len(mix)) + b'"'
    while True:
        t = STRING_TOKENS[k % len(STRING_TOKENS)]
        if used + len(t) > body:
            break
        parts.append(t)
        used += len(t)
        k += 1
    return b'"' + b"".join(parts) + b"x" * (body - used) + b'"'


def literal(n):
    return {4: b"true", 5: b"false"}.get(n)


def null(n):
    return b"null" if n == 4 else None


def array(n):
    def item(k, size):
        if size is None:
            return [b"0", b"-2.5e3", b"true", b"null", b'"s\\"q"', b"[1,[2]]", b'{"a":[]}',
                    b'"' + b"y" * 1000 + b'"'][k % 8]
        if size == 0:
            return None
        if size == 1:
            return b"0"
        return b'"' + b"z" * (size - 2) + b'"' if size >= 2 else None
    return fill_list(n, b"[", b"]", item)


def obj(n):
    def item(k, size):
        if size is None:
            return b'"k%d":%s' % (k, [b"0", b"[1,2]", b'"' + b"v" * 1000 + b'"', b"{}", b"false"][k % 5])
        key = b'"k%d":' % k
        if size < len(key) + 1:
            return None
        if size == len(key) + 1:
            return key + b"0"
        return key + b'"' + b"w" * (size - len(key) - 2) + b'"'
    return fill_list(n, b"{", b"}", item)


def numbers(n):  # an array of numbers only: every refill inside it falls in or beside one
    return fill_list(n, b"[", b"]", lambda k, size: [b"0", b"-12.5e-3", b"7"][k % 3] if size is None
                     else (b"1" * size if size >= 1 else None))


def literals(n):
    def item(k, size):
        if size is None:
            return [b"true", b"null", b"false"][k % 3]
        return {4: b"true", 5: b"false"}.get(size) or (b"[" + b"null," * ((size - 6) // 5) + b"null]"
                                                       if size >= 6 and (size - 6) % 5 == 0 else None)
    for extra in range(0, 5):  # pad with spaces inside the brackets where the lengths do not fit
        v = fill_list(n - extra, b"[", b"]", item)
        if v is not None:
            return v[:1] + b" " * extra + v[1:]
    return None


KINDS = {"number": number, "decimal": decimal, "string": string, "true/false": literal,
         "null": null, "array": array, "object": obj, "array of numbers": numbers,
         "array of literals": literals}


STRING_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # unrolled: fast on MiBs of string
NUMBER_RE = re.compile(rb"[-0-9][-+.eE0-9]*")
BRACKET_RE = re.compile(rb"[][{}]")


def expect(v):
    """OK or LIMIT for a value json accepts: a number over 4096 characters
    or nesting over 512 levels (the value's own; the skip starts inside the
    document's '[') is a limit"""
    bare = STRING_RE.sub(b'""', v)
    longest = max((len(m) for m in NUMBER_RE.findall(bare)), default=0)
    d = m = 0
    for b in BRACKET_RE.findall(bare):
        d += 1 if b in b"[{" else -1
        m = max(m, d)
    return "LIMIT" if longest > MAX_NUMBER or m > MAX_DEPTH else "OK"


def json_ok(doc):
    try:
        json.loads(doc, parse_int=str, parse_float=str)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------
# running the probe

class Cases:
    def __init__(self):
        self.f = tempfile.NamedTemporaryFile(prefix="kvs_scan_cases_", delete=False)
        self.meta = []

    def add(self, doc, v0, vlen, runs, want, what):
        """runs: (buffer size, mode, bound) each; want: OK or LIMIT (the
        status the value gets where json accepts the document), REJECT (json
        rejects it: it must not be read whole), REJECT/LIMIT (the same, or a
        limit the value hits before the fault)"""
        self.f.write(b"%d %d\n" % (len(runs), len(doc)))
        for bufsize, mode, mx in runs:
            self.f.write(b"%d %s %d\n" % (bufsize, mode.encode(), mx))
        self.f.write(doc)
        h = crc(doc, v0, vlen)
        for bufsize, mode, mx in runs:
            self.meta.append((v0, vlen, mode, mx, want, "%s, buffer %s" % (what, bufsize or "1 MiB"), h))

    def run(self):
        self.f.close()
        out = subprocess.run([PROBE, self.f.name], capture_output=True, text=True)
        os.unlink(self.f.name)
        if out.returncode != 0:
            check(False, "scan_probe exited %d: %s" % (out.returncode, out.stderr[-500:]))
            return []
        return out.stdout.splitlines()


def crc(doc, v0, vlen):
    return "%08x" % zlib.crc32(memoryview(doc)[v0:v0 + vlen])


def verdicts(cases, label):
    lines = cases.run()
    bad = []
    if len(lines) != len(cases.meta):
        check(False, "%s: %d answers for %d cases" % (label, len(lines), len(cases.meta)))
        return
    for line, (v0, vlen, mode, mx, want, what, h) in zip(lines, cases.meta):
        g = dict(kv.split("=", 1) for kv in line.split())
        ok, st, tail = g["ok"] == "1", int(g["status"]), g["tail"] == "1"
        if want.startswith("REJECT"):
            allowed = (ST["PARSE"], ST["TRUNCATED"]) + ((ST["LIMIT"],) if want.endswith("LIMIT") else ())
            good = not (ok and tail) and st in allowed
        elif want == "LIMIT":
            good = not ok and st == ST["LIMIT"]
        else:
            good = ok and tail and st == ST["OK"]
            if good and mode == "capture":
                good = int(g["start"]) == v0 and int(g["len"]) == vlen and g["hash"] == h
            if good and mode == "max":
                over = vlen > mx
                good = (g["over"] == "1") == over
                if not over:
                    good = good and int(g["start"]) == v0 and int(g["len"]) == vlen and g["hash"] == h
                else:
                    good = good and int(g["len"]) == 0
        if not good:
            bad.append("%s, %s%s: want %s, got %s" % (what, mode, " %d" % mx if mode == "max" else "",
                                                     want, line))
    check(not bad, "%s: %d cases as json says%s" % (label, len(cases.meta),
                                                    "".join("\n     " + b for b in bad[:12])))


def doc_of(v, pad):
    return b"[" + b" " * pad + v + b" ,\n 7 ]", 1 + pad


# ---------------------------------------------------------------------------
# A. small values of every kind at every alignment to a 64-byte buffer

def small_values():
    cases = Cases()
    sizes = list(range(1, 20)) + [31, 32, 33, 63, 64, 65, 127, 128, 129]
    n_values = 0
    for kind, make in KINDS.items():
        for n in sizes:
            v = make(n)
            if v is None:
                continue
            assert len(v) == n, (kind, n, len(v))
            doc0, _ = doc_of(v, 0)
            if not json_ok(doc0):
                check(False, "%s of %d bytes: json reads it" % (kind, n))
                continue
            want = expect(v)
            n_values += 1
            # bounds at the value's size, one under and over it, and halfway: the mark is
            # dropped at the first refill past the bound, inside whatever is being read
            runs = [(64, m, x) for m, x in (("skip", 0), ("capture", 0), ("max", n // 2), ("max", n - 1),
                                            ("max", n), ("max", n + 1)) if m != "max" or x >= 1]
            for pad in range(64):
                doc, v0 = doc_of(v, pad)
                cases.add(doc, v0, n, runs, want, "%s of %d bytes at %d" % (kind, n, v0))
    verdicts(cases, "A. %d small values (1-129 bytes, %d kinds), every alignment to a 64-byte buffer, "
                    "skip/capture/capture_max at size/2, size-1, size, size+1" % (n_values, len(KINDS)))


# ---------------------------------------------------------------------------
# B/C. values at the bounds and up to 64 MiB

def big_values():
    sizes = [MAX_NUMBER - 1, MAX_NUMBER, MAX_NUMBER + 1, 64 * KiB - 1, 64 * KiB, 64 * KiB + 1,
             MiB - 1, MiB, MiB + 1]
    if not ASAN:
        sizes.append(64 * MiB)
    else:
        print("skip: an AddressSanitizer build: values over 1 MiB + 1 are left out (the plain builds "
              "run 64 MiB)")
    cases = Cases()
    count = 0
    for kind in ("number", "decimal", "string", "array", "object", "array of numbers", "array of literals"):
        for n in sizes:
            if n > MiB + 1 and kind in ("number", "decimal"):
                continue  # over 4096 characters a number is a limit at any size: 4097 says it
            if n > MiB + 1 and kind.startswith("array of"):
                continue  # 64 MiB of tokens: millions of Python objects for json; 1 MiB covers the refills
            v = KINDS[kind](n)
            if v is None:
                continue
            assert len(v) == n
            doc0, _ = doc_of(v, 0)
            if not json_ok(doc0):
                check(False, "%s of %d bytes: json reads it" % (kind, n))
                continue
            want = expect(v)
            count += 1
            modes = [("skip", 0), ("capture", 0), ("max", 64 * KiB), ("max", MiB)]
            # 64-byte buffer: many refills inside the value, at four alignments;
            # 1 MiB buffer: the value starting 2 before .. 2 after the first refill
            layouts = [(64, p) for p in (0, 1, 33, 63)] if n <= MiB + 1 else []
            layouts += [(0, MiB - 1 - k) for k in (-2, -1, 0, 1, 2)] if n <= MiB + 1 else [(0, 0), (0, MiB - 2)]
            for bufsize, pad in layouts:
                doc, v0 = doc_of(v, pad)
                cases.add(doc, v0, n, [(bufsize, m, x) for m, x in modes], want,
                          "%s of %d bytes at %d" % (kind, n, v0))
    verdicts(cases, "B. %d values of 4 KiB-1 .. %s (numbers, strings, arrays, objects) at the "
                    "number, dims and header bounds, across refills of 64-byte and 1 MiB buffers"
             % (count, "1 MiB+1" if ASAN else "64 MiB"))


# ---------------------------------------------------------------------------
# D. nesting at the depth limit; E. documents json rejects

def nesting():
    cases = Cases()
    for d in (MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1):
        for o, c in ((b"[", b"]"), (b'{"a":', b"}")):
            v = o * d + b"0" + c * d
            # the document's own '[' is one more level around V
            doc, v0 = doc_of(v, 5)
            if not json_ok(doc):
                check(False, "%s nested %d deep: json reads it" % (o.decode(), d))
            want = "LIMIT" if d > MAX_DEPTH else "OK"
            assert expect(v) == want
            cases.add(doc, v0, len(v), [(64, "skip", 0), (64, "capture", 0), (0, "max", 64)], want,
                      "%s nested %d deep" % (o.decode(), d))
    verdicts(cases, "D. arrays and objects nested 511, 512, 513 deep (the limit: 512 below the document)")


def rejected():
    cases = Cases()
    n_docs = 0
    for kind, make in KINDS.items():
        for n in (5, 64, 65, MAX_NUMBER + 1, 64 * KiB + 1):
            v = make(n)
            if v is None:
                continue
            for pad in (0, 30, 63):
                doc, v0 = doc_of(v, pad)
                cuts = {1, v0 + 1, v0 + n // 2, v0 + n - 1, v0 + n, v0 + n + 1, len(doc) - 1}
                muts = []
                for cut in sorted(cuts):
                    if 0 < cut < len(doc):
                        muts.append((doc[:cut], "cut at %d" % cut))
                # the structure broken: the comma after V, V's closing bracket
                muts.append((doc.replace(b" ,\n 7", b" ;\n 7"), "';' for ','"))
                if v[-1:] in (b"]", b"}"):
                    muts.append((doc[:v0 + n - 1] + b" " + doc[v0 + n:], "V's last bracket gone"))
                want = "REJECT/LIMIT" if expect(v) == "LIMIT" else "REJECT"
                for bad, how in muts:
                    if json_ok(bad):
                        continue
                    n_docs += 1
                    cases.add(bad, v0, n, [(64, "skip", 0), (64, "capture", 0), (0, "max", 64)], want,
                              "%s of %d bytes, %s" % (kind, n, how))
    verdicts(cases, "E. %d documents json rejects (cut short, a separator or bracket broken): never "
                    "read whole" % n_docs)


# ---------------------------------------------------------------------------
# F/G. the reader's bounds through kvscope report

KERNEL = ('{"ph":"X","cat":"kernel","name":"copy_kernel","pid":0,"tid":7,"ts":1001,"dur":3,'
          '"args":{"device":0,"stream":7,"External id":1,"correlation":9}}')


def report(doc, gz):
    with tempfile.NamedTemporaryFile(suffix=".json.gz" if gz else ".json", delete=False) as f:
        f.write(gzip.compress(doc, 1) if gz else doc)
    try:
        return subprocess.run([KVSCOPE, "report", f.name, "--format", "json", "--quiet"],
                              capture_output=True, text=True)
    finally:
        os.unlink(f.name)


def header_bound():
    bad = []
    runs = 0
    for kind in ("string", "array", "object"):
        for size in (MiB - 1, MiB, MiB + 1):
            head = b'[{"id":0,"name":"NVIDIA H200","junk":'
            tail = b"}]"
            v = KINDS[kind](size - len(head) - len(tail))
            field = head + v + tail
            assert len(field) == size
            doc = b'{"schemaVersion":1,"deviceProperties":' + field + b',"traceEvents":[' + \
                  KERNEL.encode() + b"]}"
            for gz in (False, True):
                r = report(doc, gz)
                runs += 1
                dev = json.loads(r.stdout)["trace"].get("device") if r.returncode == 0 else None
                kept = size <= MiB
                good = r.returncode == 0 and (dev == "NVIDIA H200") == kept and \
                    ("skipped" in r.stderr) == (not kept)
                if not good:
                    bad.append("deviceProperties of %d bytes (%s)%s: exit %d, device %r, %s"
                               % (size, kind, " .gz" if gz else "", r.returncode, dev, r.stderr[-200:]))
    check(not bad, "F. deviceProperties of 1 MiB - 1, 1 MiB, 1 MiB + 1 (a string, an array, an "
                   "object inside; plain and .gz, %d runs): read at or under the bound, said skipped "
                   "over it%s" % (runs, "".join("\n     " + b for b in bad)))


def dims_bound():
    bad = []
    runs = 0
    types = b'["float"]'
    for kind in ("string", "array", "object"):
        for total in (64 * KiB - 1, 64 * KiB, 64 * KiB + 1):
            n = total - len(types) - 1  # kept when dims + types + 1 <= 64 KiB
            if kind == "array":  # tensors of rank 1: a flat list longer than 64 is a rank limit
                v = fill_list(n, b"[", b"]", lambda k, s: b"[1]" if s is None else
                              (b'["' + b"t" * (s - 4) + b'"]' if s >= 4 else None))
            else:
                v = KINDS[kind](n)
            assert v is not None and len(v) == n
            op = ('{"ph":"X","cat":"cpu_op","name":"aten::copy_","pid":1,"tid":1,"ts":1000,"dur":5,'
                  '"args":{"External id":1,"Input Dims":').encode() + v + b',"Input type":' + types + b"}}"
            doc = b'{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],"traceEvents":[' + \
                  op + b"," + KERNEL.encode() + b"]}"
            for gz in (False, True):
                r = report(doc, gz)
                runs += 1
                cut = total > 64 * KiB
                good = r.returncode == 0 and ("1 ops carry Input Dims" in r.stderr) == cut
                if not good:
                    bad.append("Input Dims of %d bytes (%s; with the types %d)%s: exit %d, %s"
                               % (n, kind, total, " .gz" if gz else "", r.returncode, r.stderr[-200:]))
    check(not bad, "G. Input Dims + Input type + 1 of 64 KiB - 1, 64 KiB, 64 KiB + 1 (a string, "
                   "tensors, an object; plain and .gz, %d runs): kept at or under the bound, said cut "
                   "over it%s" % (runs, "".join("\n     " + b for b in bad)))


def main():
    small_values()
    big_values()
    nesting()
    rejected()
    header_bound()
    dims_bound()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
