#!/usr/bin/env python3
"""Verdict numbers for claims 69-71, 73, 76 and 77 of docs/RESULTS.md ("Claims added for issue 27").

Usage:
    python3 scripts/claims_added.py [ROOT]        # ROOT defaults to results

It reads the outputs of these runs (each command is in the experiment file's header) and
prints markdown; a missing directory is reported and its claim skipped:

* ROOT/claims/testbed-random-transfer-32  (examples/claims/testbed-random-transfer-32.toml)
  Claim 69, Tahoe's log utility "is zero for 32 flows" (seed 001 §5.5.1). Per run,
  sum over flows of log10(goodput in kbit/s), a starved flow (< 1 kbit/s, as metrics.rs)
  counted two ways: as 1 kbit/s (adds 0: meshbed's metric, docs/PROTOCOLS.md) and as one
  byte per second (adds log10(0.008) = -2.097: the other reading of the thesis' "we assign
  their goodput to one byte"). Mean over runs with a Student-t 95% interval, and the
  number of runs whose sum is <= 0.
* ROOT/claims/seed002-default-eta, ROOT/claims/seed002-default-epoch
  (examples/claims/seed002-default-*.toml)
  Claim 70, the ATP paper's defaults "optimal" (seed 001 §2 quoting seed 002 §5.1).
  Aggregate goodput per run (sum over the run's flows); for each swept value and flow
  count the geometric mean over seeds of value / paper's value (eta 3, E 1 s), t interval
  on the log ratios. (summary.txt prints the same ratios; they are recomputed here from
  flows.csv as a check.)
* ROOT/verdicts/many-flows  (examples/verdicts/seed002-many-flows-paired.toml)
  Claim 71, "the average per-flow rate is about 100Kbps even when there are only 5
  connections ... about 25 packets per second" and the 40 ms / 125 ms timer granularity
  for 10 / 25 flows (seed 002 §3.2, §4.2.2): per run, the mean over flows of goodput;
  mean over runs with a t interval, in kbit/s and in 512-byte packets per second.
  Claim 73, ATP's reverse-path overhead "considerably smaller" than TCP's (seed 002
  §4.2.2): per run, feedback packets (ATP's epoch feedback, TCP's ACKs) per 512 bytes
  delivered, summed over flows; paired ratio ATP / NewReno over the same seeds.
* ROOT/verdicts/grid200  (examples/verdicts/seed004-grid-paired.toml)
  Claim 76, "especially for high goodput values does the performance gap between MTL and
  TCP/IP increase" (seed 004 §IV.C, Fig. 7): per pair the ratio MTL / NewReno; Spearman's
  rank correlation of the ratio with NewReno's goodput (bootstrap 95% interval over pairs,
  10 000 resamples, random seed 1); the ratio of the two CDFs' quantiles (MTL's q-quantile
  / NewReno's) at q = 0.1, 0.25, 0.5, 0.75, 0.9, and the ratio's geometric mean within the
  lower and upper halves of NewReno's goodput.
* ROOT/claims/seed004-parallel-traced  (examples/claims/seed004-parallel-traced.toml)
  Claim 77, over 100-150 s "the TCP/IP flows fluctuate over time, resulting in periods
  where flow 1 acquires all of the available bandwidth" while MTL's flows share it
  equally (seed 004 §IV.B, Figs. 5-6). Per run, from the per-packet delivered_bytes
  samples of traces.csv: the two flows' bytes in each 1 s window of [100, 150] s; a
  window is "taken" when one flow carries more than 90% of the pair's bytes; per run the
  share of taken windows, the share taken by flow 1 (the flow 0 -> 5, flow index 0), and
  the standard deviation over windows of flow 1's share. Means over runs with t
  intervals; paired differences TCP - MTL over the same seeds.

Standard library only.
"""
import csv
import math
import os
import random
import statistics
import sys
from collections import defaultdict

