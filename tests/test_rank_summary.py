#!/usr/bin/env python3
"""tests/test_rank_summary.py KVSCOPE — the map/reduce of a fleet: each rank's
`kvscope report TRACE --format json` (its kvscope.rank/1 summary inside)
given to `kvscope report S0.json S1.json ...` gives the same view across
ranks as reading the traces: the kvscope.multirank/1 `ranks` object equal
key for key and number for number (straggler, arrival skew, exposed
communication, per-rank findings, notes; only per_rank[].report, the
report a rank was read from, differs), and the text's ACROSS RANKS, RANKS
and FINDINGS BY RANK sections byte for byte; also with traces and reports
mixed and with gzipped reports. Sets: generated runs of 8 and 256 ranks
(tests/rankgen.py; one rank slowed, and one with a rank's clock 50 ms off),
and, when ../shared is present, HTA's rank traces (NCCL ranks, ranks named
by file order), the MLA pair with --model glm5 (the latent-cast note) and
serving traces. The check fails on a changed summary (shown below), and
damaged or foreign summaries are refused with a message naming the file.

    meson test -C build test_rank_summary
"""
import copy
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvs_test import check, finish  # noqa: E402
from rankgen import write_ranks  # noqa: E402

KVS = sys.argv[1]
SHARED = os.path.join(os.environ.get("KVS_SHARED_DIR", ""), "traces")
WORK = tempfile.mkdtemp(prefix="kvs_rank_summary_")


