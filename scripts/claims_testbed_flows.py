#!/usr/bin/env python3
"""Paired-seed verdicts for five thesis claims (seed 001): claims 64-68 of docs/RESULTS.md
("Claims added for issue 27"); this script's claims A-E are those, in order.

Usage:
    python3 scripts/claims_testbed_flows.py [ROOT]        # ROOT defaults to results/verdicts

ROOT holds the output directories a-single, a-two, a-five, b-single, b-two, b-five of
examples/verdicts/testbed-*-paired.toml, each run as (the header of each file)
    meshbed experiment run examples/verdicts/testbed-a-two-paired.toml --jobs 1 --no-store --out ROOT/a-two
(20 seeds; hops 1-6; the six protocols; radio.mac.short_retry_limit 0 = the thesis' setting, seed 001
§4.2, which decides every verdict, and 6 = the sensitivity check, printed beside it). The directory
names and the data model are those of scripts/paired_claims.py, whose Exp class and statistics are
imported (its ROOT is set to this script's ROOT).

Claims (seed 001):
  A  abstract / §7: adaptive's gain over default "is reduced when the links become saturated with more
     simultaneous flows" (testbed A, 1 vs 2 vs 5 flows).
  B  §7: "For low bit-rate, high-quality links [testbed B], the advantages of adaptive ATP with respect
     to goodput are much less significant" (than on testbed A).
  C  §5.2, Fig. 5.4(b): per-flow goodput CDF at 6 hops, two flows, testbed A, "verifying the
     performance advantage of ATP over TCP Tahoe".
  D  §5.3, Fig. 5.6: testbed B, "not much difference exhibited between different protocols in the one
     and two flow scenarios".
  E  §5.3, Fig. 5.7(a): two flows on testbed B, "TCP generally exhibits the worst fairness",
     "aggressive ATP generally shows the best fairness", and "the goodput advantage of both TCP and
     default ATP ... achieved at the sacrifice of fairness" (the trade-off also checked at five flows,
     which the same figure and sentence cover).

Measures (a "run" is one seed of one protocol at one hop count and retry setting; "flows" are the
run's simultaneous 2 MB transfers; goodput = flows.csv goodput_bps, application bytes over the flow's
own duration):
  * goodput ratio X/Y at a hop count: geometric mean over the 20 seeds of the per-seed ratio of
    aggregate goodput (sum over the run's flows), Student-t 95% interval on the log ratios
    (paired_claims.Exp.ratio). A "gain" is that ratio (adaptive/default 1.64 = +64%).
  * over hops: the arithmetic mean over hops 1-6 of the per-hop ratios; 95% percentile bootstrap over
    seeds (10 000 resamples, the same resample at every hop, random seed 1; paired_claims.over_x).
  * ratio of gains between two experiments (A: k flows vs 1 flow; B: testbed B vs A), per hop:
    exp(mean log gain_1 - mean log gain_2) with a Welch t 95% interval (the two experiments' runs are
    different scenarios, so they are treated as independent samples, df by Welch-Satterthwaite,
    rounded down); over hops: (mean over hops of gain_1) / (mean over hops of gain_2) with a 95%
    percentile bootstrap resampling each experiment's seeds independently (10 000, seed 1).
  * unfairness of a run: population sd / mean of its per-flow goodputs (as summary.csv); unfairness
    ratio X/Y: as the goodput ratio, pairs where either run has zero unfairness excluded and counted.
  * C: per-flow goodput distribution at 6 hops = the 40 per-flow goodputs (20 seeds x 2 flows) of a
    protocol; quantiles by linear interpolation (statistics.quantiles, method "inclusive") at
    10/25/50/75/90%; "dominates" = the ATP variant's quantile above Tahoe's at every decile
    10..90%; P(ATP > Tahoe) = share of all 40 x 40 (ATP flow, Tahoe flow) pairs with the ATP flow
    ahead; paired ratios of the run's aggregate, of its worse flow (min) and of its better flow (max).
  * D: spread at a hop count = max / min over the thesis' four protocols (default, aggressive,
    adaptive, Tahoe) of the per-protocol geometric mean of aggregate goodput over seeds (which equals
    the largest paired ratio between two of them when no pair is excluded), with the interval of that
    largest paired ratio; the same over the three ATP variants only; and max/min of the arithmetic
    means, for reference. Paired ratios X/Tahoe per hop.
  * E: per protocol mean unfairness and mean aggregate goodput; paired unfairness ratios and goodput
    ratios between the protocols, per hop and over hops.

Verdicts (printed for the primary setting, retries off, and for the sensitivity check; the rule of
docs/RESULTS.md, "How a verdict is reached"; none of these claims states a number, so each is a
direction or a trend claim and "yes" needs the intervals to show it):
  A  yes: over hops, the 2-flow and the 5-flow gains are each below the 1-flow gain (ratio-of-gains
     interval entirely below 1) and no per-hop ratio-of-gains interval lies above 1; partly: at least
     one of the two over-hops comparisons resolved below 1; no otherwise.
  B  at each flow count (1, 2, 5), over hops: "less" = ratio of gains B/A with its interval below 1;
     "much less" = in addition the upper end of that interval at most h = (1 + (gA - 1) / 2) / gA,
     the ratio of gains at which B's gain (ratio - 1) would be half of A's gain gA - 1 (gA = A's
     over-hops gain; a negative gain on B counts as less than half). yes: "much less" at all three flow counts; partly: "less" at
     one or more; no otherwise.
  C  yes: for each of the three ATP variants the 6-hop paired aggregate ratio to Tahoe has its
     interval above 1 and the variant's per-flow distribution dominates Tahoe's; partly: for some
     variants; no: for none.
  D  "not much difference" = spread at most 1.25 (the rule's +-25%), judged over the four protocols the
     thesis ran and Fig. 5.6 shows (its sentence is about all of them). yes: at every hop, one and
     two flows; partly: at some hops; no: at no hop. The spread over the three ATP variants alone is
     printed beside it and does not decide (the sentence makes no separate claim about them).
  E  three parts, over hops, two flows: (i) Tahoe's unfairness above each ATP variant's (interval of
     Tahoe/X above 1); (ii) aggressive's below each other protocol's (interval of X/aggressive above
     1); (iii) trade-off, at two and at five flows: Tahoe and default each ahead in goodput of
     adaptive and of aggressive (interval above 1) and less fair than both (interval above 1).
     yes: all parts; partly: some; no: none. Each part's pieces are listed.

Standard library only.
"""
import math
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired_claims as pc  # noqa: E402