ROOT = sys.argv[1] if len(sys.argv) > 1 else "results"

# Student-t 0.975 quantiles: the same table as the other verdict scripts.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_claims import tq  # noqa: E402


def mean_ci(xs):
    n = len(xs)
    m = statistics.mean(xs)
    if n < 2:
        return m, m, m
    h = tq(n - 1) * statistics.stdev(xs) / math.sqrt(n)
    return m, m - h, m + h


def geo_ci(ratios):
    logs = [math.log(r) for r in ratios]
    m, lo, hi = mean_ci(logs)
    return math.exp(m), math.exp(lo), math.exp(hi)


def read_flows(path):
    f = os.path.join(path, "flows.csv")
    if not os.path.exists(f):
        print(f"*{f} is missing: run the experiment named in this script's docstring.*\n")
        return None
    with open(f, newline="") as fh:
        return list(csv.DictReader(fh))


def runs(rows, keys):
    """Flows grouped per run: {(values of keys..., seed): [row, ...]}."""
    out = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys) + (int(r["seed"]),)].append(r)
    return out


def kbps(r):
    return float(r["goodput_bps"]) / 1e3


STARVED_KBPS = 1.0  # metrics.rs: a flow under 1 kbit/s is starved


def claim69(root):
    rows = read_flows(os.path.join(root, "claims", "testbed-random-transfer-32"))
    if rows is None:
        return
    print("## Claim 69: log utility at 32 flows, retries off (seed 001 §5.5.1)\n")
    print("| protocol | runs | starved share | utility, starved = 1 kbit/s (adds 0) | "
          "utility, starved = 1 byte/s (adds −2.10) | runs ≤ 0 (either reading) |")
    print("|---|---|---|---|---|---|")
    byte_log = math.log10(8 / 1e3)
    for proto in sorted({r["protocol"] for r in rows}):
        per = runs([r for r in rows if r["protocol"] == proto], [])
        u_unit, u_byte, starved, flows = [], [], 0, 0
        for fl in per.values():
            g = [kbps(r) for r in fl]
            starved += sum(1 for x in g if x < STARVED_KBPS)
            flows += len(g)
            u_unit.append(sum(math.log10(x) for x in g if x >= STARVED_KBPS))
            u_byte.append(sum(math.log10(x) if x >= STARVED_KBPS else byte_log for x in g))
        a, b = mean_ci(u_unit), mean_ci(u_byte)
        le0 = (sum(1 for x in u_unit if x <= 0), sum(1 for x in u_byte if x <= 0))
        print(f"| {proto} | {len(per)} | {starved / flows:.0%} | {a[0]:.1f} [{a[1]:.1f}, {a[2]:.1f}] | "
              f"{b[0]:.1f} [{b[1]:.1f}, {b[2]:.1f}] | {le0[0]} / {le0[1]} |")
    print()


def claim70(root):
    for name, key, ref in [("seed002-default-eta", "random_flows.flow.atp.eta", 3.0),
                           ("seed002-default-epoch", "random_flows.flow.atp.epoch_s", 1.0)]:
        rows = read_flows(os.path.join(root, "claims", name))
        if rows is None:
            continue
        print(f"## Claim 70: {key} against the paper's {ref:g} (default ATP, DSR, 20 m/s)\n")
        print("| flows | value | aggregate kbit/s (mean) | ratio to the paper's value [95% CI] | pairs |")
        print("|---|---|---|---|---|")
        agg = defaultdict(float)
        for r in rows:
            agg[(int(r["random_flows.count"]), float(r[key]), int(r["seed"]))] += kbps(r)
        counts = sorted({k[0] for k in agg})
        values = sorted({k[1] for k in agg})
        for n in counts:
            for v in values:
                seeds = sorted(s for (c, x, s) in agg if c == n and x == v)
                mean = statistics.mean(agg[(n, v, s)] for s in seeds)
                if v == ref:
                    print(f"| {n} | {v:g} (paper) | {mean:.0f} | — | {len(seeds)} |")
                    continue
                ratios = [agg[(n, v, s)] / agg[(n, ref, s)] for s in seeds
                          if agg[(n, v, s)] > 0 and agg[(n, ref, s)] > 0]
                g = geo_ci(ratios)
                print(f"| {n} | {v:g} | {mean:.0f} | {g[0]:.3f} [{g[1]:.3f}, {g[2]:.3f}] | {len(ratios)} |")
        print()