def kvs(*args):
    p = subprocess.run([KVS, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def view(text):
    """the text report's view across ranks: ACROSS RANKS up to the first rank's section"""
    a = text.find("\nACROSS RANKS")
    b = text.find("\n==== rank")
    return text[a:b] if a >= 0 else None


def ranks_without_report(doc):
    r = copy.deepcopy(doc["ranks"])
    for row in r["per_rank"]:
        row.pop("report", None)
    return r


def map_step(traces, folder, opts, gz=False):
    """each trace's report, as a fleet's workers would write them"""
    out = []
    for i, t in enumerate(traces):
        p = os.path.join(folder, "s%03d.json" % i)
        rc, _, err = kvs("report", t, "--format", "json", "-o", p, "--quiet", *opts)
        if rc != 0:
            check(False, "map: report %s exits 0 (%d): %s" % (t, rc, err[-300:]))
            return None
        if gz:
            with open(p, "rb") as f, gzip.open(p + ".gz", "wb") as g:
                g.write(f.read())
            os.unlink(p)
            p += ".gz"
        out.append(p)
    return out


def same_view(what, traces, opts=(), gz=False, mixed=True):
    if True:  # the summaries stay (in WORK) for the checks that follow
        tmp = tempfile.mkdtemp(dir=WORK)
        sums = map_step(traces, tmp, list(opts), gz)
        if sums is None:
            return None
        rc, direct, err = kvs("report", *traces, "--format", "json", *opts)
        rc2, reduced, err2 = kvs("report", *sums, "--format", "json", *opts)
        if not check(rc == 0 and rc2 == 0, "%s: direct and reduce exit 0 (%d, %d)" % (what, rc, rc2)):
            print(err[-500:], err2[-500:])
            return None
        d, r = json.loads(direct), json.loads(reduced)
        check(ranks_without_report(d) == ranks_without_report(r),
              "%s: the reduce of %d summaries gives the same view (ranks object) as the traces"
              % (what, len(traces)))
        check(all(x["report"] == s for x, s in zip(sorted(r["ranks"]["per_rank"], key=lambda x: x["path"]),
                                                    [s for _, s in sorted(zip(traces, sums))]))
              and all(x["report"] is None for x in d["ranks"]["per_rank"])
              and all(x is None for x in r["reports"]),
              "%s: per_rank[].report names each summary (null from traces); reports[] null" % what)
        _, tdirect, _ = kvs("report", *traces, *opts)
        _, treduced, _ = kvs("report", *sums, *opts)
        check(view(tdirect) is not None and view(tdirect) == view(treduced),
              "%s: text ACROSS RANKS / RANKS / FINDINGS BY RANK byte for byte" % what)
        if mixed and len(traces) > 2:
            half = [t if i % 2 else s for i, (t, s) in enumerate(zip(traces, sums))]
            _, mixed_doc, _ = kvs("report", *half, "--format", "json", *opts)
            check(ranks_without_report(json.loads(mixed_doc)) == ranks_without_report(d),
                  "%s: traces and summaries mixed: the same view" % what)
        return d, r, sums


with tempfile.TemporaryDirectory() as gen:
    eight = write_ranks(os.path.join(gen), 8, slow=5)
    res = same_view("8 generated ranks, rank 5 slow", eight)
    if res:
        d, r, sums = res
        st = r["ranks"]["straggler"]
        check(st and st["rank"] == 5 and st["stands_out"], "the reduce names rank 5 the straggler (%s)" % st)
        # the comparison is sensitive: rank 2's collectives 1 ms later in its summary (every
        # step: the figures are medians over steps)
        doc = json.load(open(sums[2]))
        for it in doc["rank"]["items"]:
            it["collectives"][0][1] += 1000.0
        bad = os.path.join(gen, "changed.json")
        json.dump(doc, open(bad, "w"))
        _, out, _ = kvs("report", *(sums[:2] + [bad] + sums[3:]), "--format", "json")
        check(ranks_without_report(json.loads(out)) != ranks_without_report(d),
              "a summary with its collectives 1 ms later gives a different view (the check can fail)")
        # damaged and foreign summaries: refused, named, exit 2
        cases = []
        old = copy.deepcopy(json.load(open(sums[0])))
        del old["rank"]
        cases.append(("a report without kvscope.rank/1 (an older kvscope)", old, "without a kvscope.rank/1 summary"))
        other = copy.deepcopy(json.load(open(sums[0])))
        other["rank"]["schema"] = "kvscope.rank/9"
        cases.append(("a kvscope.rank/9 summary", other, "kvscope.rank/9"))
        wrong = copy.deepcopy(json.load(open(sums[0])))
        wrong["rank"]["items"][1]["start_us"] = "soon"
        cases.append(("a step start that is a string", wrong, "start_us is not a number"))
        short = copy.deepcopy(json.load(open(sums[0])))
        short["rank"]["items"].pop()
        cases.append(("a summary missing a step", short, "not one entry per step"))
        for what, obj, msg in cases:
            p = os.path.join(gen, "case.json")
            json.dump(obj, open(p, "w"))
            rc, out, err = kvs("report", sums[1], p)
            check(rc == 2 and out == "" and msg in err and p in err, "%s: exit 2, named: %r" % (what, err[-200:]))
        cut = os.path.join(gen, "cut.json")
        open(cut, "w").write(open(sums[0]).read()[:5000])
        rc, out, err = kvs("report", cut, sums[1])
        check(rc == 2 and "not valid JSON" in err and cut in err, "a cut summary: exit 2, named (%r)" % err[-200:])
        rc, out, err = kvs("compare", sums[0], sums[1])
        check(rc == 2 and "not a trace" in err, "compare of two summaries: a report is not a trace (%r)" % err[-200:])
        rc, out, err = kvs("report", sums[3])
        check(rc == 0 and "ACROSS RANKS" in out and "1 of 8 ranks given" in out,
              "one summary alone: the view of that rank (exit %d)" % rc)
    same_view("8 generated ranks, gzipped summaries", eight, gz=True, mixed=False)
    off = os.path.join(gen, "off")
    os.mkdir(off)
    res = same_view("8 ranks, rank 3's clock 50 ms off", write_ranks(off, 8, slow=5, clock_rank=3, clock_ms=50.0))
    if res:
        check(res[1]["ranks"]["straggler"] is None, "clock off: no straggler from the summaries either")
    big = os.path.join(gen, "big")
    os.mkdir(big)
    res = same_view("256 generated ranks, rank 200 slow", write_ranks(big, 256, steps=4, slow=200))
    if res:
        st = res[1]["ranks"]["straggler"]
        check(st and st["rank"] == 200, "256 ranks: the reduce names rank 200 the straggler")

if os.path.isdir(os.path.join(SHARED, "hta")):
    h = lambda n: os.path.join(SHARED, "hta", n)  # noqa: E731
    same_view("HTA's trace_filter ranks 0 and 1", [h("trace_filter__sampled_rank-0.json.gz"),
                                                   h("trace_filter__sampled_rank-1.json.gz")])
    same_view("HTA's NCCL rank with ranks named by file order",
              [h("nccl_parser_config__nccl_data.json.gz"), h("rank_non_gpu__rank_non_gpu.json.gz"),
               h("rank_unavailable__rank_not_found.json.gz"), h("df_index_resolver__df_index_resolver.json.gz"),
               h("trace_diff__test__test.json.gz")])
    res = same_view("the MLA pair as two ranks, --model glm5",
                    [os.path.join(SHARED, "mla61_cap131072_unfixed.pt.trace.json.gz"),
                     os.path.join(SHARED, "mla61_cap131072_fixed.pt.trace.json.gz")], ("--model", "glm5"))
    if res:
        check(any("kv_full_buffer_cast" in n for n in res[1]["ranks"]["notes"]),
              "MLA: the full-buffer cast's rank note from the summaries")
    s = lambda n: os.path.join(SHARED, "serving", n)  # noqa: E731
    same_view("serving traces (vLLM, SGLang) as ranks",
              [s("tracelens__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz"),
               s("tracelens__inference__vllm_decode_full__graph_execution.json.gz"),
               s("tracelens__inference__vllm_prefilldecode_piecewise__graph_execution.json.gz")])
else:
    print("skip ../shared/traces: absent (the generated ranks were checked)")
shutil.rmtree(WORK, ignore_errors=True)
sys.exit(finish())