ROOT = sys.argv[1] if len(sys.argv) > 1 else "results/verdicts"
pc.ROOT = ROOT
S = pc.SHORT
DEF, AGG, ADA, TAH = "atp-default", "atp-aggressive", "atp-adaptive", "tcp-tahoe"
ATP = [DEF, AGG, ADA]
THESIS = [DEF, AGG, ADA, TAH]
ALL = [DEF, AGG, ADA, TAH, "tcp-reno", "tcp-newreno"]
RTS = (0, 6)
BOOT = 10000


def rt_name(rt):
    return "off" if rt == 0 else "on"


def fr(v, d=2):
    return f"{v[0]:.{d}f}× [{v[1]:.{d}f}, {v[2]:.{d}f}]"


def frx(v, d=2):
    s = fr(v, d)
    return s + (f" ({v[4]} excl.)" if len(v) > 4 and v[4] else "")


def above(v):
    return v[1] > 1.0


def below(v):
    return v[2] < 1.0


def welch(l1, l2):
    """exp of mean(l1) - mean(l2) with a Welch t 95% interval (independent samples)"""
    n1, n2 = len(l1), len(l2)
    m1, m2 = statistics.fmean(l1), statistics.fmean(l2)
    a, b = statistics.variance(l1) / n1, statistics.variance(l2) / n2
    se = math.sqrt(a + b)
    d = m1 - m2
    if se == 0:
        return math.exp(d), math.exp(d), math.exp(d)
    df = (a + b) ** 2 / (a * a / (n1 - 1) + b * b / (n2 - 1))
    h = pc.tq(max(1, int(df))) * se
    return math.exp(d), math.exp(d - h), math.exp(d + h)


