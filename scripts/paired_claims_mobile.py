#!/usr/bin/env python3
"""Paired-seed verdicts for seeds 002 (two flows, claim 13), 003 (walking client,
claims 26-27) and 004 (MTL chain and grid, claims 33 and 37) of docs/RESULTS.md.

Usage:
    python3 scripts/paired_claims_mobile.py [ROOT]     # ROOT defaults to results/verdicts

ROOT holds the output directories of the experiment files in examples/verdicts/,
each run as
    meshbed experiment run examples/verdicts/FILE.toml --jobs 1 --no-store --out ROOT/DIR
with (FILE -> DIR)
    seed002-two-flows-paired  -> two-flows         (30 paired seeds, flows.csv, paired.csv)
    seed002-two-flows-traced  -> two-flows-traced  (seeds 1..30 as an axis: every run traced)
    seed003-walk-paired       -> walk              (NewReno, 2-4 hops x 0.33/0.66/1.0 m/s, 30 seeds)
    seed003-static-paired     -> static            (NewReno, static 2-4 hop chain, 30 seeds)
    seed004-chain-paired      -> chain4            (MTL and NewReno, 1-8 hops, 10 seeds)
    seed004-parallel-paired   -> parallel          (MTL and NewReno, two parallel chains, 10 seeds)
    seed004-grid-paired       -> grid200           (MTL and NewReno, 200 random pairs)
  (a directory `grid` with the same file at repetitions = 50 is read too if present:
  its 50 runs must equal the first 50 of grid200, seeds 1..50)
A missing directory is reported and its claims skipped.

Statistics (standard library only; t_interval is imported from scripts/paired_claims.py):
* ratio A/B: geometric mean over seeds of the per-seed goodput ratio, Student-t 95%
  interval on the log ratios (the same as meshbed's paired.csv, which is checked
  where present).
* means: arithmetic mean over seeds with a Student-t 95% interval; the ratio of
  two means gets a percentile bootstrap over seeds (10 000 resamples, random seed 1).
* claim 13's convergence times, per run, from the per-packet `delivered_bytes`
  samples of traces.csv: a flow's rate at time t is its goodput over [t - W, t]
  (W = 2 s unless stated), evaluated every 0.1 s.
    - join: the time after F2 starts (30 s) until both flows' rates are within 25%
      of each other (min/max >= 0.75), first reached and first reached and held
      for 5 s; censored at 60 s (F1 stops at 90 s).
    - takeover: the time after F1 stops (90 s) until F2's rate reaches 80% of its
      final rate (its mean goodput over [105, 120] s); censored at 30 s.
    - takeover of the pair's rate: the time after 90 s until F2's rate reaches 80% of
      both flows' aggregate goodput over [80, 90] s (what the pair carried before F1
      left); censored at 30 s. And F2's final rate over that aggregate. Both takeover
      times also as "held5": reached and held for 5 s (a sawtooth peak does not count).
    - share of [40, 90] s in which the two rates are within 25%.
    - F1's goodput alone over [5, 30] s (against F2's final: the single flow's rate),
      and the share of 1 s windows in [5, 30] s in which F1 alone delivers under 25%
      of that mean (the troughs of default ATP's rate cycle).
  Per protocol: mean with t interval (censored runs at their censoring value,
  counted), median; ATP - NewReno paired difference with t interval.
"""
import bisect
import csv
import math
import os
import random
import statistics
import sys
from collections import defaultdict

ROOT = sys.argv[1] if len(sys.argv) > 1 else "results/verdicts"

# Student-t quantiles and the t interval: reused read-only from the testbed helper's script
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_claims import t_interval  # noqa: E402


def geo_ratio(pairs):
    """pairs: list of (a, b); returns (ratio, lo, hi, n, zero_pairs)."""
    logs = [math.log(a / b) for a, b in pairs if a > 0 and b > 0]
    zero = len(pairs) - len(logs)
    m, lo, hi = t_interval(logs)
    return math.exp(m), math.exp(lo), math.exp(hi), len(logs), zero


