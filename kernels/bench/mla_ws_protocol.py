#!/usr/bin/env python3
"""kernels/bench/mla_ws_protocol.py — a model of the mbarrier protocol of the
warp-specialized MLA decode kernel (kernels/cuda/mla_ws.cuh, KVS_MLA_WGV=32),
run over many random interleavings of its agents, before any GPU run:

    python3 kernels/bench/mla_ws_protocol.py          # prints "ok" or the first violation

Agents: WG0 (S, softmax, P, and the tile copies it issues), the two
consumer warpgroups (O), and the copy engine completing the 64 row copies
of a tile in any order. Barriers as in the kernel: full[3] (count 1 +
expect_tx 64 x 576 bytes), pfull[2] (count 128), cons[2] (count 8, four
warps a consumer warpgroup), waited by parity (phase k done <=> parity
k & 1 differs from the current phase's). Checked: no deadlock for 1..11
tiles; no stage refilled while WG0 or a consumer reads it; no P buffer
rewritten while a consumer reads it; every reader sees the tile it
expects. Also checked: the model catches a broken protocol (WG0 issuing
tile j + 1 before it waits for O of tile j - 2; a P buffer reused without
the wait), so it is not vacuous. It models the protocol as written in
mla_ws.cuh by hand: a change there needs the same change here.
"""
import random
import sys


class Bar:
    def __init__(self, count):
        self.count, self.pending, self.phase, self.tx = count, count, 0, 0

    def arrive(self, tx=0):
        self.tx += tx
        self.pending -= 1
        self._flip()

    def complete_tx(self, n):
        self.tx -= n
        self._flip()

    def _flip(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def done(self, parity):
        return (self.phase & 1) != parity


def run(ntiles, seed, mutant=None):
    rnd = random.Random(seed)
    full = [Bar(1) for _ in range(3)]
    pfull = [Bar(128) for _ in range(2)]
    cons = [Bar(8) for _ in range(2)]
    stage = [None] * 3          # the tile whose bytes a stage holds (None: being written)
    arming = [None] * 3         # the tile a stage's copies are for
    readers = [set() for _ in range(3)]
    pbuf = [None] * 2
    preaders = [set() for _ in range(2)]
    copies = []
    errs = []

    def issue(tile):
        s = tile % 3
        if readers[s]:
            errs.append(f"stage {s} refilled for tile {tile} while {sorted(readers[s])} read it")
        stage[s], arming[s] = None, tile
        full[s].arrive(tx=64 * 576)  # lane 0's arrive.expect_tx, then the copies
        copies.extend((s, tile) for _ in range(64))

    def wg0():
        issue(0)
        if ntiles > 1:
            issue(1)
        yield
        for j in range(ntiles):
            if mutant == "early-issue" and j >= 1 and j + 1 < ntiles:
                issue(j + 1)
            if j >= 2 and mutant != "no-cons-wait":
                while not cons[j & 1].done(((j - 2) >> 1) & 1):
                    yield
            if mutant != "early-issue" and j >= 1 and j + 1 < ntiles:
                issue(j + 1)
            while not full[j % 3].done((j // 3) & 1):
                yield
            if stage[j % 3] != j:
                errs.append(f"WG0 S of tile {j}: the stage holds {stage[j % 3]}")
            readers[j % 3].add("wg0")
            for _ in range(rnd.randint(1, 3)):
                yield
            readers[j % 3].discard("wg0")
            b = j & 1
            if preaders[b]:
                errs.append(f"P buffer {b} written for tile {j} while {sorted(preaders[b])} read it")
            pbuf[b] = j
            for _ in range(128):
                pfull[b].arrive()
            yield

    def consumer(c):
        for j in range(ntiles):
            while not pfull[j & 1].done((j >> 1) & 1):
                yield
            while not full[j % 3].done((j // 3) & 1):
                yield
            if pbuf[j & 1] != j:
                errs.append(f"consumer {c}, O of tile {j}: the P buffer holds {pbuf[j & 1]}")
            if stage[j % 3] != j:
                errs.append(f"consumer {c}, O of tile {j}: the stage holds {stage[j % 3]}")
            readers[j % 3].add(c)
            preaders[j & 1].add(c)
            for _ in range(rnd.randint(1, 4)):
                yield
            readers[j % 3].discard(c)
            preaders[j & 1].discard(c)
            for _ in range(4):
                cons[j & 1].arrive()
            yield

    def engine():
        while True:
            if copies and rnd.random() < 0.5:
                s, tile = copies.pop(rnd.randrange(len(copies)))
                if arming[s] != tile:
                    errs.append(f"a copy of tile {tile} landed in stage {s}, re-armed for {arming[s]}")
                full[s].complete_tx(576)
                if not any(x[0] == s for x in copies):
                    stage[s] = tile
            yield

    agents = {"wg0": wg0(), "c1": consumer("c1"), "c2": consumer("c2"), "engine": engine()}
    alive = {"wg0", "c1", "c2"}
    steps = 0
    while alive and steps < 100000 and not errs:
        a = rnd.choice(sorted(alive) + ["engine"])
        try:
            next(agents[a])
        except StopIteration:
            alive.discard(a)
        steps += 1
    if alive and not errs:
        errs.append(f"no progress: {sorted(alive)} still waiting after {steps} steps")
    return errs


def first_violation(mutant=None, seeds=200):
    for nt in range(1, 12):
        for seed in range(seeds):
            e = run(nt, seed, mutant)
            if e:
                return f"{nt} tiles, seed {seed}: {e[0]}"
    return None


def main():
    bad = first_violation()
    if bad:
        print("FAIL: " + bad)
        return 1
    for m in ("early-issue", "no-cons-wait"):
        if not first_violation(m, seeds=50):
            print(f"FAIL: the model did not catch the broken protocol '{m}'")
            return 1
    print("ok: 11 tile counts x 200 interleavings, no violation; both broken protocols caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