def ratio_of_gains(e1, e2, metric1, metric2, a, b, rt, xs):
    """per x: Welch ratio of gains; overall: ratio of over-x means with independent bootstrap"""
    per1 = {x: e1.logs(metric1, a, b, x, rt)[0] for x in xs}
    per2 = {x: e2.logs(metric2, a, b, x, rt)[0] for x in xs}
    perx = {x: welch(list(per1[x].values()), list(per2[x].values())) for x in xs}

    def over(per, reps):
        vals = []
        for x in xs:
            lg = [per[x][r] for r in reps if r in per[x]]
            if not lg:
                return None
            vals.append(math.exp(statistics.fmean(lg)))
        return statistics.fmean(vals)

    est = over(per1, e1.reps) / over(per2, e2.reps)
    rng = random.Random(1)
    bs = []
    for _ in range(BOOT):
        s1 = over(per1, [rng.choice(e1.reps) for _ in e1.reps])
        s2 = over(per2, [rng.choice(e2.reps) for _ in e2.reps])
        if s1 is not None and s2:
            bs.append(s1 / s2)
    bs.sort()
    return perx, (est, bs[int(0.025 * len(bs))], bs[int(0.975 * len(bs)) - 1])


def gm(e, x, rt, p):
    """geometric mean over seeds of aggregate goodput (bit/s); zero runs make it 0"""
    v = [e.agg(x, rt, p, r) for r in e.reps]
    if min(v) <= 0:
        return 0.0
    return math.exp(statistics.fmean(math.log(t) for t in v))


def amean(e, x, rt, p):
    return statistics.fmean(e.agg(x, rt, p, r) for r in e.reps)


def quant(v, qs):
    cuts = statistics.quantiles(sorted(v), n=100, method="inclusive")
    return [cuts[q - 1] for q in qs]


# ---------------------------------------------------------------------------------------------------
def claim_a(E):
    print("\n## A. Adaptive's gain over default shrinks with more flows (testbed A; seed 001 abstract, §7)\n")
    es = {1: E["a-single"], 2: E["a-two"], 5: E["a-five"]}
    if not all(e.ok for e in es.values()):
        print("**skipped: a-single, a-two and a-five are all needed**")
        return {}
    xs = es[1].xs
    print("Gain = adaptive/default aggregate goodput, paired, per hop; last column over hops (bootstrap).\n")
    print("| flows | retries | " + " | ".join(f"{x} hop" for x in xs) + " | over hops |")
    print("|---|---|" + "---|" * (len(xs) + 1))
    for rt in RTS:
        for k, e in es.items():
            cells = [frx(e.ratio(e.agg, ADA, DEF, x, rt)) for x in xs]
            ov = e.over_x(e.agg, ADA, DEF, rt)
            print(f"| {k} | {rt_name(rt)} | " + " | ".join(cells) + f" | **{fr(ov)}** |")
    print("\nRatio of gains (gain with k flows ÷ gain with 1 flow, or 5 ÷ 2): per hop Welch 95%; "
          "over hops: ratio of the over-hops gains, independent bootstrap.\n")
    print("| comparison | retries | " + " | ".join(f"{x} hop" for x in xs) + " | over hops |")
    print("|---|---|" + "---|" * (len(xs) + 1))
    verdict, notes = {}, []
    for rt in RTS:
        res = {}
        for k1, k2 in ((2, 1), (5, 1), (5, 2)):
            perx, ov = ratio_of_gains(es[k1], es[k2], es[k1].agg, es[k2].agg, ADA, DEF, rt, xs)
            res[(k1, k2)] = (perx, ov)
            cells = []
            for x in xs:
                c = fr(perx[x])
                c += " ↓" if below(perx[x]) else (" ↑" if above(perx[x]) else "")
                cells.append(c)
            print(f"| {k1} ÷ {k2} flows | {rt_name(rt)} | " + " | ".join(cells) + f" | **{fr(ov)}** |")
        ok21, ok51 = below(res[(2, 1)][1]), below(res[(5, 1)][1])
        rev = [f"{k1}÷{k2}@{x}" for (k1, k2) in ((2, 1), (5, 1)) for x in xs if above(res[(k1, k2)][0][x])]
        n_res = {kk: sum(below(res[kk][0][x]) for x in xs) for kk in res}
        if ok21 and ok51 and not rev:
            v = "yes"
        elif ok21 or ok51:
            v = "partly"
        else:
            v = "no"
        verdict[rt] = v
        notes.append(f"\nRetries {rt_name(rt)}: over hops 2÷1 resolved below 1: {ok21}; 5÷1: {ok51}; "
              f"5÷2: {below(res[(5, 2)][1])}. Per-hop intervals below 1: 2÷1 {n_res[(2, 1)]}/6, "
              f"5÷1 {n_res[(5, 1)]}/6, 5÷2 {n_res[(5, 2)]}/6; per-hop intervals above 1 (reversals, 2÷1 and 5÷1): "
              f"{', '.join(rev) or 'none'}. **Rule: {v}**")
    print("\n".join(notes))
    return verdict


