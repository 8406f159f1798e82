#!/usr/bin/env python3
"""The ns-2 interference rule as a sensitivity check (issue 28, session 40).

    python3 scripts/ns2_interference_range.py DIR [DIR ...]

Each DIR is the output of an experiment with a
`radio.interference_floor_at_carrier_sense` axis (false: meshbed's -102 dBm
interference floor; true: ns-2's rule, no signal below the carrier-sense
threshold is modelled), e.g. examples/sensitivity/ns2-interference-range-*.toml.
For every point of the other axes it prints, over the paired seeds:

* each protocol's aggregate goodput per run (the sum over its flows) with the
  rule ÷ without it: geometric mean of the per-seed ratios, Student-t 95%
  interval on the log ratios;
* the experiment's `compare_against` ratio (e.g. default ATP ÷ NewReno), as
  meshbed's paired.csv gives it, without and with the rule, side by side;
* how many runs gave the same aggregate goodput to the bit both ways.

Standard library only; t_interval is scripts/paired_claims.py's.
"""
import csv
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_claims import t_interval  # noqa: E402

AXIS = "radio.interference_floor_at_carrier_sense"


def geo_ratio(pairs):
    logs = [math.log(a / b) for a, b in pairs if a > 0 and b > 0]
    if len(logs) < 2:
        return None
    m, lo, hi = t_interval(logs)
    return math.exp(m), math.exp(lo), math.exp(hi), len(logs), len(pairs) - len(logs)


def fmt(r):
    if r is None:
        return "n/a"
    m, lo, hi, n, zero = r
    z = f", {zero} with a zero" if zero else ""
    return f"{m:.3f} [{lo:.3f}, {hi:.3f}] (n = {n}{z})"


def numeric(values):
    """A sort key that orders numbers as numbers (5 before 25)."""
    out = []
    for v in values:
        try:
            out.append((0, float(v), ""))
        except ValueError:
            out.append((1, 0.0, v))
    return out


def report(out_dir):
    flows_path = os.path.join(out_dir, "flows.csv")
    if not os.path.exists(flows_path):
        sys.exit(f"ns2_interference_range: {flows_path}: no such file (run the experiment first)")
    with open(flows_path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or AXIS not in rows[0]:
        sys.exit(f"ns2_interference_range: {flows_path}: expected a column {AXIS}")
    header = list(rows[0].keys())
    # The other sweep axes: the columns between `point` and `rep`.
    axes = header[header.index("point") + 1 : header.index("rep")]
    others = [a for a in axes if a not in (AXIS, "protocol")]
    aggregate = defaultdict(float)  # (other axes, protocol, rule, seed) -> bit/s
    for r in rows:
        key = (tuple(r[a] for a in others), r["protocol"], r[AXIS], r["seed"])
        aggregate[key] += float(r["goodput_bps"])
    print(f"# {out_dir}")
    print(f"\n## Aggregate goodput with ns-2's rule ÷ without, per protocol ({', '.join(others) or 'one point'})")
    points = sorted({(k[0], k[1]) for k in aggregate}, key=lambda p: (numeric(p[0]), p[1]))
    same = total = 0
    for other, protocol in points:
        pairs = []
        for (o, p, rule, seed), v in aggregate.items():
            if (o, p, rule) == (other, protocol, "true"):
                without = aggregate.get((o, p, "false", seed))
                if without is not None:
                    pairs.append((v, without))
                    same += v == without
                    total += 1
        label = " ".join(f"{a}={v}" for a, v in zip(others, other))
        mean_without = sum(b for _, b in pairs) / len(pairs) / 1e3
        mean_with = sum(a for a, _ in pairs) / len(pairs) / 1e3
        print(f"{label} {protocol}: {fmt(geo_ratio(pairs))}; mean {mean_without:.0f} -> {mean_with:.0f} kbit/s")
    print(f"runs with the same aggregate goodput both ways: {same} of {total}")
    paired_path = os.path.join(out_dir, "paired.csv")
    if os.path.exists(paired_path):
        with open(paired_path, newline="") as f:
            paired = list(csv.DictReader(f))
        print("\n## paired.csv (value ÷ reference over the same seeds), without and with the rule")
        by_point = defaultdict(dict)
        for r in paired:
            rule = "true" if f"{AXIS}=true" in r["point"] else "false"
            base = r["point"].replace(f" {AXIS}=true", "").replace(f" {AXIS}=false", "")
            by_point[base][rule] = r
        def point_key(item):
            return numeric(v.split("=", 1)[-1] for v in item[0].split(" "))

        for base, both in sorted(by_point.items(), key=point_key):
            cells = []
            for rule in ("false", "true"):
                r = both.get(rule)
                cells.append(
                    "n/a"
                    if r is None
                    else f"{float(r['ratio']):.3f} [{float(r['ci95_low']):.3f}, {float(r['ci95_high']):.3f}]"
                )
            ref = next(iter(both.values()))["reference"]
            print(f"{base} ÷ {ref}: -102 dBm {cells[0]}; at carrier sense {cells[1]}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for d in sys.argv[1:]:
        report(d)
        print()


if __name__ == "__main__":
    main()
