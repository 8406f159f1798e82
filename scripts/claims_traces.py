#!/usr/bin/env python3
"""Verdict numbers for claims 80 and 81 of docs/RESULTS.md ("Claims the documents make that are
not judged yet": seed 004's R_max = 1/FHD bound and seed 002's periodic RTT fluctuation).

Usage:
    python3 scripts/claims_traces.py [ROOT]       # ROOT defaults to results/claims

It reads the outputs of these runs (each command is in the experiment file's header) and prints
markdown; a missing directory is reported and its claim skipped:

* ROOT/seed004-rmax  (examples/claims/seed004-rmax.toml: seed004-chain, MTL alone, 1-8 hops,
  seeds 1-20)
  Claim 80 (seed 004 §III.C.2.b, Eq. 5, and §III.C.2.c): "at R_max = 1/FHD the number of packets
  in flight is h/4" and "R_max = 1/FHD specifies an upper bound for the achievable goodput".
  MTL's own FHD samples are not in the report (MtlConfig::from_tcp leaves MtlConfig::trace
  false, so a traced MTL flow has only delivered_bytes), so everything comes from flows.csv:
    - goodput G, packets/s = bytes_delivered / 1460 / duration_s (1460-byte segments; duration
      from the flow's start to the sender's Finished);
    - T = mean_delay_s, the mean one-way delay (created at the sender, arrived at the destination)
      of every sender datagram that arrived (the paper's T_one-way);
    - packets in flight N = lambda * T by Little's law, lambda = (bytes_delivered / 1460 +
      retransmissions) / duration_s (the data datagrams that arrived; the few lost copies are
      counted, so N is an upper estimate by at most retransmissions / 55 000 <= 0.3%);
    - FHD = min(h, 4) * T / h: the paper's own relation T_one-way = FHD * h / 4 (Eq. 5), and for
      h < 4 its "h-hop propagation delay" (T itself); R_max = 1 / FHD;
    - G / R_max = G * FHD: the goodput against the bound (<= 1 where the bound holds). Since
      R_max * T = max(1, h/4), G / R_max is also (G * T) / max(1, h/4): packets in flight against
      Eq. 5's h/4 (h >= 4; 1 for h < 4 under the same rule).
  Per hop count: geometric mean over the 20 seeds of G / R_max and of N / (h/4), Student-t 95%
  interval on the logs; the number of seeds with G > R_max; the mean of G (Mbit/s), T (ms) and N.
* ROOT/seed002-rtt  (examples/claims/seed002-rtt.toml: the mobile network over DSR, NewReno,
  1 and 25 flows, 1 and 20 m/s, seeds 1-20, every run traced)
  Claim 81 (seed 002 §2.1, Fig. 2(a)(b)): "the rtt values fluctuate periodically" ("the i-th
  packet in a burst experiences an rtt of rtt_base + (i - 1) * L/r"). NewReno times one segment
  per round trip (no timestamps, Karn's rule), so traces.csv's rtt_s is one sample per RTT, as
  in ns-2, and there is no per-packet RTT or send time: a packet's position in a burst cannot be
  read off. Per flow with at least MIN_SAMPLES rtt_s samples (sender side), in time order:
    - CV: standard deviation / mean of the samples; p90/p10 ratio;
    - rho1: the lag-1 autocorrelation of consecutive samples;
    - periodic: the sample autocorrelation r(k), k = 1..min(60, n/3), first falls below
      -1.96/sqrt(n) and afterwards rises to a local maximum above +1.96/sqrt(n) (a swing below and
      back above the mean, as a periodic series has and a monotonically decaying one has not);
      the period is that lag k*, in samples and in seconds (k* times the mean gap between samples);
    - the same test on AR(1) surrogates with the flow's own n and rho1 (Gaussian, 20 per flow,
      random seed 1): the share of non-periodic but equally correlated series the test flags,
      the false-positive baseline; and on synthetic sawtooth series (period 10 and 20 samples,
      Gaussian noise with the sawtooth's own standard deviation, n = 90 and 186, 200 each, random
      seed 2): the test's power against the periodic series the claim describes;
    - window: Spearman's rank correlation between a sample and cwnd_segments at the time its
      segment was sent (t - rtt, the last cwnd sample before it): the burst formula's (i - 1)
      stands for the own segments ahead of the timed one, at most a window.
  Per setting (speed x flows): per run, the mean over its qualifying flows; mean over runs with a
  Student-t 95% interval (the share flagged periodic likewise, per run, against the surrogates').

Standard library only.
"""
import bisect
import csv
import math
import os
import random
import statistics
import sys
from collections import defaultdict

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join("results", "claims")

