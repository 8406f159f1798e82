#!/usr/bin/env python3
"""Claims 20-24 of docs/RESULTS.md with intervals over seeds: what seed 002 §2
(Figs. 2(c), 3, 4, 5) measures of TCP NewReno in the ATP paper's network.

Usage:
    meshbed experiment run examples/verdicts/seed002-tcp-analysis.toml --jobs 1 --no-store \
        --out results/verdicts/tcp-analysis
    python3 scripts/paired_claims_tcp.py [DIR]   # DIR defaults to results/verdicts/tcp-analysis

Every quantity is first reduced to one number per run (seed) from flows.csv, the
same reduction meshbed's RouteSummary makes per point (crates/experiment/src/run/
summary.rs), then averaged over the runs with a Student-t 95% interval:
* claim 20: slow-start entries per flow, and the share of a flow's time in slow
  start (slow_start_time_s / duration_s), mean over the run's TCP flows;
* claim 21: the flows' largest RTO (max_rto_s), mean over the run's flows;
* claim 22: retry-limit drops over all the flows' network-layer drops, pooled over
  the run's flows (runs without a drop are left out and counted);
* claim 23: routes recomputed over a new path over all recomputed, pooled over the
  run's flows (runs without one are left out and counted);
* claim 24: "route failed" notices per flow at the sender (the data's route) and at
  the receiver (the ACKs' route); their ratio per run and the t interval of the
  log ratio where both are non-zero (the geometric mean over runs).
Standard library only; t_interval from scripts/paired_claims.py.
"""
import csv
import math
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_claims import t_interval  # noqa: E402

DIR = sys.argv[1] if len(sys.argv) > 1 else "results/verdicts/tcp-analysis"
SPEED = "mobility.max_speed_mps"
FLOWS = "random_flows.count"


def load(path):
    runs = defaultdict(list)  # (speed, flows, rep) -> rows
    with open(os.path.join(path, "flows.csv")) as f:
        for row in csv.DictReader(f):
            if row["error"]:
                sys.exit(f"{path}/flows.csv: point {row['point']} rep {row['rep']} failed: {row['error']}")
            key = (float(row[SPEED]), int(row[FLOWS]), int(row["rep"]))
            runs[key].append(row)
    return runs


def per_run(rows):
    n = len(rows)
    f = lambda k: [float(r[k]) for r in rows if r[k] != ""]  # noqa: E731
    shares = [float(r["slow_start_time_s"]) / float(r["duration_s"])
              for r in rows if r["slow_start_time_s"] != "" and float(r["duration_s"]) > 0]
    drops = sum(sum(int(r[k]) for k in r if k.startswith("drop_")) for r in rows)
    link = sum(int(r["drop_retry_limit"]) for r in rows)
    recomputed = sum(int(r["routes_recomputed"]) for r in rows)
    new = sum(int(r["routes_new"]) for r in rows)
    at_s = sum(int(r["route_failed_at_sender"]) for r in rows) / n
    at_r = sum(int(r["route_failed_at_receiver"]) for r in rows) / n
    return {
        "slow_starts": statistics.fmean(f("slow_start_entries")),
        "ss_share": statistics.fmean(shares) if shares else None,
        "max_rto_s": statistics.fmean(f("max_rto_s")),
        "link_share": link / drops if drops else None,
        "new_share": new / recomputed if recomputed else None,
        "fail_sender": at_s,
        "fail_receiver": at_r,
        "fail_log_ratio": math.log(at_s / at_r) if at_s > 0 and at_r > 0 else None,
    }


def cell(values, fmt="{:.2f}", exp=False):
    vs = [v for v in values if v is not None]
    left = len(values) - len(vs)
    if len(vs) < 2:
        return "n/a" + (f" ({left} runs without)" if left else "")
    m, lo, hi = t_interval(vs)
    if exp:
        m, lo, hi = math.exp(m), math.exp(lo), math.exp(hi)
    s = f"{fmt.format(m)} [{fmt.format(lo)}, {fmt.format(hi)}]"
    return s + (f" (n={len(vs)})" if left else "")


def main():
    runs = load(DIR)
    points = defaultdict(list)  # (speed, flows) -> per-run dicts
    for (speed, flows, _rep), rows in sorted(runs.items()):
        points[(speed, flows)].append(per_run(rows))
    reps = {len(v) for v in points.values()}
    print(f"# Claims 20-24 from {DIR}: {len(runs)} runs, {sorted(reps)} seeds per point "
          f"(mean over runs with a Student-t 95% interval)\n")
    cols = [
        ("slow starts / flow (20)", "slow_starts", "{:.1f}", False),
        ("time in slow start (20)", "ss_share", "{:.2f}", False),
        ("max RTO s (21)", "max_rto_s", "{:.1f}", False),
        ("link-failure share of losses (22)", "link_share", "{:.2f}", False),
        ("new-route share (23)", "new_share", "{:.2f}", False),
        ("failures at sender / flow (24)", "fail_sender", "{:.2f}", False),
        ("at receiver / flow (24)", "fail_receiver", "{:.2f}", False),
        ("sender ÷ receiver, geo. mean (24)", "fail_log_ratio", "{:.2f}", True),
    ]
    print("| m/s | flows | " + " | ".join(c[0] for c in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for (speed, flows), rs in sorted(points.items()):
        cells = [cell([r[k] for r in rs], fmt, exp) for _, k, fmt, exp in cols]
        print(f"| {speed:g} | {flows} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