def boot_ratio_of_means(pairs, n_boot=10000):
    rng = random.Random(1)
    k = len(pairs)
    out = []
    for _ in range(n_boot):
        s = [pairs[rng.randrange(k)] for _ in range(k)]
        out.append(sum(a for a, _ in s) / sum(b for _, b in s))
    out.sort()
    return out[int(0.025 * n_boot)], out[int(0.975 * n_boot) - 1]


def fmt_ci(m, lo, hi, d=2):
    return f"{m:.{d}f} [{lo:.{d}f}, {hi:.{d}f}]"


def load_flows(name):
    p = os.path.join(ROOT, name, "flows.csv")
    if not os.path.exists(p):
        print(f"\n(missing {p}: skipped)")
        return None
    with open(p) as f:
        return list(csv.DictReader(f))


def check_paired(name, point_key, ours):
    """Compare our geometric-mean ratio with paired.csv's for the same point."""
    p = os.path.join(ROOT, name, "paired.csv")
    if not os.path.exists(p):
        return
    with open(p) as f:
        for r in csv.DictReader(f):
            if r["point"] == point_key:
                ref = float(r["ratio"])
                flag = "ok" if abs(ref - ours) < 1e-6 * max(1, ref) else "DIFFERS"
                print(f"  (paired.csv {point_key}: {ref:.4f}, ours {ours:.4f}: {flag})")


def flow_goodputs(rows):
    """(protocol, rep) -> {flow: goodput_bps}."""
    runs = defaultdict(dict)
    for r in rows:
        runs[(r["protocol"], int(r["rep"]))][int(r["flow"])] = float(r["goodput_bps"])
    return runs


def aggregate_pairs(runs, a, b):
    """Per repetition, (sum of a's flows, sum of b's flows) where both ran."""
    reps = sorted({k[1] for k in runs})
    return [(sum(runs[(a, i)].values()), sum(runs[(b, i)].values())) for i in reps
            if (a, i) in runs and (b, i) in runs]


def aggregate_report(name, a, b, label):
    """Print the paired ratio of the runs' aggregate goodput a/b (checked against
    paired.csv); return the runs, or None when the directory is missing."""
    rows = load_flows(name)
    if not rows:
        return None
    runs = flow_goodputs(rows)
    g = geo_ratio(aggregate_pairs(runs, a, b))
    print(f"{label}: {fmt_ci(*g[:3], d=3)}, n={g[3]}")
    check_paired(name, f"protocol={a}", g[0])
    return runs


def first_true(ts, oks, t_ref, cap):
    """The first time (minus t_ref) at which oks holds; cap if never."""
    return next((t - t_ref for t, o in zip(ts, oks) if o), cap)


def first_held(ts, oks, t_ref, cap, hold=5.0):
    """The first time (minus t_ref) from which oks holds for `hold` s (or to the
    end of ts); cap if never."""
    for i, t in enumerate(ts):
        if not oks[i]:
            continue
        j = i
        while j < len(ts) and ts[j] <= t + hold + 1e-9 and oks[j]:
            j += 1
        if j == len(ts) or ts[j] > t + hold + 1e-9:
            return t - t_ref
    return cap