# Student-t 0.975 quantiles: the same table as the other verdict scripts.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_claims import tq  # noqa: E402

MTL_PAYLOAD = 1460
TCP_PAYLOAD = 512
MIN_SAMPLES = 30
SURROGATES = 20


# Means and geometric means with Student-t 95% intervals: claims_added.py's.
from claims_added import geo_ci, mean_ci  # noqa: E402


def fmt(t, d=2):
    m, lo, hi = t
    return f"{m:.{d}f} [{lo:.{d}f}, {hi:.{d}f}]"


def read_flows(d):
    """flows.csv rows as dicts; the axis columns come before `rep` (a `seed` axis repeats the run
    seed's column name, so the run seed is taken from the last `seed` column)."""
    with open(os.path.join(d, "flows.csv")) as f:
        rd = csv.reader(f)
        head = next(rd)
        rows = []
        for r in rd:
            row = {}
            for k, v in zip(head, r):
                row[k] = v  # a repeated name keeps the later column
            rows.append(row)
    return head, rows


# ---------------------------------------------------------------- claim 80


def claim80():
    d = os.path.join(ROOT, "seed004-rmax")
    if not os.path.exists(os.path.join(d, "flows.csv")):
        print(f"claim 80: {d}/flows.csv missing, skipped\n")
        return
    _, rows = read_flows(d)
    by_h = defaultdict(list)
    for r in rows:
        h = int(r["hops"])
        assert int(r["route_hops"]) == h, r
        dur = float(r["duration_s"])
        pkts = int(r["bytes_delivered"]) / MTL_PAYLOAD
        g = pkts / dur
        lam = (pkts + int(r["retransmissions"])) / dur
        t = float(r["mean_delay_s"])
        n = lam * t
        fhd = min(h, 4) * t / h
        by_h[h].append(dict(seed=int(r["seed"]), g=g, t=t, n=n, fhd=fhd, ratio=g * fhd,
                            done=r["completed"] == "true", mbps=float(r["goodput_bps"]) / 1e6))
    print("### Claim 80: MTL's goodput against R_max = 1/FHD, packets in flight against h/4\n")
    print(f"`{d}` (MTL, seed004-chain, {len(rows)} runs). FHD = min(h,4)·T/h from the mean one-way "
          "delay T; N = λ·T (Little). Geometric means over seeds, t 95% intervals.\n")
    print("| hops | runs (complete) | goodput Mbit/s | G pkt/s | T ms | FHD ms | R_max pkt/s | "
          "G / R_max | seeds G > R_max | N in flight | h/4 | N / (h/4) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    allr = []
    for h in sorted(by_h):
        v = by_h[h]
        allr += [x["ratio"] for x in v]
        gm = statistics.fmean(x["mbps"] for x in v)
        gp = statistics.fmean(x["g"] for x in v)
        tm = statistics.fmean(x["t"] for x in v) * 1e3
        fm = statistics.fmean(x["fhd"] for x in v) * 1e3
        rmax = statistics.fmean(1 / x["fhd"] for x in v)
        ratio = geo_ci([x["ratio"] for x in v])
        over = sum(x["ratio"] > 1 for x in v)
        nm = geo_ci([x["n"] for x in v])
        nq = geo_ci([x["n"] / (h / 4) for x in v])
        print(f"| {h} | {len(v)} ({sum(x['done'] for x in v)}) | {gm:.2f} | {gp:.0f} | {tm:.3f} | "
              f"{fm:.3f} | {rmax:.0f} | **{fmt(ratio, 3)}** | {over}/{len(v)} | {fmt(nm, 2)} | "
              f"{h / 4:.2f} | {fmt(nq, 2)} |")
    print()
    print(f"All hop counts: G / R_max ranges {min(allr):.3f}-{max(allr):.3f} over "
          f"{len(allr)} runs.\n")


# ---------------------------------------------------------------- claim 81


def acf(x, kmax):
    n = len(x)
    m = statistics.fmean(x)
    c = [v - m for v in x]
    c0 = sum(v * v for v in c) / n
    if c0 == 0:
        return [0.0] * (kmax + 1)
    return [1.0] + [sum(c[i] * c[i + k] for i in range(n - k)) / n / c0 for k in range(1, kmax + 1)]


def periodic_lag(x):
    """The lag of the ACF's first significant positive local maximum after a significant negative
    value, or None."""
    n = len(x)
    kmax = min(60, n // 3)
    if kmax < 3:
        return None
    r = acf(x, kmax)
    band = 1.96 / math.sqrt(n)
    neg = False
    for k in range(1, kmax):
        if not neg:
            neg = r[k] < -band
            continue
        if r[k] > band and r[k] >= r[k - 1] and r[k] >= r[k + 1]:
            return k
    return None


def ar1(n, rho, rng):
    rho = max(min(rho, 0.999), -0.999)
    s = math.sqrt(1 - rho * rho)
    x = [rng.gauss(0, 1)]
    for _ in range(n - 1):
        x.append(rho * x[-1] + s * rng.gauss(0, 1))
    return x


# Spearman's rank correlation: claims_added.py's.
from claims_added import spearman  # noqa: E402


def quantile(xs, q):
    s = sorted(xs)
    i = q * (len(s) - 1)
    lo = int(math.floor(i))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


def claim81():
    d = os.path.join(ROOT, "seed002-rtt")
    if not os.path.exists(os.path.join(d, "traces.csv")):
        print(f"claim 81: {d}/traces.csv missing, skipped\n")
        return
    _, rows = read_flows(d)
    point = {}
    goodput = {}
    for r in rows:
        p = int(r["point"])
        point[p] = (float(r["mobility.max_speed_mps"]), int(r["random_flows.count"]), int(r["seed"]))
        goodput[(p, int(r["flow"]))] = int(r["bytes_delivered"]) / TCP_PAYLOAD / float(r["duration_s"])
    rtt = defaultdict(list)
    cwnd = defaultdict(list)
    with open(os.path.join(d, "traces.csv")) as f:
        rd = csv.reader(f)
        head = next(rd)
        ip, iflow, it, iside, ikind, ival = (head.index(c) for c in ("point", "flow", "t_s", "side", "kind", "value"))
        for r in rd:
            k = r[ikind]
            if r[iside] != "sender":
                continue
            if k == "rtt_s":
                rtt[(int(r[ip]), int(r[iflow]))].append((float(r[it]), float(r[ival])))
            elif k == "cwnd_segments":
                cwnd[(int(r[ip]), int(r[iflow]))].append((float(r[it]), float(r[ival])))
    rng = random.Random(1)
    per_run = defaultdict(lambda: defaultdict(list))  # (speed, count) -> metric -> per-run values
    pooled = defaultdict(lambda: defaultdict(list))   # (speed, count) -> metric -> per-flow values
    flows_total = defaultdict(int)
    for p, (speed, count, seed) in sorted(point.items()):
        key = (speed, count)
        flows = [fk for fk in goodput if fk[0] == p]
        flows_total[key] += len(flows)
        m = defaultdict(list)
        for fk in flows:
            s = sorted(rtt.get(fk, []))
            if len(s) < MIN_SAMPLES:
                continue
            ts = [a for a, _ in s]
            x = [b for _, b in s]
            mu = statistics.fmean(x)
            m["n"].append(len(x))
            m["cv"].append(statistics.pstdev(x) / mu)
            m["p9010"].append(quantile(x, 0.9) / quantile(x, 0.1))
            m["rho1"].append(acf(x, 1)[1])
            k = periodic_lag(x)
            m["periodic"].append(1.0 if k else 0.0)
            gap = (ts[-1] - ts[0]) / (len(ts) - 1)
            if k:
                pooled[key]["period_samples"].append(k)
                pooled[key]["period_s"].append(k * gap)
            sur = [1.0 if periodic_lag(ar1(len(x), acf(x, 1)[1], rng)) else 0.0 for _ in range(SURROGATES)]
            m["periodic_ar1"].append(statistics.fmean(sur))
            m["mean_rtt_ms"].append(mu * 1e3)
            # cwnd when the timed segment was sent
            cw = cwnd.get(fk, [])
            if cw:
                cts = [a for a, _ in cw]

                pairs = []
                for t, v in s:
                    i = bisect.bisect_right(cts, t - v) - 1
                    if i >= 0:
                        pairs.append((v, cw[i][1]))
                if len(pairs) >= MIN_SAMPLES and len(set(c for _, c in pairs)) > 1:
                    m["spearman_cwnd"].append(spearman([a for a, _ in pairs], [b for _, b in pairs]))
            for name in ("cv", "rho1", "periodic", "periodic_ar1", "p9010"):
                pooled[key][name].append(m[name][-1])
        if not m["n"]:
            continue
        for name, vals in m.items():
            per_run[key][name].append(statistics.fmean(vals))
        per_run[key]["diff"].append(statistics.fmean(m["periodic"]) - statistics.fmean(m["periodic_ar1"]))
    print("### Claim 81: NewReno's RTT samples in the paper's mobile network (DSR)\n")
    print(f"`{d}`; flows with >= {MIN_SAMPLES} rtt_s samples; per run the mean over those flows, "
          "then the mean over runs with a t 95% interval.\n")
    print("| speed m/s | flows | runs (flows used / all) | samples per flow | mean RTT ms | CV of RTT | "
          "p90/p10 | lag-1 autocorr. | share periodic | AR(1) surrogates | periodic − surrogate | "
          "Spearman RTT~cwnd |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(per_run):
        v = per_run[key]
        nflows = len(pooled[key]["cv"])
        sp = fmt(mean_ci(v["spearman_cwnd"]), 2) if len(v["spearman_cwnd"]) > 1 else "n/a"
        print(f"| {key[0]:g} | {key[1]} | {len(v['n'])} ({nflows} / {flows_total[key]}) | "
              f"{statistics.median(v['n']):.0f} | {fmt(mean_ci(v['mean_rtt_ms']), 0)} | "
              f"{fmt(mean_ci(v['cv']), 2)} | {fmt(mean_ci(v['p9010']), 1)} | {fmt(mean_ci(v['rho1']), 2)} | "
              f"{fmt(mean_ci(v['periodic']), 2)} | {fmt(mean_ci(v['periodic_ar1']), 2)} | "
              f"{fmt(mean_ci(v['diff']), 2)} | {sp} |")
    print()
    print("Pooled over flows (every qualifying flow counted once):\n")
    for key in sorted(pooled):
        pl = pooled[key]
        n = len(pl["cv"])
        per = sum(pl["periodic"])
        line = (f"- {key[0]:g} m/s, {key[1]} flows: {n} flows, periodic {per:.0f}/{n} "
                f"(AR(1) surrogates {statistics.fmean(pl['periodic_ar1']):.2f}); median CV "
                f"{statistics.median(pl['cv']):.2f}, median lag-1 autocorrelation "
                f"{statistics.median(pl['rho1']):.2f}")
        if pl["period_samples"]:
            line += (f"; period of the flagged flows: median {statistics.median(pl['period_samples']):.0f} "
                     f"samples, {statistics.median(pl['period_s']):.1f} s")
        print(line)
    print()
    rng = random.Random(2)
    power = []
    for n in (90, 186):
        for period in (10, 20):
            hits = 0
            for _ in range(200):
                ph = rng.random() * period
                x = [((i + ph) % period) / period + rng.gauss(0, 1) / math.sqrt(12) for i in range(n)]
                hits += periodic_lag(x) is not None
            power.append(f"n {n}, period {period}: {hits / 200:.2f}")
    print("Power of the periodicity test on sawtooth + equal-SD noise: " + "; ".join(power) + ".\n")


if __name__ == "__main__":
    claim80()
    claim81()