def claim71_73(root):
    rows = read_flows(os.path.join(root, "verdicts", "many-flows"))
    if rows is None:
        return
    speed, count = "mobility.max_speed_mps", "random_flows.count"
    per = runs(rows, ["protocol", speed, count])
    print("## Claim 71: per-flow rate (seed 002 §3.2, §4.2.2), DSR, mean over runs of the mean per-flow goodput\n")
    print("| protocol | speed m/s | flows | kbit/s [95% CI] | 512-byte packets/s |")
    print("|---|---|---|---|---|")
    keys = sorted({k[:3] for k in per}, key=lambda k: (k[0], float(k[1]), int(k[2])))
    for k in keys:
        xs = [statistics.mean(kbps(r) for r in fl) for kk, fl in per.items() if kk[:3] == k]
        m = mean_ci(xs)
        print(f"| {k[0]} | {float(k[1]):g} | {k[2]} | {m[0]:.1f} [{m[1]:.1f}, {m[2]:.1f}] | "
              f"{m[0] * 1e3 / (512 * 8):.1f} |")
    print()
    print("## Claim 73: reverse-path packets per 512 bytes delivered (seed 002 §4.2.2), paired over seeds\n")
    print("| speed m/s | flows | ATP | NewReno | ATP / NewReno [95% CI] | pairs |")
    print("|---|---|---|---|---|---|")

    def fb_per_pkt(fl):
        delivered = sum(float(r["bytes_delivered"]) for r in fl) / 512
        return sum(float(r["feedback_packets"]) for r in fl) / delivered if delivered > 0 else None

    for sp, n in sorted({(k[1], k[2]) for k in per}, key=lambda k: (float(k[0]), int(k[1]))):
        a = {k[3]: fb_per_pkt(fl) for k, fl in per.items() if k[:3] == ("atp-default", sp, n)}
        b = {k[3]: fb_per_pkt(fl) for k, fl in per.items() if k[:3] == ("tcp-newreno", sp, n)}
        pairs = [(a[s], b[s]) for s in a if s in b and a[s] and b[s]]
        g = geo_ci([x / y for x, y in pairs])
        print(f"| {float(sp):g} | {n} | {statistics.mean(x for x, _ in pairs):.3f} | "
              f"{statistics.mean(y for _, y in pairs):.3f} | {g[0]:.3f} [{g[1]:.3f}, {g[2]:.3f}] | {len(pairs)} |")
    print()


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(xs, ys):
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return num / den if den else 0.0


