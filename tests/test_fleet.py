#!/usr/bin/env python3
"""tests/test_fleet.py KVSCOPE — the fleet recipes of docs/fleet.md give the
same view across ranks as `kvscope report` of the traces in one place (the
kvscope.multirank/1 `ranks` object, per_rank[].report aside):

- examples/fleet/kvscope_fleet.py on a Dask LocalCluster of two worker
  processes: a generated 24-rank run (tests/rankgen.py, rank 17 slowed), the
  same with --summaries-only, ranks pinned to workers by a manifest (each
  ran where it was pinned), a missing trace (exit 2, named, no view), an
  unknown worker (exit 2), and HTA's NCCL rank traces when ../shared is there;
- examples/fleet/slurm_fleet.sh: its map step run once per array index
  (SLURM_ARRAY_TASK_ID), then its reduce; a missing rank's report refused;
  `submit` against a stand-in sbatch: one array of the ranks, then the reduce
  after it (afterok).

Dask is dask.distributed (Debian's python3-distributed; .ci/run installs
it): when this interpreter lacks it, /usr/bin/python3 is tried for the
driver; without it anywhere the Dask checks are skipped, saying so (the
Slurm checks still run).

    meson test -C build test_fleet
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvs_test import check, finish  # noqa: E402
from rankgen import write_ranks  # noqa: E402

KVS = os.path.abspath(sys.argv[1])
ROOT = os.environ.get("KVS_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "examples", "fleet", "kvscope_fleet.py")
SLURM = os.path.join(ROOT, "examples", "fleet", "slurm_fleet.sh")
HTA = os.path.join(os.environ.get("KVS_SHARED_DIR", ""), "traces", "hta")
ENV = dict(os.environ, KVSCOPE=KVS)


def dask_python():
    """a Python that imports dask.distributed: this one, else Debian's"""
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import distributed"], capture_output=True).returncode == 0:
            return py
    return None


def ranks_of(doc):
    r = json.loads(doc)["ranks"]
    for row in r["per_rank"]:
        row.pop("report", None)
    return r


def direct(traces, *opts):
    p = subprocess.run([KVS, "report", *traces, "--format", "json", *opts], capture_output=True, text=True)
    check(p.returncode == 0, "kvscope report of %d traces exits 0" % len(traces))
    return ranks_of(p.stdout)


def driver(py, args, timeout=600):
    return subprocess.run([py, DRIVER, *args], capture_output=True, text=True, env=ENV, timeout=timeout)


