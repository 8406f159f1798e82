#!/usr/bin/env python3
"""Verdict numbers for claims 82-85 of docs/RESULTS.md (seed 002: route failures, losses, SACK blocks).

Usage:
    python3 scripts/claims_route_failures.py [ROOT]     # ROOT defaults to results/claims

It reads these outputs (each command is in its experiment file's header) and prints markdown:

* ROOT/seed002-route-failures  (examples/claims/seed002-route-failures.toml): the paper's mobile
  network over DSR at 20 m/s, 1 and 25 flows, default ATP and NewReno, seeds 1-20, every flow
  traced (traces.csv) and every route log (routes.csv).
* ROOT/seed002-sack-chain  (examples/claims/seed002-sack-chain.toml): default ATP on testbed A's
  6-hop chain, MAC retries 0 and 6, seeds 1-20, traced (claim 85 only; skipped if missing).

Definitions (t is simulated time; a flow's events are its own rows of routes.csv and traces.csv):

* Failure: a routes.csv row side = sender, event = route-failed (the sender's routing lost its
  route to the receiver), after the flow was established (TCP: its first rtt_s sample; ATP: its
  first d_s_us sample) and at least 2 s before the run's end.
* Timeout (NewReno): a slow_start = 1 sample other than the connection's first. meshbed's NewReno
  enters slow start only at its start and on a retransmission timeout (after fast recovery cwnd =
  ssthresh, but RFC 6582's min(ssthresh, FlightSize + MSS) can leave cwnd below ssthresh), so a
  later entry with cwnd at the loss window (1 segment) is an RTO expiry with data outstanding;
  entries with a larger cwnd (after fast recovery) are counted apart (checked against the
  flows.csv `timeouts` column, which also counts SYN timeouts: printed). RTO_f is the last rto_s sample before the failure.
* Claim 82: a failure is "followed by a timeout" if a timeout falls in (t_f, t_f + RTO_f + 1 s]
  (the retransmission timer running at t_f fires at most RTO_f later unless an ACK restarts it;
  1 s of slack for ACKs already in flight); also with a fixed 2 s window. A failure that comes while
  the sender is already in a timeout (a timeout before t_f with no rtt_s sample since) is counted
  separately as "inside an outage" and left out of the first share. Chance: the same test at 10
  random instants of the flow's established life per failure (random.Random(1)) outside an
  outage, i.e. how often a timeout follows an arbitrary instant; the difference is paired by run.
  A second table counts every failure, one inside an outage as timed out, against the chance that
  a random instant is inside an outage or followed by a timeout. Per run the share over its
  failures; mean over runs (with >= 1 failure) with a Student-t 95% interval; the pooled share
  over all failures beside it.
* Claim 83: rates in packets per second. ATP: the nominal rate 1/D_s (step function of d_s_us),
  and the sending rate = 1/D_s outside probing, 0 while probing (probing samples: 1 or 2 enter,
  0 leave; probes only are sent then). NewReno: cwnd_segments / srtt, srtt the RFC 6298 EWMA
  (1/8) of its rtt_s samples, 0 between a timeout and the next rtt_s sample. Pre-failure rate =
  the time-weighted mean of the sending rate over [t_f - 2 s, t_f) (failures with a pre-rate of 0
  are skipped). (i) ATP's "does not decrease its rate": r_resume / r_before, where r_before is
  1/D_s just before t_f and r_resume is 1/D_s 0.1 s after probing ends (the first feedback on the
  new route sets it); the share of failures with r_resume < 0.8 r_before, and the time spent
  probing. (ii) Catch-up time T80 = the time from t_f until the sending rate first reaches 80%
  of the pre-failure rate after first falling below it within 5 s of t_f (0 if it does not
  fall; sampled every 50 ms; never back: the time to the end of the run, a lower bound, counted
  as censored). The same T80 is also computed from the receiver's in-order
  delivery rate (delivered_bytes in the trailing 1 s window against the mean over [t_f - 2, t_f)),
  for both protocols alike. Per run the median T80 over its failures; paired by seed (same nodes,
  walks and flow pairs for both protocols) the ratio NewReno / ATP of the run medians, geometric
  mean over seeds with a t interval on the log ratios (medians of 0 set to 0.05 s, the sampling
  step).
* Claim 84: NewReno loss events = its retransmit_seq samples clustered (a sample more than
  max(RTO in force, 0.5 s) after the previous one starts a new event). A loss event is "followed
  by a route change" if the flow has a path-changed (destination) or route-failed (sender or
  receiver) entry in (t_first, t_first + 1 s], t_first the event's first retransmission
  (forward). As the loss itself precedes TCP's retransmission by up to an RTO, also the window
  [t_first - 2 s, t_last + 1 s] (around), path-changed only (forward), and any route change in
  (t_first, t_first + 3 s]. Chance: the same test
  at 10 random instants per event. Per run the share; mean over runs with a t interval.
* Claim 85: ATP's receiver traces sack_ranges at every feedback (one per epoch, plus immediate
  ones): the out-of-order ranges it holds, i.e. the holes behind them, of which the feedback
  carries the first 20. Per run: the share of feedbacks with more than 20 (holes not identified),
  the share of feedbacks with any range that have more than 20, and the share of the ranges
  (holes) beyond the 20th summed over feedbacks. Mean over runs with a t interval.

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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_claims import tq  # noqa: E402

DUR = 100.0
STEP = 0.05


def mean_ci(xs):
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    m = statistics.fmean(xs)
    if n < 2:
        return m, float("nan"), float("nan")
    h = tq(n - 1) * statistics.stdev(xs) / math.sqrt(n)
    return m, m - h, m + h


def geo_ci(ratios):
    m, lo, hi = mean_ci([math.log(r) for r in ratios])
    return math.exp(m), math.exp(lo), math.exp(hi)


def fmt(ci, d=2):
    m, lo, hi = ci
    return f"{m:.{d}f} [{lo:.{d}f}, {hi:.{d}f}]"


def load(path):
    """{point: (count, protocol, seed, extra)}, traces {(point, flow): {kind: [(t, v)]}}, routes."""
    with open(os.path.join(path, "flows.csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    meta, fl = {}, {}
    for r in rows:
        count = r.get("random_flows.count") or r.get("radio.mac.short_retry_limit") or "1"
        meta[r["point"]] = (int(float(count)), r["protocol"], int(r["seed"]))
        fl[(r["point"], int(r["flow"]))] = r
    tr = defaultdict(lambda: defaultdict(list))
    with open(os.path.join(path, "traces.csv"), newline="") as fh:
        for r in csv.DictReader(fh):
            tr[(r["point"], int(r["flow"]))][r["kind"]].append((float(r["t_s"]), float(r["value"])))
    for d in tr.values():
        for v in d.values():
            v.sort()
    routes = defaultdict(list)
    rp = os.path.join(path, "routes.csv")
    if os.path.exists(rp):
        with open(rp, newline="") as fh:
            for r in csv.DictReader(fh):
                routes[(r["point"], int(r["flow"]))].append((float(r["t_s"]), r["side"], r["event"]))
    return meta, fl, tr, routes


def step_at(series, t, default=None):
    """Value of a step function given by sorted (t, v) samples at time t (last sample <= t)."""
    i = bisect.bisect_right(series, (t, float("inf"))) - 1
    return series[i][1] if i >= 0 else default


def timeouts_of(k):
    """Slow-start entries (but the connection's first) at which cwnd is the loss window."""
    ss = [t for t, v in k.get("slow_start", []) if v == 1.0][1:]
    cw = k.get("cwnd_segments", [])
    return [t for t in ss if step_at(cw, t + 1e-9, 99.0) <= 1.0]


def other_slow_starts(k):
    """Slow-start entries (but the first) with cwnd above one segment: after fast recovery."""
    ss = [t for t, v in k.get("slow_start", []) if v == 1.0][1:]
    cw = k.get("cwnd_segments", [])
    return [t for t in ss if step_at(cw, t + 1e-9, 99.0) > 1.0]


def established_at(k, proto):
    s = k.get("rtt_s" if proto.startswith("tcp") else "d_s_us", [])
    return s[0][0] if s else None


def failures_of(rts, t0):
    return [t for t, side, ev in rts if side == "sender" and ev == "route-failed"
            and t0 is not None and t > t0 and t < DUR - 2.0]


# ---------------------------------------------------------------- claim 82

def claim82(meta, tr, routes):
    print("## Claim 82: does a NewReno route failure bring a timeout? (seed 002 §5.2.1)\n")
    rng = random.Random(1)
    # count -> seed -> counters: followed, n (not in an outage), chance hits, chance n, within 2 s,
    # inside an outage, fast retransmit instead, chance hits counting outages, chance n (all)
    per = defaultdict(dict)
    for (pt, flow), rts in routes.items():
        count, proto, seed = meta[pt]
        if proto != "tcp-newreno":
            continue
        k = tr.get((pt, flow), {})
        t0 = established_at(k, proto)
        fails = failures_of(rts, t0)
        tos = timeouts_of(k)
        rtts = [t for t, _ in k.get("rtt_s", [])]
        rto = k.get("rto_s", [])
        rtx = [t for t, _ in k.get("retransmit_seq", [])]
        acc = per[count].setdefault(seed, [0] * 9)

        def follows(t, w):
            i = bisect.bisect_right(tos, t)
            return i < len(tos) and tos[i] <= t + w

        def in_outage(t):
            i = bisect.bisect_right(tos, t) - 1
            return i >= 0 and bisect.bisect_right(rtts, tos[i]) == bisect.bisect_right(rtts, t)

        for tf in fails:
            for _ in range(10):
                tc = rng.uniform(t0, DUR - 2.0)
                if in_outage(tc):
                    acc[7] += 1
                    acc[8] += 1
                    continue
                hit = follows(tc, step_at(rto, tc, 1.0) + 1.0)
                acc[3] += 1
                acc[2] += hit
                acc[7] += hit
                acc[8] += 1
            if in_outage(tf):
                acc[5] += 1  # inside an outage: already timed out, no ACK since
                continue
            w = step_at(rto, tf, 1.0) + 1.0
            hit = follows(tf, w)
            acc[0] += hit
            acc[1] += 1
            acc[4] += follows(tf, 2.0)
            if not hit:
                j = bisect.bisect_right(rtx, tf)
                acc[6] += j < len(rtx) and rtx[j] <= tf + w
    print("Failures outside an outage (the sender not already waiting out a timeout):\n")
    print("| flows | runs with such a failure | failures (+ inside an outage) | timeout within RTO_f + 1 s: "
          "mean share over runs [95% CI] | pooled | within 2 s (pooled) | chance after a random "
          "instant outside an outage: mean over runs | difference from chance, paired by run [95% CI] | "
          "no timeout but a fast retransmit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for count in sorted(per):
        d = per[count]
        runs = [a for a in d.values() if a[1] and a[3]]
        tot = [sum(a[i] for a in d.values()) for i in range(9)]
        ci = mean_ci([a[0] / a[1] for a in runs])
        ch = mean_ci([a[2] / a[3] for a in runs])
        diff = mean_ci([a[0] / a[1] - a[2] / a[3] for a in runs])
        print(f"| {count} | {len(runs)} | {tot[1]} (+{tot[5]}) | {fmt(ci)} | {tot[0] / max(tot[1], 1):.2f} | "
              f"{tot[4] / max(tot[1], 1):.2f} | {fmt(ch)} | {diff[0]:+.2f} [{diff[1]:+.2f}, {diff[2]:+.2f}] | "
              f"{tot[6]} of {tot[1] - tot[0]} |")
    print()
    print("Every failure, one inside an outage counted as timed out (the timeout came first):\n")
    print("| flows | runs with a failure | failures | in a timeout or followed by one: mean over runs [95% CI] | "
          "chance at a random instant | difference from chance [95% CI] |")
    print("|---|---|---|---|---|---|")
    for count in sorted(per):
        d = per[count]
        runs = [a for a in d.values() if a[1] + a[5] and a[8]]
        xs = [(a[0] + a[5]) / (a[1] + a[5]) for a in runs]
        cs = [a[7] / a[8] for a in runs]
        diff = mean_ci([x - c for x, c in zip(xs, cs)])
        print(f"| {count} | {len(runs)} | {sum(a[1] + a[5] for a in runs)} | {fmt(mean_ci(xs))} | "
              f"{fmt(mean_ci(cs))} | {diff[0]:+.2f} [{diff[1]:+.2f}, {diff[2]:+.2f}] |")
    print()


# ---------------------------------------------------------------- claim 83

def atp_rates(k):
    """Step functions: nominal 1/D_s (pkt/s) and probing state."""
    ds = [(t, 1e6 / v) for t, v in k.get("d_s_us", []) if v > 0]
    pr = [(t, 1.0 if v > 0 else 0.0) for t, v in k.get("probing", [])]
    return ds, pr


def tcp_rate_series(k):
    """cwnd/srtt (segments/s) as a step series over the change points, 0 in a timeout."""
    ev = []
    for t, v in k.get("cwnd_segments", []):
        ev.append((t, 0, v))
    for t, v in k.get("rtt_s", []):
        ev.append((t, 1, v))
    for t in timeouts_of(k):
        ev.append((t, 2, 0.0))
    ev.sort()
    cwnd, srtt, stalled, out = None, None, False, []
    for t, kind, v in ev:
        if kind == 0:
            cwnd = v
        elif kind == 1:
            srtt = v if srtt is None else 0.875 * srtt + 0.125 * v
            stalled = False
        else:
            stalled = True
        r = 0.0 if (stalled or cwnd is None or srtt is None or srtt <= 0) else cwnd / srtt
        out.append((t, r))
    return out


def sending_rate_fn(k, proto):
    if proto.startswith("tcp"):
        s = tcp_rate_series(k)
        return lambda t: step_at(s, t, 0.0)
    ds, pr = atp_rates(k)
    return lambda t: 0.0 if step_at(pr, t, 0.0) > 0 else step_at(ds, t, 0.0)


def mean_over(f, a, b):
    n = max(1, int(round((b - a) / STEP)))
    return sum(f(a + (i + 0.5) * (b - a) / n) for i in range(n)) / n


def t80(f, tf, pre, dip_within=5.0):
    """Seconds from tf until f is back to 0.8 pre after first falling below it within
    dip_within s (0 if it never falls); (time, censored)."""
    t = tf
    while t < min(tf + dip_within, DUR):
        t += STEP
        if f(t) < 0.8 * pre:
            break
    else:
        return 0.0, False
    while t < DUR:
        t += STEP
        if f(t) >= 0.8 * pre:
            return t - tf, False
    return DUR - tf, True


def delivery_fn(k):
    d = k.get("delivered_bytes", [])
    ts = [t for t, _ in d]
    cum = [0.0]
    for _, v in d:
        cum.append(cum[-1] + v)

    def between(a, b):
        return cum[bisect.bisect_right(ts, b)] - cum[bisect.bisect_right(ts, a)]
    return between


def claim83(meta, tr, routes):
    print("## Claim 83: ATP's rate over a route failure and the time to catch up (seed 002 §5.2.1)\n")
    res = defaultdict(lambda: defaultdict(dict))  # count -> proto -> seed -> dict
    drops = defaultdict(list)  # count -> [(ratio, probing time)]
    for (pt, flow), rts in routes.items():
        count, proto, seed = meta[pt]
        k = tr.get((pt, flow), {})
        t0 = established_at(k, proto)
        fails = [t for t in failures_of(rts, t0) if t - 2.0 >= t0]
        if not fails:
            continue
        f = sending_rate_fn(k, proto)
        between = delivery_fn(k)
        acc = res[count][proto].setdefault(seed, {"t80": [], "cens": 0, "t80d": [], "censd": 0})
        if proto.startswith("atp"):
            ds, pr = atp_rates(k)
        for tf in fails:
            pre = mean_over(f, tf - 2.0, tf)
            if pre > 0:
                t, c = t80(f, tf, pre)
                acc["t80"].append(t)
                acc["cens"] += c
            pre_d = between(tf - 2.0, tf) / 2.0
            if pre_d > 0:
                t, c = t80(lambda x: between(x - 1.0, x), tf, pre_d)
                acc["t80d"].append(t)
                acc["censd"] += c
            if proto.startswith("atp"):
                rb = step_at(ds, tf - 1e-9, None)
                # probing ends: first 0 sample after tf
                ends = [t for t, v in pr if t > tf and v == 0.0]
                if rb and ends:
                    rr = step_at(ds, ends[0] + 0.1, None)
                    if rr:
                        drops[count].append((rr / rb, ends[0] - tf))
    print("(i) ATP's nominal rate 1/D_s across a failure: r_resume / r_before (0.1 s after probing ends, "
          "against just before the failure)\n")
    print("| flows | failures with a resume | median ratio | share with a cut below 0.8 | share raised above 1.25 | "
          "median time probing (s) |")
    print("|---|---|---|---|---|---|")
    for count in sorted(drops):
        xs = drops[count]
        rs = [r for r, _ in xs]
        print(f"| {count} | {len(xs)} | {statistics.median(rs):.2f} | {sum(r < 0.8 for r in rs) / len(rs):.2f} | "
              f"{sum(r > 1.25 for r in rs) / len(rs):.2f} | {statistics.median(p for _, p in xs):.2f} |")
    print()
    print("(ii) T80, seconds from the failure until the rate is back to 80% of its mean over the 2 s before "
          "(run medians; censored = never within the run)\n")
    print("| flows | measure | ATP: failures, median of run medians, censored | NewReno: failures, median, censored | "
          "NewReno ÷ ATP, paired by seed [95% CI] (seeds) |")
    print("|---|---|---|---|---|")
    out = {}
    for count in sorted(res):
        for key, cen, label in (("t80", "cens", "sending rate"), ("t80d", "censd", "delivery rate (1 s)")):
            cells = []
            med = {}
            for proto in ("atp-default", "tcp-newreno"):
                d = res[count].get(proto, {})
                allv = [x for a in d.values() for x in a[key]]
                med[proto] = {s: statistics.median(a[key]) for s, a in d.items() if a[key]}
                cens = sum(a[cen] for a in d.values())
                mm = statistics.median(med[proto].values()) if med[proto] else float("nan")
                cells.append(f"{len(allv)}, {mm:.2f}, {cens}")
            seeds = sorted(set(med["atp-default"]) & set(med["tcp-newreno"]))
            ratios = [max(med["tcp-newreno"][s], STEP) / max(med["atp-default"][s], STEP) for s in seeds]
            ci = geo_ci(ratios) if len(ratios) >= 2 else (float("nan"),) * 3
            out[(count, key)] = ci
            print(f"| {count} | {label} | {cells[0]} | {cells[1]} | {fmt(ci)} ({len(seeds)}) |")
    print()
    return out


# ---------------------------------------------------------------- claim 84

def claim84(meta, tr, routes):
    print("## Claim 84: is a NewReno loss event followed by a route change? (seed 002 §2.4)\n")
    rng = random.Random(1)
    per = defaultdict(dict)
    allflows = sorted(set(k for k in tr if meta[k[0]][1] == "tcp-newreno"))  # sorted: the chance draws do not depend on hash order
    for key in allflows:
        pt, flow = key
        count, proto, seed = meta[pt]
        k = tr[key]
        rts = routes.get(key, [])
        t0 = established_at(k, proto)
        if t0 is None:
            continue
        change = sorted(t for t, side, ev in rts if ev == "path-changed" or ev == "route-failed")
        pathc = sorted(t for t, side, ev in rts if ev == "path-changed")
        rto = k.get("rto_s", [])
        rtx = [t for t, _ in k.get("retransmit_seq", [])]
        events = []
        for t in rtx:
            if events and t - events[-1][1] <= max(step_at(rto, events[-1][1], 1.0), 0.5):
                events[-1][1] = t
            else:
                events.append([t, t])
        acc = per[count].setdefault(seed, [0] * 10)

        def any_in(xs, a, b):
            i = bisect.bisect_right(xs, a)
            return i < len(xs) and xs[i] <= b

        for a, b in events:
            acc[0] += 1
            acc[1] += any_in(change, a, a + 1.0)
            acc[2] += any_in(change, a - 2.0, b + 1.0)
            acc[3] += any_in(pathc, a, a + 1.0)
            acc[8] += any_in(change, a, a + 3.0)
            for _ in range(10):
                tc = rng.uniform(t0, DUR)
                acc[4] += 1
                acc[5] += any_in(change, tc, tc + 1.0)
                acc[6] += any_in(change, tc - 2.0, tc + 1.0 + (b - a))
                acc[7] += any_in(pathc, tc, tc + 1.0)
                acc[9] += any_in(change, tc, tc + 3.0)
    print("| flows | runs | loss events | route change within 1 s after (forward): mean over runs [95% CI] | "
          "chance | in [first − 2 s, last + 1 s] (around) | chance | path change only, forward | chance | "
          "route change within 3 s after | chance |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    out = {}
    for count in sorted(per):
        d = per[count]
        runs = [a for a in d.values() if a[0]]
        f = lambda i: mean_ci([a[i] / a[0] for a in runs])  # noqa: E731
        g = lambda i: mean_ci([a[i] / a[4] for a in runs])  # noqa: E731
        out[count] = (f(1), f(2), g(5), g(6))
        print(f"| {count} | {len(runs)} | {sum(a[0] for a in runs)} | {fmt(f(1))} | {fmt(g(5))} | {fmt(f(2))} | "
              f"{fmt(g(6))} | {fmt(f(3))} | {fmt(g(7))} | {fmt(f(8))} | {fmt(g(9))} |")
    print()
    return out


# ---------------------------------------------------------------- claim 85

def claim85(meta, tr, title):
    per = defaultdict(list)
    maxr = defaultdict(int)
    for (pt, flow), k in tr.items():
        count, proto, seed = meta[pt]
        if not proto.startswith("atp"):
            continue
        s = [v for _, v in k.get("sack_ranges", [])]
        if not s:
            continue
        per[(count, seed)].append(s)
        maxr[count] = max(maxr[count], int(max(s)))
    rows = defaultdict(lambda: [[], [], [], 0, 0, 0])
    for (count, seed), flows in per.items():
        fb = [v for s in flows for v in s]
        withr = [v for v in fb if v > 0]
        r = rows[count]
        r[0].append(sum(v > 20 for v in fb) / len(fb))
        if withr:
            r[1].append(sum(v > 20 for v in withr) / len(withr))
        tot = sum(fb)
        if tot:
            r[2].append(sum(max(0.0, v - 20) for v in fb) / tot)
        r[3] += len(fb)
        r[4] += sum(v > 20 for v in fb)
        r[5] += len(withr)
    print(title)
    print("| setting | runs | feedbacks (with a hole) | feedbacks with > 20 ranges: mean share over runs [95% CI] | "
          "of those with a hole | holes beyond the 20th | pooled count > 20 | largest |")
    print("|---|---|---|---|---|---|---|---|")
    out = {}
    for count in sorted(rows):
        r = rows[count]
        out[count] = mean_ci(r[0])
        print(f"| {count} | {len(r[0])} | {r[3]} ({r[5]}) | {fmt(mean_ci(r[0]), 3)} | {fmt(mean_ci(r[1]), 3)} | "
              f"{fmt(mean_ci(r[2]), 3)} | {r[4]} | {maxr[count]} |")
    print()
    return out


def check_timeouts(meta, fl, tr):
    n = bad = 0
    for key, r in fl.items():
        if meta[key[0]][1] != "tcp-newreno" or not r.get("timeouts"):
            continue
        n += 1
        bad += len(timeouts_of(tr.get(key, {}))) > int(float(r["timeouts"]))
    print(f"*Check: NewReno flows whose traced slow-start re-entries exceed flows.csv's timeouts: {bad} of {n}.*\n")


def main():
    p = os.path.join(ROOT, "seed002-route-failures")
    if os.path.exists(os.path.join(p, "flows.csv")):
        meta, fl, tr, routes = load(p)
        check_timeouts(meta, fl, tr)
        claim82(meta, tr, routes)
        claim83(meta, tr, routes)
        claim84(meta, tr, routes)
        claim85(meta, tr, "## Claim 85: ATP feedbacks holding more than 20 out-of-order ranges (seed 002 §4.2.2)\n\n"
                "Mobile network, DSR, 20 m/s; setting = flows per run.\n")
    else:
        print(f"*{p} is missing: run examples/claims/seed002-route-failures.toml.*\n")
    p = os.path.join(ROOT, "seed002-sack-chain")
    if os.path.exists(os.path.join(p, "flows.csv")):
        meta, fl, tr, routes = load(p)
        claim85(meta, tr, "Testbed A, 6 hops, one flow; setting = MAC short retry limit.\n")


if __name__ == "__main__":
    main()
