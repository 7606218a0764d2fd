#!/usr/bin/env python3
"""examples/fleet/kvscope_fleet.py — kvscope across a fleet on Dask
(dask.distributed): `kvscope report` runs once per rank on the cluster's
workers (each rank's task on the worker next to its trace, when told where),
only the ranks' JSON reports travel back (gzip'ed), and the reduce —
`kvscope report` of those reports — gives the same view across ranks as
reading every trace in one place (docs/fleet.md).

  python3 examples/fleet/kvscope_fleet.py --local 8 /data/run/rank*.json.gz
  python3 examples/fleet/kvscope_fleet.py --scheduler tcp://head:8786 --manifest ranks.txt \\
      --keep reports/ -o fleet.html -- --model glm5

Inputs: traces on the command line (paths as the workers see them), or
--manifest FILE: one rank a line, `PATH [WORKER]` — WORKER a Dask worker's
address, host name or name; that rank's task runs only there (the trace is
on its disk). Options after `--` go to every `kvscope report` (map and
reduce: --model, --kv-capacity, --step-regex, ...). Needs Debian's
python3-distributed (or `pip install distributed`) and kvscope on every
worker (--kvscope, or $KVSCOPE, or `kvscope` on PATH).

Exit codes: 0 the view written; 1 the work failed (the cluster, or writing);
2 bad usage, or a rank whose trace could not be reported (each named, then
how many; no view written), as kvscope report itself.
"""
import argparse
import gzip
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time

USAGE_EXIT, FAIL_EXIT = 2, 1


def map_rank(kvscope, trace, opts, summaries_only):
    """On a worker: this rank's kvscope report (JSON, gzip'ed bytes), or its failure.
    Returns (ok, worker name, payload bytes or stderr text, exit code)."""
    import json as _json
    import socket
    try:
        from distributed import get_worker
        where = str(get_worker().name)
    except (ImportError, ValueError):
        where = socket.gethostname()
    p = subprocess.run([kvscope, "report", trace, "--format", "json", "--quiet", *opts],
                       capture_output=True)
    if p.returncode != 0:
        return False, where, p.stderr.decode(errors="replace"), p.returncode
    body = p.stdout
    if summaries_only:  # the reduce reads only these two keys
        doc = _json.loads(body)
        body = _json.dumps({"schema": doc["schema"], "rank": doc["rank"]}).encode()
    return True, where, gzip.compress(body, 6), 0


def read_manifest(path):
    ranks = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) > 2:
                sys.exit("kvscope_fleet: %s:%d: want `PATH [WORKER]`, not %r" % (path, n, line))
            ranks.append((parts[0], parts[1] if len(parts) == 2 else None))
    return ranks