# ---------------------------------------------------------------- claim 13
def claim13():
    print("\n## Claim 13: seed 002 two flows on the 5-hop chain (ns-2 802.11, 2 Mbit/s, RTS/CTS)")
    runs = aggregate_report("two-flows", "atp-default", "tcp-newreno",
                            "whole-run aggregate goodput ATP/NewReno")
    if runs:
        for proto in ("atp-default", "tcp-newreno"):
            agg = [sum(v.values()) * 1e-6 for (p, _), v in runs.items() if p == proto]
            print(f"  {proto}: aggregate of the flows' whole-run goodputs {fmt_ci(*t_interval(agg), d=3)} Mbit/s, n={len(agg)}")
    p = os.path.join(ROOT, "two-flows-traced", "traces.csv")
    if not os.path.exists(p):
        print(f"(missing {p}: convergence skipped)")
        return
    pts = {}
    fr = load_flows("two-flows-traced")
    for r in fr:
        pts[r["point"]] = (r["protocol"], int(r["seed"]))
    deliv = defaultdict(list)  # (point, flow) -> [(t, bytes)]
    with open(p) as f:
        for r in csv.DictReader(f):
            if r["kind"] == "delivered_bytes":
                deliv[(r["point"], int(r["flow"]))].append((float(r["t_s"]), float(r["value"])))
    for W in (2.0, 5.0):
        print(f"\n### rate window W = {W:g} s")
        per = defaultdict(dict)  # metric -> {(proto, seed): value}
        for pt, (proto, seed) in pts.items():
            cum = {}
            for fl in (0, 1):
                s = sorted(deliv[(pt, fl)])
                ts = [t for t, _ in s]
                cs = []
                acc = 0.0
                for _, b in s:
                    acc += b
                    cs.append(acc)
                cum[fl] = (ts, cs)

            def rate(fl, t0, t1):
                ts, cs = cum[fl]
                i0 = bisect.bisect_right(ts, t0)
                i1 = bisect.bisect_right(ts, t1)
                c0 = cs[i0 - 1] if i0 > 0 else 0.0
                c1 = cs[i1 - 1] if i1 > 0 else 0.0
                return 8 * (c1 - c0) / (t1 - t0)

            grid = [round(30 + W + 0.1 * k, 6) for k in range(int((60 - W) / 0.1) + 1)]
            ok = []
            for t in grid:
                r0, r1 = rate(0, t - W, t), rate(1, t - W, t)
                ok.append(max(r0, r1) > 0 and min(r0, r1) / max(r0, r1) >= 0.75)
            first = first_true(grid, ok, 30, 60.0)
            held = first_held(grid, ok, 30, 60.0)
            sel = [o for t, o in zip(grid, ok) if t >= 40]
            share = sum(sel) / len(sel)
            final = rate(1, 105, 120)
            agg_pre = rate(0, 80, 90) + rate(1, 80, 90)
            tg = [round(90 + 0.1 * k, 6) for k in range(301)]
            ok_f = [rate(1, t - W, t) >= 0.8 * final for t in tg]
            ok_p = [rate(1, t - W, t) >= 0.8 * agg_pre for t in tg]
            up = first_true(tg, ok_f, 90, 30.0)
            up_agg = first_true(tg, ok_p, 90, 30.0)
            per["takeover80_held5"][(proto, seed)] = first_held(tg, ok_f, 90, 30.0)
            per["takeover80_of_pair_held5"][(proto, seed)] = first_held(tg, ok_p, 90, 30.0)
            per["join_first"][(proto, seed)] = first
            per["join_held5"][(proto, seed)] = held
            per["share_within25"][(proto, seed)] = share
            per["takeover80"][(proto, seed)] = up
            per["takeover80_of_pair"][(proto, seed)] = up_agg
            per["f2_final_mbps"][(proto, seed)] = final * 1e-6
            per["f2_final_over_pair_pre"][(proto, seed)] = final / agg_pre
            per["f1_alone_mbps"][(proto, seed)] = rate(0, 5, 30) * 1e-6
            m1 = rate(0, 5, 30)
            low = [rate(0, 5 + 0.5 * k, 6 + 0.5 * k) < 0.25 * m1 for k in range(49)]
            per["f1_alone_low_share"][(proto, seed)] = sum(low) / len(low)
            per["f2_pre_mbps"][(proto, seed)] = rate(1, 80, 90) * 1e-6
        cens = {"join_first": 60.0, "join_held5": 60.0, "takeover80": 30.0, "takeover80_of_pair": 30.0,
                "takeover80_held5": 30.0, "takeover80_of_pair_held5": 30.0}
        print("| metric | default ATP: mean [95% CI], median, censored | NewReno | ATP - NewReno, paired (95% CI) | n |")
        print("|---|---|---|---|---|")
        for m, d in per.items():
            seeds = sorted({s for (_, s) in d})
            a = [d[("atp-default", s)] for s in seeds if ("atp-default", s) in d and ("tcp-newreno", s) in d]
            b = [d[("tcp-newreno", s)] for s in seeds if ("atp-default", s) in d and ("tcp-newreno", s) in d]
            c = cens.get(m)
            ca = sum(1 for x in a if c is not None and x >= c)
            cb = sum(1 for x in b if c is not None and x >= c)
            diff = [x - y for x, y in zip(a, b)]
            print(f"| {m} | {fmt_ci(*t_interval(a))}, {statistics.median(a):.2f}, {ca} | "
                  f"{fmt_ci(*t_interval(b))}, {statistics.median(b):.2f}, {cb} | {fmt_ci(*t_interval(diff))} | {len(a)} |")


