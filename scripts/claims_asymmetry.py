#!/usr/bin/env python3
"""Verdict numbers for claim 89 of docs/RESULTS.md (seed 002 §2.5 (ii), data and ACK
paths ("If the forward and reverse paths are not the same, the progress of the TCP connection will
be dependent on both the forward path and reverse path reliability. Thus, the chances of a
connection stalling increase when different paths are used").

Usage:
    python3 scripts/claims_asymmetry.py [ROOT]     # ROOT defaults to results/claims

It reads (each command is in its experiment file's header):

* ROOT/seed002-route-failures (examples/claims/seed002-route-failures.toml): the paper's mobile
  network over DSR at 20 m/s (its setting), 1, 5 and 25 flows, default ATP and NewReno, seeds
  1-20, every flow traced;
* ROOT/seed002-asymmetry-aodv (examples/claims/seed002-asymmetry-aodv.toml): the same over AODV
  (sensitivity check; skipped if missing).

Definitions, per flow (its own rows of routes.csv and traces.csv):

* Path state: the route log's paths-symmetric / paths-asymmetric entries (the simulator compares
  the last data packet's path at the destination with the reverse of the last feedback packet's
  path at the source whenever either arrives). The flow is observed from its first such entry
  (both paths known) to the end of the run (100 s).
* Stall: a gap of more than 1 s between consecutive deliveries (delivered_bytes samples at the
  receiver), or from the last delivery to the end of the run. Its onset is the delivery before the
  gap; a stall is charged to the path state at its onset. Stalled time: the gaps' length, split by
  the state in force during them.
* Route failures: route-failed entries at either end, charged to the state at that instant.

Within a flow (against flows that differ: long paths are both more often asymmetric and more
often stalled): for each flow with at least 5 s in each state, its stalled share of time when
asymmetric minus when symmetric; mean over those flows with a Student-t interval.

Per setting (routing, protocol, flows per run), pooled over the runs' flows: time in each state,
stall onsets per 100 s in each state, and their ratio (asymmetric / symmetric): the hazard ratio.
Likewise the share of time stalled, and route failures per 100 s. 95% intervals by resampling
runs (percentile bootstrap, 2,000 resamples, random.Random(1)); the share of time asymmetric is a
mean over runs with a Student-t interval.

Standard library only.
"""
import bisect
import os
import random
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from claims_route_failures import load, mean_ci, fmt  # noqa: E402

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join("results", "claims")
DUR = 100.0
GAP_S = 1.0
# A flow enters the within-flow comparison with at least this long in each state.
MIN_STATE_S = 5.0
BOOT = 2000


def flow_counts(routes, deliveries):
    """[time, onsets, stalled_s, failures] for (symmetric, asymmetric), or None if never observed."""
    states = [(t, ev == "paths-symmetric") for t, _, ev in routes if ev in ("paths-symmetric", "paths-asymmetric")]
    if not states:
        return None
    states.sort()
    times = [t for t, _ in states]

    def state_at(t):
        i = bisect.bisect_right(times, t) - 1
        return states[max(i, 0)][1]

    t0 = states[0][0]
    out = {True: [0.0, 0, 0.0, 0], False: [0.0, 0, 0.0, 0]}
    bounds = times + [DUR]
    for (t, sym), end in zip(states, bounds[1:]):
        out[sym][0] += max(0.0, min(end, DUR) - t)
    # Deliveries from the observation start; the gap from t0 to the first one counts too.
    ts = [t0] + [t for t, _ in deliveries if t > t0] + [DUR]
    for a, b in zip(ts, ts[1:]):
        if b - a <= GAP_S:
            continue
        out[state_at(a)][1] += 1
        # Split the gap's length by the states in force.
        cuts = [a] + [t for t in times if a < t < b] + [b]
        for x, y in zip(cuts, cuts[1:]):
            out[state_at(x)][2] += y - x
    for t, _, ev in routes:
        if ev == "route-failed" and t0 <= t < DUR:
            out[state_at(t)][3] += 1
    return out


def ratio(runs, idx, per_time=True):
    """Pooled asymmetric / symmetric rate of field idx over runs."""
    num = {s: sum(r[s][idx] for r in runs) for s in (True, False)}
    den = {s: sum(r[s][0] for r in runs) for s in (True, False)}
    if min(den.values()) <= 0 or num[True] <= 0:
        return None
    return (num[False] / den[False]) / (num[True] / den[True])