def claim_b(E):
    print("\n## B. Adaptive's goodput advantage much smaller on testbed B than on A (seed 001 §7)\n")
    pairs = [(1, "a-single", "b-single"), (2, "a-two", "b-two"), (5, "a-five", "b-five")]
    if not all(E[a].ok and E[b].ok for _, a, b in pairs):
        print("**skipped: all six directories are needed**")
        return {}
    xs = E["a-single"].xs
    print("Gain = adaptive/default aggregate goodput, paired, per hop and over hops; then B ÷ A.\n")
    print("| flows | testbed | retries | " + " | ".join(f"{x} hop" for x in xs) + " | over hops |")
    print("|---|---|---|" + "---|" * (len(xs) + 1))
    gains = {}
    for rt in RTS:
        for k, an, bn in pairs:
            for tb, n in (("A", an), ("B", bn)):
                e = E[n]
                ov = e.over_x(e.agg, ADA, DEF, rt)
                gains[(k, tb, rt)] = ov
                print(f"| {k} | {tb} | {rt_name(rt)} | " + " | ".join(frx(e.ratio(e.agg, ADA, DEF, x, rt)) for x in xs)
                      + f" | **{fr(ov)}** |")
    print("\nRatio of gains, testbed B ÷ testbed A (per hop Welch 95%, over hops independent bootstrap); "
          "h = the ratio of gains at which B's gain would be half of A's; 'much less' = upper end ≤ h.\n")
    print("| flows | retries | " + " | ".join(f"{x} hop" for x in xs) + " | over hops | B gain | A gain | h | less | much less |")
    print("|---|---|" + "---|" * (len(xs) + 6))
    verdict = {}
    for rt in RTS:
        less, much = [], []
        for k, an, bn in pairs:
            perx, ov = ratio_of_gains(E[bn], E[an], E[bn].agg, E[an].agg, ADA, DEF, rt, xs)
            gb, ga = gains[(k, "B", rt)][0], gains[(k, "A", rt)][0]
            l = below(ov)
            h = (1 + 0.5 * (ga - 1)) / ga
            m = l and ov[2] <= h
            less.append(l)
            much.append(m)
            print(f"| {k} | {rt_name(rt)} | " + " | ".join(fr(perx[x]) + (" ↓" if below(perx[x]) else (" ↑" if above(perx[x]) else ""))
                                                          for x in xs)
                  + f" | **{fr(ov)}** | {gb - 1:+.0%} | {ga - 1:+.0%} | {h:.2f} | {l} | {m} |")
        v = "yes" if all(much) else ("partly" if any(less) else "no")
        verdict[rt] = v
        print(f"| | {rt_name(rt)} | rule: **{v}** |" + " |" * (len(xs) + 4))
    # beside it: adaptive / Tahoe, the other 'advantage'
    print("\nBeside it (not judged): adaptive/Tahoe over hops, testbed A vs B.\n")
    print("| flows | retries | A | B |")
    print("|---|---|---|---|")
    for rt in RTS:
        for k, an, bn in pairs:
            print(f"| {k} | {rt_name(rt)} | {fr(E[an].over_x(E[an].agg, ADA, TAH, rt))} | "
                  f"{fr(E[bn].over_x(E[bn].agg, ADA, TAH, rt))} |")
    return verdict