# ---------------------------------------------------------------- claims 26-27
def claims26_27():
    print("\n## Claims 26-27: seed 003 walking client (TCP NewReno, the testbed as built)")
    walk, static = load_flows("walk"), load_flows("static")
    if not walk or not static:
        return
    W = defaultdict(dict)
    for r in walk:
        W[(int(r["hops"]), float(r["mobility.speed_mps"]))][int(r["rep"])] = float(r["goodput_bps"])
    S = defaultdict(dict)
    for r in static:
        S[int(r["hops"])][int(r["rep"])] = float(r["goodput_bps"])
    paper = {2: (2.22, 2.40, 2.26, 1.96), 3: (1.44, 2.17, 2.05, 1.66), 4: (1.24, 1.59, 1.30, 1.18)}
    print("| hops | static Mbit/s mean [CI] (median) | 0.33 | 0.66 | 1.0 m/s |")
    print("|---|---|---|---|---|")
    for h in (2, 3, 4):
        cells = [S[h]] + [W[(h, v)] for v in (0.33, 0.66, 1.0)]
        out = []
        for c in cells:
            xs = [x * 1e-6 for x in c.values()]
            out.append(f"{fmt_ci(*t_interval(xs))} ({statistics.median(xs):.2f})")
        print(f"| {h} | " + " | ".join(out) + " |")
    print("\nwalker / static (claim 26; seeds paired by repetition across the two experiments):")
    print("| hops | speed | paper | meshbed geo-mean [95% CI] | ratio of medians | n |")
    print("|---|---|---|---|---|---|")
    for h in (2, 3, 4):
        for i, v in enumerate((0.33, 0.66, 1.0)):
            reps = sorted(set(W[(h, v)]) & set(S[h]))
            g = geo_ratio([(W[(h, v)][r], S[h][r]) for r in reps])
            rm = statistics.median(W[(h, v)].values()) / statistics.median(S[h].values())
            print(f"| {h} | {v} | {paper[h][i + 1] / paper[h][0]:.2f} | {fmt_ci(*g[:3])} | {rm:.2f} | {g[3]} |")
    print("\nfast / slow walker (claim 27; same seeds within the walk experiment):")
    print("| hops | paper fast/slow | meshbed geo-mean [95% CI] | ratio of medians | n |")
    print("|---|---|---|---|---|")
    for h in (2, 3, 4):
        reps = sorted(set(W[(h, 1.0)]) & set(W[(h, 0.33)]))
        g = geo_ratio([(W[(h, 1.0)][r], W[(h, 0.33)][r]) for r in reps])
        rm = statistics.median(W[(h, 1.0)].values()) / statistics.median(W[(h, 0.33)].values())
        print(f"| {h} | {paper[h][3] / paper[h][1]:.3f} | {fmt_ci(*g[:3], d=3)} | {rm:.3f} | {g[3]} |")


# ---------------------------------------------------------------- claims 33, 37
def mtl_pairs(rows, xkey=None):
    runs = defaultdict(dict)
    for r in rows:
        x = r[xkey] if xkey else ""
        runs[(x, int(r["rep"]))][r["protocol"]] = (float(r["goodput_bps"]), r)
    return runs


def claim33():
    print("\n## Claim 33: seed 004 chain, MTL / NewReno (ns-2 802.11g as built)")
    rows = load_flows("chain4")
    if not rows:
        return
    runs = mtl_pairs(rows, "hops")
    print("| hops | MTL Mbit/s mean [CI] | NewReno | MTL/NewReno geo-mean [95% CI] | n |")
    print("|---|---|---|---|---|")
    for h in sorted({int(x) for x, _ in runs}):
        pr = [(v["mtl"][0], v["tcp-newreno"][0]) for (x, _), v in runs.items()
              if int(x) == h and "mtl" in v and "tcp-newreno" in v]
        g = geo_ratio(pr)
        a = t_interval([p[0] * 1e-6 for p in pr])
        b = t_interval([p[1] * 1e-6 for p in pr])
        print(f"| {h} | {fmt_ci(*a)} | {fmt_ci(*b)} | {fmt_ci(*g[:3])} | {g[3]} |")