work = tempfile.mkdtemp(prefix="kvs_test_fleet_")
try:
    traces = write_ranks(work, 24, slow=17)
    want = direct(traces)
    check(want["straggler"]["rank"] == 17, "the generated run's straggler is rank 17")

    # ---------------------------------------------------------------- Dask
    py = dask_python()
    if not py:
        print("skip the Dask driver: dask.distributed is not installed (Debian: apt-get install "
              "python3-distributed; .ci/run installs it)")
    else:
        out = os.path.join(work, "fleet.json")
        keep = os.path.join(work, "kept")
        p = driver(py, ["--local", "2", "--keep", keep, "--format", "json", "-o", out, *traces])
        ok = check(p.returncode == 0, "Dask, 24 ranks on a LocalCluster of 2: exit 0 (%d)" % p.returncode)
        if not ok:
            print(p.stderr[-2000:])
        else:
            got = open(out).read()
            check(ranks_of(got) == want, "Dask: the same view across ranks as the traces (straggler %s)"
                  % json.loads(got)["ranks"]["straggler"])
            reps = sorted(os.listdir(keep))
            check(len(reps) == 24 and all(r.endswith(".report.json.gz") for r in reps)
                  and all(row["report"] and row["report"].startswith(keep)
                          for row in json.loads(got)["ranks"]["per_rank"]),
                  "Dask: each rank's report kept (gzip) and named by the view")
            check("24 ranks mapped on 2 workers" in p.stderr, "Dask: says what ran where (%s)"
                  % p.stderr.strip().splitlines()[-1:])
        p = driver(py, ["--local", "2", "--summaries-only", "--format", "json", *traces])
        check(p.returncode == 0 and ranks_of(p.stdout) == want, "Dask --summaries-only: the same view")

        # pinned: rank i on worker i % 2, and each ran there
        man = os.path.join(work, "ranks.txt")
        with open(man, "w") as f:
            f.write("# rank trace, worker\n")
            for i, t in enumerate(traces[:6]):
                f.write("%s %d\n" % (t, i % 2))
        p = subprocess.run([py, DRIVER, "--local", "2", "--manifest", man, "--format", "json"],
                           capture_output=True, text=True, env=dict(ENV, KVS_FLEET_VERBOSE="1"), timeout=600)
        where = [ln.rsplit(" ", 1)[-1] for ln in p.stderr.splitlines() if " on worker " in ln]
        check(p.returncode == 0 and where == [str(i % 2) for i in range(6)]
              and ranks_of(p.stdout) == direct(traces[:6]),
              "Dask manifest: each rank ran on the worker it was pinned to (%s), the same view" % where)
        with open(man, "w") as f:
            f.write("%s nosuchworker\n" % traces[0])
        p = driver(py, ["--local", "1", "--manifest", man])
        check(p.returncode == 2 and "no worker nosuchworker" in p.stderr, "Dask: an unknown worker: exit 2, said")

        missing = os.path.join(work, "rank99.json")
        p = driver(py, ["--local", "2", *traces[:4], missing, *traces[4:8]])
        check(p.returncode == 2 and p.stdout == "" and missing in p.stderr
              and "1 of 9 ranks could not be reported" in p.stderr,
              "Dask: a missing trace: exit 2, named, no view (%r)" % p.stderr[-300:])

        if os.path.isdir(HTA):
            hta = [os.path.join(HTA, n) for n in ("trace_filter__sampled_rank-0.json.gz",
                                                  "trace_filter__sampled_rank-1.json.gz")]
            p = driver(py, ["--local", "2", "--format", "json", *hta])
            check(p.returncode == 0 and ranks_of(p.stdout) == direct(hta),
                  "Dask: HTA's two NCCL ranks give the same view as the traces")
            p = driver(py, ["--local", "2", "--format", "json", *traces[:3], *hta])
            check(p.returncode == 0 and ranks_of(p.stdout) == direct(traces[:3] + hta),
                  "Dask: generated and HTA ranks together (ranks by file order) as the traces")
        else:
            print("skip the Dask driver on ../shared/traces/hta: absent")

    # ---------------------------------------------------------------- Slurm
    lst = os.path.join(work, "slurm_ranks.txt")
    with open(lst, "w") as f:
        f.write("# one trace a line\n" + "\n".join(traces[:10]) + "\n\n")
    sout = os.path.join(work, "slurm")
    os.mkdir(sout)
    ok = True
    for i in range(10):  # what the array's tasks do, one after another here
        p = subprocess.run([SLURM, "map", lst, sout], env=dict(ENV, SLURM_ARRAY_TASK_ID=str(i)),
                           capture_output=True, text=True)
        ok = ok and p.returncode == 0
    check(ok and len(os.listdir(sout)) == 10, "Slurm map: one report per array task")
    p = subprocess.run([SLURM, "reduce", lst, sout], env=ENV, capture_output=True, text=True)
    check(p.returncode == 0 and ranks_of(open(os.path.join(sout, "fleet.json")).read()) == direct(traces[:10])
          and "ACROSS RANKS" in open(os.path.join(sout, "fleet.txt")).read(),
          "Slurm reduce: fleet.json and fleet.txt give the same view as the traces")
    os.unlink(os.path.join(sout, "rank-0003.report.json"))
    p = subprocess.run([SLURM, "reduce", lst, sout], env=ENV, capture_output=True, text=True)
    check(p.returncode == 2 and "rank 3" in p.stderr and "1 of 10 ranks have no report" in p.stderr,
          "Slurm reduce with a rank's report missing: exit 2, named")
    # submit against a stand-in sbatch that records its arguments
    fake = os.path.join(work, "bin")
    os.mkdir(fake)
    log = os.path.join(work, "sbatch.log")
    sb = os.path.join(fake, "sbatch")
    with open(sb, "w") as f:
        f.write('#!/bin/sh\necho "$*" >> "%s"\necho 4242$(wc -l < "%s")\n' % (log, log))
    os.chmod(sb, os.stat(sb).st_mode | stat.S_IEXEC)
    p = subprocess.run([SLURM, "submit", lst, os.path.join(work, "subm"), "--", "--model", "glm5"],
                       env=dict(ENV, PATH=fake + os.pathsep + os.environ["PATH"], SBATCH_ARGS="--partition=gpu"),
                       capture_output=True, text=True)
    calls = open(log).read().splitlines() if os.path.exists(log) else []
    check(p.returncode == 0 and len(calls) == 2 and "--array=0-9" in calls[0] and " map " in calls[0]
          and "--partition=gpu" in calls[0] and calls[0].endswith("-- --model glm5")
          and "--dependency=afterok:42421" in calls[1] and " reduce " in calls[1],
          "Slurm submit: an array of the 10 ranks, then the reduce after it (%s)" % calls)
finally:
    shutil.rmtree(work, ignore_errors=True)

sys.exit(finish())
