#!/usr/bin/env python3
"""Verdict numbers for claims 78 and 79 of docs/RESULTS.md (seed 003, "not judged yet").

Usage:
    python3 scripts/claims_seed003.py [ROOT] [--meshbed PATH]
        # ROOT defaults to results; PATH to target/release/meshbed. Run from the
        # repository's root (it reads examples/claims/seed003-walk-outage.toml).

It reads the outputs of these runs (each command is in the experiment file's header) and
prints markdown; a missing directory is reported and its part skipped.

* ROOT/claims/seed003-walk-outage  (examples/claims/seed003-walk-outage.toml)
  Claim 78 (seed 003 §5.1): the fast walker "reaches the lower throughput locations
  sooner" / spends "less time in direct contact with the server, and relatively more time
  in the multihop part", and "for the fast-walking client, the outages induced by route
  discovery have a larger relative impact on the TCP throughput".
  `experiment run` keeps a run's delivery trace only with a seed axis (its routes.csv has
  the route log, but the stalls need the deliveries too), so for every (hops, speed, seed) of flows.csv this script runs the same scenario with
  `meshbed sim --json --seed SEED` (the experiment file without its [experiment] table,
  the two axes written in: topology.nodes = hops + 1, the flow's src and the walker =
  hops, mobility.speed_mps; `trace = true` on the flow, which changes no draw) and checks
  that the goodput equals flows.csv's to 1 bit/s (it stops if not). The per-run numbers
  are cached in ROOT/claims/seed003-walk-outage/claim78-runs.csv (delete it to recompute).
  Definitions, per run (flow start 2 s, end 122 s, T = 120 s):
    - discovery time: route_discoveries x route_discovery_mean_s (flows.csv): the time
      the flow's packets waited in route discoveries.
    - no-route time: the union over the flow's two ends of the intervals from a
      "route-failed" notice to the next "route-reestablished" at the same end (to 122 s if
      none), i.e. the time either end had no route to the other.
    - route stall: a gap between consecutive deliveries (receiver's delivered_bytes
      samples) longer than 0.2 s (20x the 3-4-hop RTT; Reno's minimum RTO is 0.2 s) that
      overlaps a no-route interval or contains a path change, measured from the last
      delivery before to the first after. Route-stall time is their sum; "all stalls" is
      the sum of every gap > 0.2 s.
    - relative impact on throughput (lost share): sum over route stalls of the stall's
      length x the local rate (bytes delivered in the 5 s before the stall and the 5 s
      after, over 10 s), divided by (bytes delivered + that sum).
    - time in direct contact: from the flow's start to the first path change (the route
      leaving the one-hop path; hops_observed min is 1 in every run), as a share of T;
      and the deterministic geometry: the walker is at x = 1 + v (t - 2) m, and the
      signal-strength filter (-81 dBm) stops carrying a direct route beyond
      d* = 10^((0 dBm - PL(1 m) + 81)/33) with PL(1 m) = Friis at 2.437 GHz = 40.18 dB:
      17.3 m, reached after (d* - 1)/v s.
    - phase rates: goodput before the first path change (one hop) and after it (the
      multi-hop part).
  Paired fast / slow (1.0 vs 0.33 m/s, and 0.66 vs 0.33) over the same seeds: geometric
  mean of per-seed ratios, Student-t 95% interval on the logs; shares also as paired
  differences (mean and t interval) since a share can be 0.

* ROOT/claims/seed003-pacing-static, -walk, -contention, -cs
  (examples/claims/seed003-pacing-*.toml)
  Claim 79 (seed 003 §6/§7): "the performance of RBP TCP is highly sensitive to channel
  contention and AODV routing dynamics". Per seed and setting R = goodput(tcp-reno-paced)
  / goodput(tcp-reno) (flow 0). Sensitivity of RBP relative to Reno to a perturbation =
  R(perturbed) / R(reference) on the same seed, geometric mean and t interval. The
  perturbations: the walker at 0.33 and 1.0 m/s against the static chain (routing
  dynamics); a competing CBR flow at 1000 and 2000 kbit/s against 1 kbit/s; carrier sense
  at -93 dBm (hidden terminals) against -102 dBm. Also each protocol's own change
  (goodput perturbed / reference, paired by seed).
  Sensitivity check (ROOT/claims/seed003-pacing-ns2-static, -aodv, -contention): the same
  measure in ns-2's setting (`seed003-pacing-sim`) with an unbounded window, the one setting
  where RBP gains in meshbed (claim 31), at 6 and 15 hops: AODV as ns-2 runs it (link-layer
  feedback, no HELLOs) against static routes, and a CBR flow 1 -> 2 at 250 and 500 kbit/s
  against 1 kbit/s.
  Rule fixed before the runs: "highly sensitive" to a factor = the sensitivity ratio
  outside [0.90, 1.11] with its interval excluding 1 at some hop count and in the same
  direction at the others. Yes = both factors; partly = one factor, or only detectable
  (interval excluding 1, < 10%) effects; no = no interval excludes 1 or RBP is not hurt
  more than Reno.

Standard library only.
"""
import csv
import bisect
import json
import math
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_claims import tq  # noqa: E402