def claim34_36():
    print("\n## Claim 34: link-layer drops per run on the chain (MAC queue overflow + retry limit)")
    rows = load_flows("chain4")
    if rows:
        d = defaultdict(list)
        for r in rows:
            d[(int(r["hops"]), r["protocol"])].append(
                float(r["mac_drop_queue_overflow"]) + float(r["mac_drop_retry_limit"]))
        for h in sorted({h for h, _ in d}):
            print(f"  {h} hops: MTL {fmt_ci(*t_interval(d[(h, 'mtl')]), d=1)}, "
                  f"NewReno {fmt_ci(*t_interval(d[(h, 'tcp-newreno')]), d=1)}")
    print("\n## Claims 35-36: two parallel 5-hop chains, MTL vs NewReno")
    runs = aggregate_report("parallel", "mtl", "tcp-newreno", "aggregate MTL/NewReno")
    if not runs:
        return
    for proto in ("mtl", "tcp-newreno"):
        agg = [sum(v.values()) * 1e-6 for (p, _), v in runs.items() if p == proto]
        f12 = [(v[0], v[1]) for (p, _), v in runs.items() if p == proto]
        gr = geo_ratio(f12)
        big = [max(a, b) / min(a, b) for a, b in f12 if min(a, b) > 0]
        print(f"  {proto}: aggregate {fmt_ci(*t_interval(agg), d=2)} Mbit/s; flow1/flow2 geo-mean "
              f"{fmt_ci(*gr[:3], d=3)}; larger/smaller flow: mean {statistics.fmean(big):.3f}, max {max(big):.3f}")


def claim37():
    for name in ("grid200", "grid"):
        claim37_dir(name)


def claim37_dir(name):
    print(f"\n## Claim 37: seed 004 6x6 grid, one random pair per seed, MTL vs NewReno ({name})")
    rows = load_flows(name)
    if not rows:
        return
    runs = mtl_pairs(rows)
    pr, ids = [], []
    for (_, rep), v in sorted(runs.items(), key=lambda kv: kv[0][1]):
        if "mtl" in v and "tcp-newreno" in v:
            pr.append((v["mtl"][0], v["tcp-newreno"][0]))
            r = v["mtl"][1]
            ids.append((rep, r["src"], r["dst"], r.get("route_hops", "")))
    g = geo_ratio(pr)
    print(f"pairs: {len(pr)}; distinct src-dst: {len({(s, d) for _, s, d, _ in ids})}")
    print(f"per-pair MTL/NewReno, geometric mean: {fmt_ci(*g[:3], d=3)}, n={g[3]}, zero pairs {g[4]}")
    check_paired(name, "protocol=mtl", g[0])
    a = t_interval([p[0] * 1e-3 for p in pr])
    b = t_interval([p[1] * 1e-3 for p in pr])
    print(f"mean MTL {fmt_ci(*a, d=0)} kbit/s; mean NewReno {fmt_ci(*b, d=0)} kbit/s")
    rom = sum(p[0] for p in pr) / sum(p[1] for p in pr)
    lo, hi = boot_ratio_of_means(pr)
    print(f"ratio of means {rom:.3f} [{lo:.3f}, {hi:.3f}] (bootstrap over pairs)")
    rs = sorted(p[0] / p[1] for p in pr)
    print(f"per-pair ratios: min {rs[0]:.3f}, median {statistics.median(rs):.3f}, max {rs[-1]:.3f}; "
          f"MTL ahead in {sum(1 for x in rs if x > 1)} of {len(rs)}")
    byh = defaultdict(list)
    for (rep, s, d, hops), p in zip(ids, pr):
        byh[hops].append(p[0] / p[1])
    print("by route hops (MTL's route): " + ", ".join(
        f"{h}: {statistics.fmean(v):.2f} (n={len(v)})" for h, v in sorted(byh.items(), key=lambda kv: (len(kv[0]), kv[0]))))


if __name__ == "__main__":
    claim13()
    claims26_27()
    claim33()
    claim34_36()
    claim37()
