#!/usr/bin/env python3
"""Verdict numbers for claim 88 of docs/RESULTS.md (seed 004 §III.C.2.c, Eq. 10: "a suitable
value for alpha has proven to be 0.7").

Usage:
    python3 scripts/claims_seed004_alpha.py [DIR]   # DIR defaults to results/claims/seed004-alpha

DIR is the output of examples/claims/seed004-alpha.toml (its header has the command): MTL alone
on seed004-chain's 1-8 hop chain, `[flows.mtl] alpha` in {0.1, 0.3, 0.5, 0.7, 0.9}, seeds 1-20,
the same seeds at every alpha. Per hop count and alpha: the mean goodput of the transfer
(flows.csv goodput_bps, Mbit/s) and the geometric mean over seeds of the paired ratio
goodput(alpha) / goodput(0.7) with a Student-t 95% interval on the log ratios; the alpha with
the highest mean, and whether 0.7's goodput is within 2% of it (the tolerance stated in
RESULTS.md for "as good as the best").

Standard library only.
"""
import csv
import math
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from claims_added import geo_ci  # noqa: E402

DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join("results", "claims", "seed004-alpha")
PAPER = 0.7
TOLERANCE = 0.02


def main():
    path = os.path.join(DIR, "flows.csv")
    if not os.path.exists(path):
        print(f"*{path} is missing: run examples/claims/seed004-alpha.toml.*")
        return
    goodput = defaultdict(dict)  # (hops, alpha) -> {seed: Mbit/s}
    retx = defaultdict(list)
    incomplete = 0
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            key = (int(r["hops"]), float(r["flows[*].mtl.alpha"]))
            goodput[key][int(r["seed"])] = float(r["goodput_bps"]) / 1e6
            retx[key].append(int(r["retransmissions"]))
            incomplete += r["completed"] != "true"
    hops = sorted({h for h, _ in goodput})
    alphas = sorted({a for _, a in goodput})
    print("## Claim 88: MTL's alpha (seed 004 Eq. 10) on seed004-chain, 20 paired seeds\n")
    print(f"Incomplete transfers: {incomplete}.\n")
    print("| hops | " + " | ".join(f"alpha {a}" for a in alphas) + " | best | 0.7 within 2% of best |")
    print("|---|" + "---|" * (len(alphas) + 2))
    for h in hops:
        base = goodput[(h, PAPER)]
        cells, means = [], {}
        for a in alphas:
            g = goodput[(h, a)]
            means[a] = statistics.fmean(g.values())
            if a == PAPER:
                cells.append(f"**{means[a]:.2f} Mbit/s**")
                continue
            m, lo, hi = geo_ci([g[s] / base[s] for s in sorted(base) if s in g])
            cells.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]")
        best = max(means, key=means.get)
        ok = means[PAPER] >= (1 - TOLERANCE) * means[best]
        print(f"| {h} | " + " | ".join(cells) + f" | {best} ({means[best]:.2f}) | {'yes' if ok else 'no'} |")
    print("\nCells other than alpha 0.7: goodput / goodput at 0.7, geometric mean over the 20 seeds "
          "with a t 95% interval. Retransmissions per run (mean) at alpha 0.1 / 0.7 / 0.9 by hop count: "
          + "; ".join(f"{h}: {statistics.fmean(retx[(h, 0.1)]):.1f} / {statistics.fmean(retx[(h, 0.7)]):.1f} / "
                      f"{statistics.fmean(retx[(h, 0.9)]):.1f}" for h in hops))


if __name__ == "__main__":
    main()