def quantile(xs, q):
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def claim76(root):
    rows = read_flows(os.path.join(root, "verdicts", "grid200"))
    if rows is None:
        return
    good = defaultdict(dict)
    for r in rows:
        good[int(r["seed"])][r["protocol"]] = kbps(r)
    seeds = [s for s in sorted(good) if good[s].get("mtl", 0) > 0 and good[s].get("tcp-newreno", 0) > 0]
    mtl = [good[s]["mtl"] for s in seeds]
    tcp = [good[s]["tcp-newreno"] for s in seeds]
    ratio = [a / b for a, b in zip(mtl, tcp)]
    rho = spearman(tcp, ratio)
    rng = random.Random(1)
    boot = []
    for _ in range(10000):
        idx = [rng.randrange(len(seeds)) for _ in seeds]
        boot.append(spearman([tcp[i] for i in idx], [ratio[i] for i in idx]))
    boot.sort()
    print(f"## Claim 76: MTL / NewReno along the grid's goodput (seed 004 §IV.C), {len(seeds)} pairs\n")
    print(f"Spearman's rho(NewReno goodput, MTL / NewReno) = {rho:.3f} "
          f"[{boot[249]:.3f}, {boot[9749]:.3f}] (bootstrap 95%)\n")
    print("| quantile | MTL kbit/s | NewReno kbit/s | MTL / NewReno |")
    print("|---|---|---|---|")
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):
        a, b = quantile(mtl, q), quantile(tcp, q)
        print(f"| {q:g} | {a:.0f} | {b:.0f} | {a / b:.3f} |")
    med = statistics.median(tcp)
    low = geo_ci([r for r, t in zip(ratio, tcp) if t <= med])
    high = geo_ci([r for r, t in zip(ratio, tcp) if t > med])
    print(f"\nPer-pair ratio, NewReno goodput at or below its median: {low[0]:.3f} [{low[1]:.3f}, {low[2]:.3f}]; "
          f"above: {high[0]:.3f} [{high[1]:.3f}, {high[2]:.3f}]\n")


def claim77(root):
    path = os.path.join(root, "claims", "seed004-parallel-traced")
    rows = read_flows(path)
    if rows is None:
        return
    seed_of = {r["point"]: (r["protocol"], int(r["seed"])) for r in rows}
    windows = defaultdict(lambda: [[0.0] * 50, [0.0] * 50])
    with open(os.path.join(path, "traces.csv"), newline="") as fh:
        for r in csv.DictReader(fh):
            if r["kind"] != "delivered_bytes":
                continue
            t = float(r["t_s"])
            if 100.0 <= t < 150.0:
                windows[r["point"]][int(r["flow"])][int(t - 100.0)] += float(r["value"])
    per = {}  # (protocol, seed) -> (taken share, taken by flow 1 share, sd of flow 1's share)
    for pt, (w0, w1) in windows.items():
        shares = [a / (a + b) for a, b in zip(w0, w1) if a + b > 0]
        taken = sum(1 for x in shares if x > 0.9 or x < 0.1) / len(shares)
        by1 = sum(1 for x in shares if x > 0.9) / len(shares)
        per[seed_of[pt]] = (taken, by1, statistics.pstdev(shares))
    print("## Claim 77: who carries the bandwidth in 1 s windows of [100, 150] s (seed 004 §IV.B)\n")
    print("| protocol | runs | runs with a taken window | windows one flow takes (> 90%) | taken by flow 1 | "
          "sd of flow 1's share | taken: difference from MTL [95% CI] |")
    print("|---|---|---|---|---|---|---|")
    protos = sorted({p for p, _ in per}, key=lambda p: (p != "mtl", p))
    for proto in protos:
        seeds = sorted(s for p, s in per if p == proto)
        a = mean_ci([per[(proto, s)][0] for s in seeds])
        b = mean_ci([per[(proto, s)][1] for s in seeds])
        c = mean_ci([per[(proto, s)][2] for s in seeds])
        if proto == "mtl":
            d = "—"
        else:
            diffs = [per[(proto, s)][0] - per[("mtl", s)][0] for s in seeds if ("mtl", s) in per]
            m = mean_ci(diffs)
            d = f"{m[0]:+.3f} [{m[1]:+.3f}, {m[2]:+.3f}]"
        with_any = sum(1 for s in seeds if per[(proto, s)][0] > 0)
        print(f"| {proto} | {len(seeds)} | {with_any} | {a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}] | {b[0]:.3f} | "
              f"{c[0]:.3f} [{c[1]:.3f}, {c[2]:.3f}] | {d} |")
    print()


if __name__ == "__main__":
    claim69(ROOT)
    claim70(ROOT)
    claim71_73(ROOT)
    claim76(ROOT)
    claim77(ROOT)