def claim_c(E):
    print("\n## C. Per-flow goodput at 6 hops, two flows, testbed A: ATP ahead of Tahoe (seed 001 §5.2, Fig. 5.4b)\n")
    e = E["a-two"]
    if not e.ok:
        print("**skipped: a-two needed**")
        return {}
    x = 6
    qs = [10, 25, 50, 75, 90]
    deciles = list(range(10, 100, 10))
    print(f"Per-flow goodput quantiles (Mbit/s) over {len(e.reps)} seeds × 2 flows.\n")
    print("| protocol | retries | " + " | ".join(f"q{q}" for q in qs) + " | min | max |")
    print("|---|---|" + "---|" * (len(qs) + 2))
    flows = {}
    for rt in RTS:
        for p in ALL:
            v = [g for r in e.reps for g in e.runs[(x, rt, p, r)]]
            flows[(rt, p)] = v
            print(f"| {S[p]} | {rt_name(rt)} | " + " | ".join(f"{t / 1e6:.3f}" for t in quant(v, qs))
                  + f" | {min(v) / 1e6:.3f} | {max(v) / 1e6:.3f} |")
    print("\nATP variant against Tahoe at 6 hops: paired ratios (aggregate; worse flow of the run; better flow), "
          "P(ATP flow > Tahoe flow) over all flow pairs, deciles 10–90% above Tahoe's.\n")
    print("| variant | retries | aggregate ratio | worse-flow ratio | better-flow ratio | P(ATP > Tahoe) | deciles above | passes |")
    print("|---|---|---|---|---|---|---|---|")
    mn = lambda xx, rt, p, rep: min(e.runs[(xx, rt, p, rep)])
    mx = lambda xx, rt, p, rep: max(e.runs[(xx, rt, p, rep)])
    verdict = {}
    for rt in RTS:
        passes = []
        for p in ATP:
            ag = e.ratio(e.agg, p, TAH, x, rt)
            lo = e.ratio(mn, p, TAH, x, rt)
            hi = e.ratio(mx, p, TAH, x, rt)
            a, t = flows[(rt, p)], flows[(rt, TAH)]
            ps = sum((u > w) + 0.5 * (u == w) for u in a for w in t) / (len(a) * len(t))
            qa, qt = quant(a, deciles), quant(t, deciles)
            nab = sum(u > w for u, w in zip(qa, qt))
            ok = above(ag) and nab == len(deciles)
            passes.append(ok)
            print(f"| {S[p]} | {rt_name(rt)} | {frx(ag)} | {frx(lo)} | {frx(hi)} | {ps:.3f} | {nab}/{len(deciles)} | {ok} |")
        v = "yes" if all(passes) else ("partly" if any(passes) else "no")
        verdict[rt] = v
        print(f"| | {rt_name(rt)} | rule: **{v}** | | | | | |")
    return verdict