def boot(runs, idx):
    rng = random.Random(1)
    xs = []
    for _ in range(BOOT):
        r = ratio([rng.choice(runs) for _ in runs], idx)
        if r is not None:
            xs.append(r)
    xs.sort()
    if len(xs) < BOOT // 2:
        return float("nan"), float("nan")
    return xs[int(0.025 * len(xs))], xs[int(0.975 * len(xs)) - 1]


def analyse(path, title):
    if not os.path.exists(os.path.join(path, "routes.csv")):
        print(f"*{path} is missing: run the experiment named in this script's docstring.*\n")
        return
    meta, _, tr, routes = load(path)
    per = defaultdict(list)  # (count, proto) -> [run totals]
    within = defaultdict(list)  # (count, proto) -> [stalled share asym - sym, per flow]
    unobserved = defaultdict(int)
    for point, (count, proto, seed) in sorted(meta.items(), key=lambda kv: kv[1]):
        total = {True: [0.0, 0, 0.0, 0], False: [0.0, 0, 0.0, 0]}
        flows = [k for k in tr if k[0] == point] + [k for k in routes if k[0] == point and k not in tr]
        for k in sorted(set(flows)):
            c = flow_counts(routes.get(k, []), tr.get(k, {}).get("delivered_bytes", []))
            if c is None:
                unobserved[(count, proto)] += 1
                continue
            if min(c[True][0], c[False][0]) >= MIN_STATE_S:
                within[(count, proto)].append(c[False][2] / c[False][0] - c[True][2] / c[True][0])
            for s in (True, False):
                total[s] = [x + y for x, y in zip(total[s], c[s])]
        per[(count, proto)].append(total)
    print(f"## {title}\n")
    print("| protocol | flows | time asymmetric (share, mean over runs) | stall onsets per 100 s: symmetric / asymmetric | hazard ratio asym / sym | stalled share of time: sym / asym | ratio | route failures per 100 s: sym / asym | within a flow: stalled share asym − sym (flows) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (count, proto), runs in sorted(per.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        shares = [r[False][0] / (r[False][0] + r[True][0]) for r in runs if r[False][0] + r[True][0] > 0]
        rate = {s: 100 * sum(r[s][1] for r in runs) / max(1e-9, sum(r[s][0] for r in runs)) for s in (True, False)}
        stall = {s: sum(r[s][2] for r in runs) / max(1e-9, sum(r[s][0] for r in runs)) for s in (True, False)}
        fail = {s: 100 * sum(r[s][3] for r in runs) / max(1e-9, sum(r[s][0] for r in runs)) for s in (True, False)}
        h, s_ = ratio(runs, 1), ratio(runs, 2)
        hl, hh = boot(runs, 1)
        sl, sh = boot(runs, 2)
        hs = f"{h:.2f} [{hl:.2f}, {hh:.2f}]" if h is not None else "n/a"
        ss = f"{s_:.2f} [{sl:.2f}, {sh:.2f}]" if s_ is not None else "n/a"
        print(f"| {proto} | {count} | {fmt(mean_ci(shares), 3)} | {rate[True]:.2f} / {rate[False]:.2f} | {hs} | "
              f"{stall[True]:.3f} / {stall[False]:.3f} | {ss} | {fail[True]:.2f} / {fail[False]:.2f} | "
              f"{fmt(mean_ci(within[(count, proto)]), 3)} ({len(within[(count, proto)])}) |")
    if any(unobserved.values()):
        print("\nFlows never observed with both paths known (no feedback ever returned): "
              + ", ".join(f"{p} {c} flows: {n}" for (c, p), n in sorted(unobserved.items())) + ".")
    print()


def main():
    analyse(os.path.join(ROOT, "seed002-route-failures"),
            "Claim 89 (seed 002 §2.5 (ii)): stalls against data/ACK path asymmetry, DSR (the paper's setting), 20 m/s")
    analyse(os.path.join(ROOT, "seed002-asymmetry-aodv"),
            "Claim 89, sensitivity: the same over AODV")


if __name__ == "__main__":
    main()
