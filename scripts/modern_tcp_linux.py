#!/usr/bin/env python3
"""Issue 27: ATP against today's TCP set as Linux runs it, beside the built-in comparison.

Usage:
    python3 scripts/modern_tcp_linux.py [ROOT]     # ROOT defaults to results

Reads, for each testbed (a, b) and load (single, five):

* ROOT/modern-tcp-linux-T-L: `meshbed experiment run examples/sensitivity/modern-tcp-linux-T-L.toml`
  (every TCP with Linux's initial window 10, delayed ACKs and 40 ms delayed-ACK timer);
* ROOT/modern-tcp-T-L, if present: `meshbed experiment run modern-tcp-T-L --out ROOT/modern-tcp-T-L`
  (the built-in, the engines' defaults: initial window 1, an ACK per segment).

and prints, per MAC retry limit and hop count, each protocol's goodput / tcp-cubic's on the same
seed (the run's aggregate over its flows; geometric mean over the paired seeds with a Student-t
95% interval on the log ratios), with Linux's settings and, where the built-in ran, with the
defaults; then tcp-cubic with Linux's settings / tcp-cubic with the defaults, paired by seed
(the same network and seed: only the TCP settings differ). ATP's flows take no TCP setting, so
its runs must be the same in both files: the script says whether they are.

Standard library only.
"""
import csv
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from claims_added import geo_ci  # noqa: E402

ROOT = sys.argv[1] if len(sys.argv) > 1 else "results"
RETRY = "radio.mac.short_retry_limit"
SHOWN = ["atp-default", "atp-adaptive", "tcp-sack", "tcp-bbr"]


def aggregate(path):
    """{(protocol, retries, hops): {seed: aggregate goodput bps}}, or None if missing."""
    f = os.path.join(path, "flows.csv")
    if not os.path.exists(f):
        return None
    out = defaultdict(lambda: defaultdict(float))
    with open(f, newline="") as fh:
        for r in csv.DictReader(fh):
            out[(r["protocol"], int(r[RETRY]), int(r["hops"]))][int(r["seed"])] += float(r["goodput_bps"])
    return out


def ratio(num, den):
    seeds = [s for s in sorted(num) if s in den and num[s] > 0 and den[s] > 0]
    if len(seeds) < 2:
        return "n/a"
    m, lo, hi = geo_ci([num[s] / den[s] for s in seeds])
    return f"{m:.2f} [{lo:.2f}, {hi:.2f}]"


def main():
    for testbed in ("a", "b"):
        for load in ("single", "five"):
            linux = aggregate(os.path.join(ROOT, f"modern-tcp-linux-{testbed}-{load}"))
            preset = aggregate(os.path.join(ROOT, f"modern-tcp-{testbed}-{load}"))
            name = f"modern-tcp-linux-{testbed}-{load}"
            if linux is None:
                print(f"*{ROOT}/{name} is missing.*\n")
                continue
            hops = sorted({h for _, _, h in linux})
            head = "| retries | protocol | " + " | ".join(f"{h} hop{'s' if h > 1 else ''}" for h in hops) + " |"
            rule = "|---|---|" + "---|" * len(hops)
            print(f"#### `{name}`: goodput / tcp-cubic's, same seed; Linux's settings (the built-in's defaults "
                  "below where it ran)\n")
            print(head)
            print(rule)
            for retries in sorted({r for _, r, _ in linux}):
                for p in SHOWN:
                    cells = [ratio(linux[(p, retries, h)], linux[("tcp-cubic", retries, h)]) for h in hops]
                    print(f"| {retries} | {p} | " + " | ".join(cells) + " |")
                    if preset is not None and (p, retries, hops[0]) in preset:
                        cells = [ratio(preset[(p, retries, h)], preset[("tcp-cubic", retries, h)]) for h in hops]
                        print(f"| {retries} | {p}, defaults | " + " | ".join(cells) + " |")
            print()
            if preset is None:
                print(f"*{ROOT}/modern-tcp-{testbed}-{load} is missing: no comparison with the defaults.*\n")
                continue
            print(f"tcp-cubic with Linux's settings / with the defaults, paired by seed ({name}):\n")
            print(head)
            print(rule)
            for retries in sorted({r for _, r, _ in linux}):
                for p in ("tcp-cubic", "tcp-sack", "tcp-bbr"):
                    cells = [ratio(linux[(p, retries, h)], preset[(p, retries, h)]) for h in hops]
                    print(f"| {retries} | {p} | " + " | ".join(cells) + " |")
            same = all(linux[(p, r, h)] == preset[(p, r, h)]
                       for (p, r, h) in linux if p.startswith("atp-"))
            print(f"\nATP's runs identical in both files: {'yes' if same else 'NO'}.\n")


if __name__ == "__main__":
    main()