def worker_table(client):
    """{a worker's name, address or host: its addresses} of the workers now up"""
    table = {}
    for addr, w in client.scheduler_info().get("workers", {}).items():
        for k in (str(w.get("name")), addr, w.get("host")):
            if k:
                table.setdefault(k, []).append(addr)
    return table


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="kvscope_fleet.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Options after -- go to every kvscope report (map and reduce).")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDR", help="a running Dask scheduler (tcp://host:8786)")
    where.add_argument("--local", metavar="N", type=int,
                       help="start a LocalCluster of N worker processes here (default: 2)")
    ap.add_argument("--manifest", metavar="FILE", help="one rank a line: PATH [WORKER]")
    ap.add_argument("--kvscope", default=os.environ.get("KVSCOPE", "kvscope"),
                    help="kvscope on the workers and here (default: $KVSCOPE or kvscope)")
    ap.add_argument("--keep", metavar="DIR",
                    help="write the ranks' reports there (default: a new temporary folder, named at the end; "
                         "the view names each rank's report)")
    ap.add_argument("--summaries-only", action="store_true",
                    help="ship only each report's kvscope.rank/1 summary (smallest; the ranks' full "
                         "reports are then not kept)")
    ap.add_argument("--format", default=None, help="text, md, json or html (default: from -o, else text)")
    ap.add_argument("-o", "--output", help="the view's file (default: stdout)")
    ap.add_argument("--retries", type=int, default=1, help="a task lost with its worker is retried (default 1)")
    ap.add_argument("traces", nargs="*", help="rank traces, as the workers see them")
    if "--" in argv:
        k = argv.index("--")
        args, rest = ap.parse_args(argv[:k]), argv[k + 1:]
    else:
        args, rest = ap.parse_args(argv), []
    if bool(args.manifest) == bool(args.traces):
        ap.error("give rank traces or --manifest FILE (one of them)")
    if args.local is not None and args.local < 1:
        ap.error("--local wants at least 1 worker")
    return args, rest


def main(argv):
    args, opts = parse(argv)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("kvscope_fleet: dask.distributed is not installed (Debian: apt-get install "
              "python3-distributed; else pip install distributed)", file=sys.stderr)
        return FAIL_EXIT
    ranks = read_manifest(args.manifest) if args.manifest else [(t, None) for t in args.traces]
    cluster, scratch = None, None
    t0 = time.time()
    try:
        if args.scheduler:
            client = Client(args.scheduler)
        else:
            scratch = tempfile.mkdtemp(prefix="kvscope_fleet_dask_")
            cluster = LocalCluster(n_workers=args.local or 2, threads_per_worker=1, processes=True,
                                   dashboard_address=None, local_directory=scratch,
                                   silence_logs=logging.ERROR)
            client = Client(cluster)
    except OSError as e:
        print("kvscope_fleet: no Dask cluster: %s" % e, file=sys.stderr)
        return FAIL_EXIT
    keep = args.keep or tempfile.mkdtemp(prefix="kvscope_fleet_")
    os.makedirs(keep, exist_ok=True)
    try:
        # the map: one task a rank, pinned to its worker when the manifest says where
        if any(w for _, w in ranks):  # pinned ranks: every worker named must be up
            client.wait_for_workers(1)
            table = worker_table(client)
            unknown = sorted({w for _, w in ranks if w and w not in table})
            if unknown:
                print("kvscope_fleet: no worker %s in the cluster (its workers: %s)"
                      % (", ".join(unknown), ", ".join(sorted(table))), file=sys.stderr)
                return USAGE_EXIT
        futures = []
        for i, (path, w) in enumerate(ranks):
            pin = {"workers": table[w], "allow_other_workers": False} if w else {}
            futures.append(client.submit(map_rank, args.kvscope, path, opts, args.summaries_only,
                                         key="kvscope-report-%d-%s" % (i, os.path.basename(path)),
                                         retries=args.retries, pure=False, **pin))
        reports, failed = [None] * len(ranks), []
        done = 0
        for i, fut in enumerate(futures):
            try:
                ok, where, payload, rc = fut.result()
            except Exception as e:  # the task itself failed (a worker lost past its retries)
                ok, where, payload, rc = False, "?", "%s: %s" % (type(e).__name__, e), FAIL_EXIT
            done += 1
            if not ok:
                failed.append((i, ranks[i][0], rc))
                sys.stderr.write("kvscope_fleet: %s (on worker %s): kvscope report exited %d:\n%s"
                                 % (ranks[i][0], where, rc, payload if payload.endswith("\n") else payload + "\n"))
                continue
            out = os.path.join(keep, "rank-%04d.report.json.gz" % i)
            with open(out, "wb") as f:
                f.write(payload)
            reports[i] = out
            if os.environ.get("KVS_FLEET_VERBOSE"):
                print("kvscope_fleet: %s -> %s on worker %s" % (ranks[i][0], out, where), file=sys.stderr)
        map_s = time.time() - t0
        if failed:
            worst = FAIL_EXIT if any(rc not in (0, USAGE_EXIT) for _, _, rc in failed) else USAGE_EXIT
            print("kvscope_fleet: %d of %d ranks could not be reported (the first: %s): no view written"
                  % (len(failed), len(ranks), failed[0][1]), file=sys.stderr)
            return worst
        # the reduce, here: the ranks' reports give the view across ranks
        cmd = [args.kvscope, "report", *reports, *opts]
        if args.format:
            cmd += ["--format", args.format]
        if args.output:
            cmd += ["-o", args.output]
        rc = subprocess.run(cmd).returncode
        print("kvscope_fleet: %d ranks mapped on %d workers in %.1f s, reduced in %.1f s; reports in %s"
              % (len(ranks), len(client.scheduler_info().get("workers", {})), map_s,
                 time.time() - t0 - map_s, keep), file=sys.stderr)
        return rc
    finally:
        client.close()
        if cluster:
            cluster.close()
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
