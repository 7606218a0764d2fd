"""tests/kvs_test.py — what kvscope's Python tests share (tests/kvs_test.h is
the C side): check() prints one "ok"/"FAIL" line a check and keeps the
failures, finish() prints the count and gives the exit code, union() is
the measure of a set of intervals.

    from kvs_test import check, failures, finish, union
"""

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def finish():
    """Print "N failed"; the script's exit code (0 when nothing failed)."""
    print("%d failed" % len(failures))
    return 1 if failures else 0


def union(iv):
    """measure of the union of [a, b) intervals"""
    total, cur = 0.0, None
    for a, b in sorted(iv):
        if cur and a <= cur[1]:
            cur[1] = max(cur[1], b)
            continue
        if cur:
            total += cur[1] - cur[0]
        cur = [a, b]
    return total + (cur[1] - cur[0] if cur else 0.0)