def claim_d(E):
    print("\n## D. Testbed B, one and two flows: not much difference between protocols (seed 001 §5.3, Fig. 5.6)\n")
    es = [(1, E["b-single"]), (2, E["b-two"])]
    if not all(e.ok for _, e in es):
        print("**skipped: b-single and b-two needed**")
        return {}
    xs = es[0][1].xs
    verdict = {}
    for k, e in es:
        print(f"\n### {k} flow{'s' if k > 1 else ''} (`{e.name}`)\n")
        print("Aggregate goodput, geometric mean over seeds (Mbit/s)\n")
        print("| protocol | retries | " + " | ".join(f"{x} hop" for x in xs) + " |")
        print("|---|---|" + "---|" * len(xs))
        for rt in RTS:
            for p in ALL:
                print(f"| {S[p]} | {rt_name(rt)} | " + " | ".join(f"{gm(e, x, rt, p) / 1e6:.3f}" for x in xs) + " |")
        print("\nPaired ratio to Tahoe (X/Tahoe), per hop\n")
        print("| ratio | retries | " + " | ".join(f"{x} hop" for x in xs) + " | over hops |")
        print("|---|---|" + "---|" * (len(xs) + 1))
        for rt in RTS:
            for p in ATP + ["tcp-reno", "tcp-newreno"]:
                print(f"| {S[p]}/Tahoe | {rt_name(rt)} | " + " | ".join(frx(e.ratio(e.agg, p, TAH, x, rt)) for x in xs)
                      + f" | {fr(e.over_x(e.agg, p, TAH, rt))} |")
        print("\nSpread = max/min of per-protocol geometric means (the largest paired ratio, its 95% interval); "
              "ATP only = the three variants; arithmetic = max/min of arithmetic means (four protocols).\n")
        print("| spread | retries | " + " | ".join(f"{x} hop" for x in xs) + " | hops ≤ 1.25 |")
        print("|---|---|" + "---|" * (len(xs) + 1))
        for rt in RTS:
            for label, ps in (("four (def, aggr, adapt, Tahoe)", THESIS), ("ATP only", ATP), ("all six", ALL)):
                cells, nok = [], 0
                for x in xs:
                    g = {p: gm(e, x, rt, p) for p in ps}
                    hi_p, lo_p = max(g, key=g.get), min(g, key=g.get)
                    v = e.ratio(e.agg, hi_p, lo_p, x, rt)
                    sp = g[hi_p] / g[lo_p] if g[lo_p] > 0 else float("inf")
                    nok += sp <= 1.25
                    cells.append(f"{sp:.2f} ({S[hi_p]}/{S[lo_p]} [{v[1]:.2f}, {v[2]:.2f}])")
                verdict.setdefault(rt, {})[(k, label)] = nok
                print(f"| {label} | {rt_name(rt)} | " + " | ".join(cells) + f" | {nok}/{len(xs)} |")
            am = []
            for x in xs:
                m = {p: amean(e, x, rt, p) for p in THESIS}
                am.append(max(m.values()) / min(m.values()))
            print(f"| arithmetic, four | {rt_name(rt)} | " + " | ".join(f"{t:.2f}" for t in am) + " | |")
    out = {}
    for rt in RTS:
        d = verdict[rt]
        four = [d[(k, "four (def, aggr, adapt, Tahoe)")] for k, _ in es]
        atp = [d[(k, "ATP only")] for k, _ in es]
        n = len(xs)
        if all(c == n for c in four):
            v = "yes"
        elif any(c > 0 for c in four):
            v = "partly"
        else:
            v = "no"
        out[rt] = v
        print(f"\nRetries {rt_name(rt)}: hops with spread ≤ 1.25, four protocols: one flow {four[0]}/{n}, two flows "
              f"{four[1]}/{n}; ATP variants only: {atp[0]}/{n}, {atp[1]}/{n}. **Rule: {v}**")
    return out