_argv = sys.argv[1:]
MESHBED = "target/release/meshbed"
if "--meshbed" in _argv:
    i = _argv.index("--meshbed")
    MESHBED = _argv[i + 1]
    del _argv[i : i + 2]
ROOT = _argv[0] if _argv else "results"

START, END = 2.0, 122.0
T = END - START
GAP = 0.2
PL1 = 20 * math.log10(4 * math.pi / (299792458 / 2.437e9))  # Friis at 1 m, 2.437 GHz
D_STAR = 10 ** ((0.0 - PL1 + 81.0) / 33.0)


# Means and geometric means with Student-t 95% intervals: claims_added.py's.
from claims_added import geo_ci, mean_ci  # noqa: E402


def fmt(t, d=3):
    return f"{t[0]:.{d}f} [{t[1]:.{d}f}, {t[2]:.{d}f}]"


def read_flows(name):
    f = os.path.join(ROOT, "claims", name, "flows.csv")
    if not os.path.exists(f):
        print(f"*{f} is missing: run examples/claims/{name}.toml (command in its header).*\n")
        return None
    with open(f, newline="") as fh:
        return list(csv.DictReader(fh))


# ---------------------------------------------------------------- claim 78
def scenario_text(exp_file, hops, speed):
    s = open(exp_file).read()
    s = s[: s.index("\n[experiment]")] + "\n"
    s = re.sub(r"^nodes = \d+$", f"nodes = {hops + 1}", s, count=1, flags=re.M)
    s = re.sub(r"^src = 4$", f"src = {hops}", s, count=1, flags=re.M)
    s = re.sub(r"^node = 4$", f"node = {hops}", s, count=1, flags=re.M)
    s = re.sub(r"^speed_mps = [0-9.]+$", f"speed_mps = {speed}", s, count=1, flags=re.M)
    s = re.sub(r'^(protocol = "tcp-newreno")$', r"\1\ntrace = true", s, count=1, flags=re.M)
    return s


def union_len(iv):
    tot, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(iv):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                tot += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        tot += cur_e - cur_s
    return tot


def reduce_run(rep):
    f = rep["flows"][0]
    log = f["routing"]["route_log"]
    noroute = []
    for side in ("sender", "receiver"):
        open_at = None
        for e in log:
            if e["side"] != side:
                continue
            if e["event"] == "route-failed" and open_at is None:
                open_at = e["t_s"]
            elif e["event"] == "route-reestablished" and open_at is not None:
                noroute.append((open_at, e["t_s"]))
                open_at = None
        if open_at is not None:
            noroute.append((open_at, END))
    changes = [e["t_s"] for e in log if e["event"] == "path-changed"]
    deliv = [(x["t_s"], x["value"]) for x in f["trace"] if x["kind"] == "delivered_bytes"]
    times = [START] + [t for t, _ in deliv] + [END]
    cum = [0.0]
    for _, b in deliv:
        cum.append(cum[-1] + b)

    ts = [t for t, _ in deliv]

    def bytes_in(a, b):  # bytes delivered in (a, b]
        i, j = bisect.bisect_right(ts, a), bisect.bisect_right(ts, b)
        return cum[j] - cum[i]

    all_stall = route_stall = lost = 0.0
    n_route_stalls = 0
    for a, b in zip(times, times[1:]):
        if b - a <= GAP:
            continue
        all_stall += b - a
        routed = any(s < b and e > a for s, e in noroute) or any(a <= c <= b for c in changes)
        if routed:
            route_stall += b - a
            n_route_stalls += 1
            rate = (bytes_in(max(START, a - 5), a) + bytes_in(b, min(END, b + 5))) / (
                (a - max(START, a - 5)) + (min(END, b + 5) - b) or 1
            )
            lost += (b - a) * rate
    total = float(f["bytes_delivered"])
    t1 = changes[0] if changes else END
    b1 = bytes_in(START, t1)
    disc = f["net"]["discoveries"]
    return {
        "goodput_bps": f["goodput_bps"],
        "path_changes": len(changes),
        "route_failed": sum(1 for e in log if e["event"] == "route-failed"),
        "discovery_s": disc["total_ns"] / 1e9,
        "noroute_s": union_len(noroute),
        "route_stall_s": route_stall,
        "route_stalls": n_route_stalls,
        "all_stall_s": all_stall,
        "lost_share": lost / (total + lost) if total + lost > 0 else 0.0,
        "t_first_change_s": t1,
        "rate_1hop_bps": 8 * b1 / (t1 - START) if t1 > START else float("nan"),
        "rate_multi_bps": 8 * (total - b1) / (END - t1) if END > t1 else float("nan"),
        "hops_min": f["routing"]["hops_observed"]["min"],
        "hops_max": f["routing"]["hops_observed"]["max"],
    }