def claim_e(E):
    print("\n## E. Testbed B fairness: TCP worst, aggressive best, TCP's and default's goodput bought with "
          "fairness (seed 001 §5.3, Fig. 5.7a)\n")
    if not E["b-two"].ok:
        print("**skipped: b-two needed**")
        return {}
    out = {}
    ns = ["b-two"] + (["b-five"] if E["b-five"].ok else [])
    for n in ns:
        e = E[n]
        xs = e.xs
        print(f"\n### `{n}`\n")
        print("Mean unfairness (population sd / mean of per-flow goodput) | mean aggregate goodput, Mbit/s\n")
        print("| protocol | retries | " + " | ".join(f"{x} hop" for x in xs) + " |")
        print("|---|---|" + "---|" * len(xs))
        for rt in RTS:
            for p in ALL:
                print(f"| {S[p]} | {rt_name(rt)} | " + " | ".join(
                    f"{statistics.fmean(e.unf(x, rt, p, r) for r in e.reps):.3f} / {amean(e, x, rt, p) / 1e6:.2f}"
                    for x in xs) + " |")
        upairs = [(TAH, DEF), (TAH, AGG), (TAH, ADA), (DEF, AGG), (ADA, AGG), (DEF, ADA)]
        gpairs = [(TAH, ADA), (TAH, AGG), (DEF, ADA), (DEF, AGG), (TAH, DEF)]
        res = {}
        for label, metric, pairs in (("Unfairness ratio", e.unf, upairs), ("Goodput ratio", e.agg, gpairs)):
            print(f"\n{label} X/Y, paired, per hop and over hops\n")
            print("| ratio | retries | " + " | ".join(f"{x} hop" for x in xs) + " | over hops |")
            print("|---|---|" + "---|" * (len(xs) + 1))
            for rt in RTS:
                for a, b in pairs:
                    ov = e.over_x(metric, a, b, rt)
                    res[(label[0], a, b, rt)] = ov
                    print(f"| {S[a]}/{S[b]} | {rt_name(rt)} | " + " | ".join(
                        frx(e.ratio(metric, a, b, x, rt)) for x in xs) + f" | **{fr(ov)}** |")
        for rt in RTS:
            U = lambda a, b: res[("U", a, b, rt)]
            G = lambda a, b: res[("G", a, b, rt)]
            parts = {}
            if n == "b-two":
                parts["(i) Tahoe least fair"] = {f"Tahoe/{S[p]}": above(U(TAH, p)) for p in ATP}
                parts["(ii) aggressive fairest"] = {f"{S[p]}/aggr": above(U(p, AGG)) for p in (DEF, ADA, TAH)}
            tr = {}
            for w in (TAH, DEF):
                for l in (ADA, AGG):
                    tr[f"goodput {S[w]}>{S[l]}"] = above(G(w, l))
                    tr[f"unfair {S[w]}>{S[l]}"] = above(U(w, l))
            parts["(iii) trade-off"] = tr
            print(f"\nRetries {rt_name(rt)}, `{n}`:")
            for name, d in parts.items():
                print(f"* {name}: " + ", ".join(f"{k} {'✓' if v else '✗'}" for k, v in d.items()))
            out[(n, rt)] = parts
    verdict = {}
    for rt in RTS:
        allparts = []
        for n in ns:
            allparts += [all(d.values()) for d in out[(n, rt)].values()]
        anyp = any(any(d.values()) for n in ns for d in out[(n, rt)].values())
        v = "yes" if all(allparts) else ("partly" if anyp else "no")
        verdict[rt] = v
        print(f"\nRetries {rt_name(rt)}: parts holding in full: {sum(allparts)}/{len(allparts)}. **Rule: {v}**")
    return verdict


def main():
    names = ["a-single", "a-two", "a-five", "b-single", "b-two", "b-five"]
    E = {n: pc.Exp(n) for n in names}
    print(f"# Seed 001 testbed claims A–E (scripts/claims_testbed_flows.py, ROOT={ROOT})")
    for n, e in E.items():
        if not e.ok:
            print(f"\n**{n}: not run (no {e.dir}/flows.csv)**")
        else:
            k, w = pc.check_paired(e)
            print(f"\n`{n}`: {len(e.xs)} hop counts × {len(e.protocols)} protocols × 2 retry settings × {len(e.reps)} "
                  f"seeds; {k} paired.csv ratios recomputed, largest relative difference {w:.1e}")
    v = {"A": claim_a(E), "B": claim_b(E), "C": claim_c(E), "D": claim_d(E), "E": claim_e(E)}
    print("\n## Verdicts by the rule (retries off decides; retries on is the sensitivity check)\n")
    print("| claim | retries off | retries on |")
    print("|---|---|---|")
    for c, d in v.items():
        print(f"| {c} | {d.get(0, 'n/a')} | {d.get(6, 'n/a')} |")


if __name__ == "__main__":
    main()