def routes_table(rows, exp_file, cache):
    if os.path.exists(cache):
        with open(cache, newline="") as fh:
            return {(int(r["hops"]), float(r["speed"]), int(r["seed"])): r for r in csv.DictReader(fh)}
    out = {}
    tmp = cache + ".scenario.toml"
    keys = sorted({(int(r["hops"]), float(r["mobility.speed_mps"]), int(r["seed"])) for r in rows})
    gp = {(int(r["hops"]), float(r["mobility.speed_mps"]), int(r["seed"])): float(r["goodput_bps"]) for r in rows}
    for i, (h, v, s) in enumerate(keys):
        with open(tmp, "w") as fh:
            fh.write(scenario_text(exp_file, h, v))
        js = subprocess.run([MESHBED, "sim", tmp, "--seed", str(s), "--json"], capture_output=True, text=True, check=True)
        d = reduce_run(json.loads(js.stdout))
        if abs(d["goodput_bps"] - gp[(h, v, s)]) > 1.0:
            sys.exit(f"sim goodput {d['goodput_bps']} != flows.csv {gp[(h, v, s)]} at hops {h} speed {v} seed {s}")
        out[(h, v, s)] = dict(hops=h, speed=v, seed=s, **d)
        if i % 30 == 29:
            print(f"<!-- {i + 1}/{len(keys)} runs re-simulated -->", file=sys.stderr)
    os.remove(tmp)
    cols = list(next(iter(out.values())).keys())
    with open(cache, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for k in sorted(out):
            w.writerow(out[k])
    return {k: {c: str(v) for c, v in r.items()} for k, r in out.items()}


def claim78():
    name = "seed003-walk-outage"
    rows = read_flows(name)
    if rows is None:
        return
    rows = [r for r in rows if r["flow"] == "0"]
    cache = os.path.join(ROOT, "claims", name, "claim78-runs.csv")
    R = routes_table(rows, "examples/claims/seed003-walk-outage.toml", cache)
    fl = {(int(r["hops"]), float(r["mobility.speed_mps"]), int(r["seed"])): r for r in rows}
    hops = sorted({k[0] for k in R})
    speeds = sorted({k[1] for k in R})
    seeds = sorted({k[2] for k in R})
    print(f"## Claim 78: the fast walker's deficit (seed 003 §5.1), NewReno, n = {len(seeds)} seeds\n")
    print(f"Geometry: direct route while the walker is within d* = {D_STAR:.1f} m of the server "
          f"(-81 dBm filter, PL(1 m) = {PL1:.2f} dB, exponent 3.3); walker at x = 1 + v(t - 2).\n")
    print("Per speed and hops, means over seeds (shares of the 120 s transfer):\n")
    print("| hops | m/s | goodput Mbit/s | geometric time in reach (s, share) | measured time to 1st path change (s, share) "
          "| 1-hop rate / multi-hop rate Mbit/s | path changes | route failures | discoveries x mean (ms, share) "
          "| no-route time (s, share) | route stalls (n, s, share) | all stalls > 0.2 s (s) | lost share (route stalls) |")
    print("|" + "---|" * 13)
    f = lambda k, c: float(R[k][c])  # noqa: E731
    for h in hops:
        for v in speeds:
            ks = [(h, v, s) for s in seeds]
            g = statistics.mean(float(fl[k]["goodput_bps"]) for k in ks) / 1e6
            geo = (D_STAR - 1) / v
            t1 = statistics.mean(f(k, "t_first_change_s") - START for k in ks)
            r1 = statistics.mean(f(k, "rate_1hop_bps") for k in ks) / 1e6
            rm = [f(k, "rate_multi_bps") for k in ks if not math.isnan(f(k, "rate_multi_bps"))]
            rm = statistics.mean(rm) / 1e6 if rm else float("nan")
            pc = statistics.mean(f(k, "path_changes") for k in ks)
            rf = statistics.mean(f(k, "route_failed") for k in ks)
            disc = [float(fl[k]["route_discoveries"]) * float(fl[k]["route_discovery_mean_s"] or 0) for k in ks]
            dm = statistics.mean(disc)
            nr = statistics.mean(f(k, "noroute_s") for k in ks)
            ns = statistics.mean(f(k, "route_stalls") for k in ks)
            rs = statistics.mean(f(k, "route_stall_s") for k in ks)
            al = statistics.mean(f(k, "all_stall_s") for k in ks)
            ls = statistics.mean(f(k, "lost_share") for k in ks)
            print(f"| {h} | {v} | {g:.2f} | {min(geo, T):.1f} ({min(geo, T) / T:.0%}) | {t1:.1f} ({t1 / T:.0%}) "
                  f"| {r1:.2f} / {rm:.2f} | {pc:.1f} | {rf:.1f} | {1e3 * dm:.0f} ({dm / T:.2%}) | {nr:.2f} ({nr / T:.2%}) "
                  f"| {ns:.1f}, {rs:.2f} ({rs / T:.1%}) | {al:.2f} | {ls:.2%} |")
    print()
    slow = min(speeds)
    print(f"Paired over seeds, against the slow walker ({slow} m/s): ratio = geometric mean [95% t]; "
          "difference = mean [95% t] in percentage points.\n")
    print("| hops | m/s | goodput ratio | time-in-reach share ratio | no-route share diff (pp) | route-stall share diff (pp) "
          "| lost share diff (pp) | lost share ratio | runs with route stalls (this / slow) |")
    print("|" + "---|" * 9)
    for h in hops:
        for v in speeds:
            if v == slow:
                continue
            ks = [((h, v, s), (h, slow, s)) for s in seeds]
            gr = geo_ci([float(fl[a]["goodput_bps"]) / float(fl[b]["goodput_bps"]) for a, b in ks])
            tr = geo_ci([(f(a, "t_first_change_s") - START) / (f(b, "t_first_change_s") - START) for a, b in ks])
            d_nr = mean_ci([100 * (f(a, "noroute_s") - f(b, "noroute_s")) / T for a, b in ks])
            d_rs = mean_ci([100 * (f(a, "route_stall_s") - f(b, "route_stall_s")) / T for a, b in ks])
            d_ls = mean_ci([100 * (f(a, "lost_share") - f(b, "lost_share")) for a, b in ks])
            pos = [(a, b) for a, b in ks if f(a, "lost_share") > 0 and f(b, "lost_share") > 0]
            lr = fmt(geo_ci([f(a, "lost_share") / f(b, "lost_share") for a, b in pos]), 2) + f" (n = {len(pos)})" if len(pos) > 2 else "–"
            na = sum(1 for a, _ in ks if f(a, "route_stalls") > 0)
            nb = sum(1 for _, b in ks if f(b, "route_stalls") > 0)
            print(f"| {h} | {v} / {slow} | {fmt(gr)} | {fmt(tr)} | {fmt(d_nr, 2)} | {fmt(d_rs, 2)} | {fmt(d_ls, 2)} | {lr} | {na} / {nb} |")
    print()
    # How much of the fast-slow deficit the time allocation alone explains: the fast walker's
    # own phase rates with the slow walker's time in reach.
    print("Counterfactual (time allocation): fast walker's goodput recomputed with its own 1-hop and multi-hop "
          "rates but the slow walker's time to the first path change, over the fast walker's measured goodput "
          "(geometric mean [95% t]):\n")
    fast = max(speeds)
    for h in hops:
        rat = []
        for s in seeds:
            a, b = (h, fast, s), (h, slow, s)
            t1 = f(b, "t_first_change_s") - START
            g = (t1 * f(a, "rate_1hop_bps") + (T - t1) * f(a, "rate_multi_bps")) / T
            rat.append(g / float(fl[a]["goodput_bps"]))
        print(f"- {h} hops: {fmt(geo_ci(rat))}; measured slow / fast "
              f"{fmt(geo_ci([float(fl[(h, slow, s)]['goodput_bps']) / float(fl[(h, fast, s)]['goodput_bps']) for s in seeds]))}")
    print()


# ---------------------------------------------------------------- claim 79
def by_key(rows, keys):
    out = {}
    for r in rows:
        if r["flow"] != "0":
            continue
        out[tuple(r[k] for k in keys) + (int(r["seed"]),)] = float(r["goodput_bps"])
    return out


def claim79():
    st = read_flows("seed003-pacing-static")
    wk = read_flows("seed003-pacing-walk")
    ct = read_flows("seed003-pacing-contention")
    cs = read_flows("seed003-pacing-cs")
    print("## Claim 79: RBP TCP \"highly sensitive to channel contention and AODV routing dynamics\" (seed 003 §6/§7)\n")
    print("R = paced / Reno goodput on the same seed; sensitivity = R(perturbed) / R(reference) on the same seed; "
          "own change = goodput(perturbed) / goodput(reference) per protocol. Geometric means [95% t].\n")
    print("| perturbation | hops | R reference | R perturbed | sensitivity | Reno own change | paced own change | n |")
    print("|---|---|---|---|---|---|---|---|")
    PAC, REN = "tcp-reno-paced", "tcp-reno"

    def row(label, h, ref, per, seeds):
        rr = geo_ci([ref[PAC][s] / ref[REN][s] for s in seeds])
        rp = geo_ci([per[PAC][s] / per[REN][s] for s in seeds])
        sv = geo_ci([(per[PAC][s] / per[REN][s]) / (ref[PAC][s] / ref[REN][s]) for s in seeds])
        oc = {p: geo_ci([per[p][s] / ref[p][s] for s in seeds]) for p in (REN, PAC)}
        print(f"| {label} | {h} | {fmt(rr)} | {fmt(rp)} | **{fmt(sv)}** | {fmt(oc[REN])} | {fmt(oc[PAC])} | {len(seeds)} |")
        return sv

    res = defaultdict(list)
    if st and wk:
        S = by_key(st, ["hops", "protocol"])
        W = by_key(wk, ["hops", "mobility.speed_mps", "protocol"])
        for v in sorted({r["mobility.speed_mps"] for r in wk}, key=float):
            for h in sorted({r["hops"] for r in st}, key=int):
                seeds = sorted({k[-1] for k in S if k[0] == h} & {k[-1] for k in W if k[0] == h and k[1] == v})
                ref = {p: {s: S[(h, p, s)] for s in seeds} for p in (REN, PAC)}
                per = {p: {s: W[(h, v, p, s)] for s in seeds} for p in (REN, PAC)}
                res["routing"].append(row(f"walk {v} m/s vs static", h, ref, per, seeds))
    if ct:
        C = by_key(ct, ["hops", "flows[1].rate_kbps", "flows[0].protocol"])
        rates = sorted({r["flows[1].rate_kbps"] for r in ct}, key=float)
        for rt in rates[1:]:
            for h in sorted({r["hops"] for r in ct}, key=int):
                seeds = sorted({k[-1] for k in C if k[0] == h})
                ref = {p: {s: C[(h, rates[0], p, s)] for s in seeds} for p in (REN, PAC)}
                per = {p: {s: C[(h, rt, p, s)] for s in seeds} for p in (REN, PAC)}
                res["contention"].append(row(f"CBR 1->2 {float(rt):.0f} vs {float(rates[0]):.0f} kbit/s", h, ref, per, seeds))
    if cs:
        K = by_key(cs, ["hops", "radio.cs_threshold_dbm", "protocol"])
        ths = sorted({r["radio.cs_threshold_dbm"] for r in cs}, key=float)  # -102 first
        for th in ths[1:]:
            for h in sorted({r["hops"] for r in cs}, key=int):
                seeds = sorted({k[-1] for k in K if k[0] == h})
                ref = {p: {s: K[(h, ths[0], p, s)] for s in seeds} for p in (REN, PAC)}
                per = {p: {s: K[(h, th, p, s)] for s in seeds} for p in (REN, PAC)}
                res["contention"].append(row(f"carrier sense {th} vs {ths[0]} dBm", h, ref, per, seeds))
    # Sensitivity check: ns-2's setting with an unbounded window, where RBP gains.
    n2s = read_flows("seed003-pacing-ns2-static")
    n2a = read_flows("seed003-pacing-ns2-aodv")
    n2c = read_flows("seed003-pacing-ns2-contention")
    if n2s and n2a:
        S = by_key(n2s, ["hops", "protocol"])
        A = by_key(n2a, ["hops", "protocol"])
        for h in sorted({r["hops"] for r in n2s}, key=int):
            seeds = sorted({k[-1] for k in S if k[0] == h} & {k[-1] for k in A if k[0] == h})
            ref = {p: {s: S[(h, p, s)] for s in seeds} for p in (REN, PAC)}
            per = {p: {s: A[(h, p, s)] for s in seeds} for p in (REN, PAC)}
            res["ns-2 routing"].append(row("ns-2, unbounded window: AODV vs static routes", h, ref, per, seeds))
        fails = defaultdict(list)
        for r in n2a:
            if r["flow"] == "0":
                fails[(r["hops"], r["protocol"])].append(float(r["route_failed_notices"]))
    if n2c:
        C = by_key(n2c, ["hops", "flows[1].rate_kbps", "flows[0].protocol"])
        rates = sorted({r["flows[1].rate_kbps"] for r in n2c}, key=float)
        for rt in rates[1:]:
            for h in sorted({r["hops"] for r in n2c}, key=int):
                seeds = sorted({k[-1] for k in C if k[0] == h})
                ref = {p: {s: C[(h, rates[0], p, s)] for s in seeds} for p in (REN, PAC)}
                per = {p: {s: C[(h, rt, p, s)] for s in seeds} for p in (REN, PAC)}
                res["ns-2 contention"].append(
                    row(f"ns-2, unbounded window: CBR 1->2 {float(rt):.0f} vs {float(rates[0]):.0f} kbit/s", h, ref, per, seeds))
    print()
    if n2s and n2a:
        print("ns-2 AODV runs, route-failed notices per run (mean): "
              + ", ".join(f"{h} hops {p} {statistics.mean(v):.1f}" for (h, p), v in sorted(fails.items(), key=lambda x: (int(x[0][0]), x[0][1])))
              + "\n")
    for fac, svs in res.items():
        marked = [sv for sv in svs if (sv[0] < 0.90 or sv[0] > 1.11) and (sv[2] < 1 or sv[1] > 1)]
        detect = [sv for sv in svs if sv[2] < 1 or sv[1] > 1]
        hurt = [sv for sv in detect if sv[2] < 1]
        print(f"- {fac}: {len(svs)} comparisons, {len(detect)} with an interval excluding 1 "
              f"({len(hurt)} of them RBP hurt more than Reno), {len(marked)} marked (outside [0.90, 1.11]); "
              f"range of estimates {min(s[0] for s in svs):.3f}-{max(s[0] for s in svs):.3f}")
    print()


if __name__ == "__main__":
    claim78()
    claim79()
