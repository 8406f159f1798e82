#!/usr/bin/env python3
"""Verdict numbers for claims 86 and 87 (seed 002, the ATP paper) of the not-yet-judged list.

Usage:
    python3 scripts/claims_seed002_more.py run87 [OUT] [SEEDS]   # the captures of claim 87 (OUT
                                                                 # defaults to results/claims/seed002-burst,
                                                                 # SEEDS to 1-20, e.g. "1-10")
    python3 scripts/claims_seed002_more.py [ROOT]                # print both claims' numbers
                                                                 # (ROOT defaults to results/claims)

Inputs:

* ROOT/seed002-route-failures (examples/claims/seed002-route-failures.toml; its header has the
  command): the paper's mobile network over DSR at 20 m/s, 1, 5 and 25 flows, default ATP and
  NewReno, seeds 1-20, every flow traced (traces.csv) with its route log (routes.csv).
* ROOT/seed002-route-failures-aodv (examples/claims/seed002-route-failures-aodv.toml): the same
  over AODV (no salvaging); skipped if missing.
* ROOT/seed002-burst/gaps.csv, written by `run87`.

Claim 86 (seed 002 §4.3.3): "the ATP sender will typically receive the link-failure notification
before (if at all) it receives SACK information"; "suffix losses will be the norm unless some
route salvaging is done". Definitions (t is simulated time, one ATP flow's own trace rows):

* Failure: a routes.csv row side = sender, event = route-failed (the notice reaching the sender),
  after the flow's first d_s_us sample and at least 5 s before the run's end, that finds the
  sender sending data: not probing at that instant (the last probing sample before it is 0 or
  there is none). Those that find it already probing are counted apart.
* Feedback at the sender: a d_avg_received_us sample (one per feedback that reaches the sender).
  The receiver's feedbacks are its d_avg_sent_us samples, each with its sack_ranges sample (same
  instant): the out-of-order ranges it held, i.e. whether it reported holes.
* The failure's cause: the link break is not traced. Its time is bracketed from the receiver's
  side: t_c = the last in-order delivery (delivered_bytes sample) at the receiver before the
  notice, the last moment data is known to have got through. Packets sent after t_c that the
  broken route lost can be reported by SACK only in a feedback the receiver sends after t_c.
* Order: "SACK first" if a feedback sent by the receiver after t_c reports at least one hole
  (sack_ranges > 0) and reaches the sender before the notice: matched by its D_avg value (the
  sender's d_avg_received_us is the receiver's d_avg_sent_us of the same feedback rounded to whole
  µs, matched within 1 µs; of several sends with that value, the latest at or before the arrival,
  which if anything favours "SACK first"). As t_c can precede the break (in-order delivery stalls
  behind an older hole), this share is an upper bound; "notice first" = 1 - "SACK first" is a
  lower bound. "Any feedback sent after t_c first": the same without the hole condition. As a
  bound from the other side, the cause-to-notice delay (MAC retries at the broken link plus the
  route error's travel) is short: the share of failures with any feedback arriving within 0.1,
  0.25 or 0.5 s before the notice. Also: the delay from the notice to the next feedback, and the
  share of failures with no feedback within 2 s after the notice ("if at all").
* Lost and suffix: the failure's losses are the sequences the sender retransmits (retransmit_seq,
  the byte offset of a 512-byte segment) in (t_f, t_f + 5 s] that it had not retransmitted in
  [t_f - 5 s, t_f] (older holes excluded; ATP resends only what a feedback's SACK blocks or
  SACK-MORE mark lost). A = the receiver's in-order point at t_f (cumulative delivered_bytes, in the
  same byte offsets). Contiguous: the lost sequences form one run of consecutive segments (nothing
  inside the run got through). Suffix (strict): contiguous, the run starts at A, and the receiver's
  last feedback sent at or before t_f held no out-of-order range (sack_ranges = 0): the receiver
  held nothing above A, so the run is the top of what was sent and nothing sent after it got
  through before the notice. "Contiguous and (at A or nothing held)" is a looser reading; the
  contiguous share alone is an upper bound (a run's top cannot be located when the receiver held
  ranges). The lowest lost sequence below A is counted (it should not occur: below A is acknowledged).
  Failures with no new retransmission within 5 s are "no loss seen" and left out.
  Per run the share over its failures; mean over runs with >= 1 failure, Student-t 95% interval.

Claim 87 (seed 002 §2.1, Fig. 1): TCP's transmissions "occur in periods of bursts and are
interspersed with periods of inactivity". `run87` runs `meshbed sim --pcap` on the scenario of
seed002-route-failures.toml (its [experiment] table cut, the axes written in: 20 m/s, 1 or 25
flows, NewReno or default ATP, the seed; tracing off, which leaves the run identical) with every
non-sender node's capture file a link to /dev/null. From each sender's capture (n<src>.pcap): the
frames it sent itself (radiotap TX-power field), 802.11 DATA, first attempt (retry bit clear),
IPv4 from the sender to the flow's receiver, IP total length >= 500 bytes (the 576-byte data
packets, with DSR's source route; not SYN, FIN or probes without data). Departure = the frame's
start on the air (the record's timestamp). Gaps g_i between consecutive departures, per flow with
>= 20 departures: CV = sd/mean of the gaps; back-to-back share = share of gaps < 1 ms (the brief's
threshold, physically impossible here: one 576-byte exchange with RTS/CTS takes about 3.7 ms at
2 Mbit/s), and of gaps < 5 ms (the next packet at the first MAC opportunity) and < 10 ms;
inactivity = the share of the flow's span (first to last departure) in gaps > 100 ms; the CV of
the gaps <= 100 ms (burstiness within active periods, outages removed); relative to the flow's own
pace (ATP's paced gaps at 25 flows are themselves ~300 ms): the share of gaps < half the flow's
median gap (sent in a bunch) and the share of the span in gaps > 10x its median gap (silences).
The departure times of every flow are kept in OUT/departures/<flows>_<protocol>_<seed>.json.gz
(the captures themselves are deleted after each run). Per run the mean over its
flows; NewReno against ATP paired by seed: ratio (geometric mean, t interval on logs) for CVs,
difference (t interval) for shares.

Standard library only.
"""
import bisect
import csv
import gzip
import json
import math
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from paired_claims import tq, t_interval  # noqa: E402,F401
from claims_added import mean_ci, geo_ci  # noqa: E402
from claims_route_failures import fmt, step_at  # noqa: E402

REPO = os.path.dirname(HERE)
MESHBED = os.path.join(REPO, "target", "release", "meshbed")
EXP = os.path.join(REPO, "examples", "claims", "seed002-route-failures.toml")
DUR = 100.0
SEG = 512  # bytes per ATP segment: 576-byte packets less IP, UDP and the 36-byte header


def fmt_pm(ci, d=2):
    m, lo, hi = ci
    return f"{m:+.{d}f} [{lo:+.{d}f}, {hi:+.{d}f}]"


# ================================================================ claim 86

def load(path):
    with open(os.path.join(path, "flows.csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    meta = {}
    for r in rows:
        meta[r["point"]] = (int(float(r["random_flows.count"])), r["protocol"], int(r["seed"]))
    tr = defaultdict(lambda: defaultdict(list))
    with open(os.path.join(path, "traces.csv"), newline="") as fh:
        for r in csv.DictReader(fh):
            if not r["protocol"].startswith("atp"):
                continue
            tr[(r["point"], int(r["flow"]))][(r["side"], r["kind"])].append((float(r["t_s"]), float(r["value"])))
    for d in tr.values():
        for v in d.values():
            v.sort()
    routes = defaultdict(list)
    with open(os.path.join(path, "routes.csv"), newline="") as fh:
        for r in csv.DictReader(fh):
            if r["protocol"].startswith("atp"):
                routes[(r["point"], int(r["flow"]))].append((float(r["t_s"]), r["side"], r["event"]))
    return meta, tr, routes


def analyse86(meta, tr, routes):
    per = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))  # count -> seed -> counter
    delays = defaultdict(list)
    for key, rts in routes.items():
        pt, flow = key
        count, proto, seed = meta[pt]
        k = tr.get(key, {})
        ds = k.get(("sender", "d_s_us"), [])
        if not ds:
            continue
        t0 = ds[0][0]
        prob = k.get(("sender", "probing"), [])
        fb_in = [t for t, _ in k.get(("sender", "d_avg_received_us"), [])]
        fb_in_v = k.get(("sender", "d_avg_received_us"), [])
        sent = k.get(("receiver", "d_avg_sent_us"), [])
        sack_s = k.get(("receiver", "sack_ranges"), [])
        sack = dict(sack_s)
        dl = k.get(("receiver", "delivered_bytes"), [])
        dl_t = [t for t, _ in dl]
        cum = [0.0]
        for _, v in dl:
            cum.append(cum[-1] + v)
        rtx = k.get(("sender", "retransmit_seq"), [])
        rtx_t = [t for t, _ in rtx]
        # receiver feedback by D_avg value -> list of send times
        by_val = defaultdict(list)
        for t, v in sent:
            by_val[round(v)].append(t)
        c = per[count][seed]
        for tf, side, ev in rts:
            if side != "sender" or ev != "route-failed" or tf <= t0 or tf > DUR - 5.0:
                continue
            if step_at(prob, tf - 1e-9, 0.0) > 0:
                c["probing"] += 1
                continue
            c["n"] += 1
            i = bisect.bisect_left(dl_t, tf) - 1
            tc = dl_t[i] if i >= 0 else t0
            # feedbacks arriving at the sender in (tc, tf)
            j0 = bisect.bisect_right(fb_in, tc)
            j1 = bisect.bisect_left(fb_in, tf)
            fb_first = sack_first = False
            for j in range(j0, j1):
                ta, v = fb_in_v[j]
                cands = sorted(s for dv in (-1, 0, 1) for s in by_val.get(round(v) + dv, []) if s <= ta + 1e-9)
                if not cands:
                    continue
                ts = cands[-1]
                if ts > tc:
                    fb_first = True
                    if sack.get(ts, 0) > 0:
                        sack_first = True
            c["fb_first"] += fb_first
            jl = bisect.bisect_left(fb_in, tf) - 1
            gap = tf - fb_in[jl] if jl >= 0 else float("inf")
            for w in (0.1, 0.25, 0.5):
                c[f"fb_within_{w}"] += gap < w
            c["sack_first"] += sack_first
            jn = bisect.bisect_right(fb_in, tf)
            if jn < len(fb_in):
                delays[count].append(fb_in[jn] - tf)
            if jn >= len(fb_in) or fb_in[jn] > tf + 2.0:
                c["no_fb_2s"] += 1
            # losses: sequences first resent in (t_f, t_f + 5 s] that were not resent in [t_f - 5 s, t_f]
            a = bisect.bisect_right(rtx_t, tf)
            b = bisect.bisect_right(rtx_t, tf + 5.0)
            before = {v for _, v in rtx[bisect.bisect_left(rtx_t, tf - 5.0):a]}
            lost = sorted({v for _, v in rtx[a:b]} - before)
            if not lost:
                c["noloss"] += 1
                continue
            c["loss"] += 1
            inorder = cum[bisect.bisect_right(dl_t, tf)]
            contiguous = all(y - x == SEG for x, y in zip(lost, lost[1:]))
            at_a = abs(lost[0] - inorder) < 1
            # the receiver's out-of-order ranges at its last feedback sent at or before t_f
            held = step_at(sack_s, tf, 0.0)
            c["contig"] += contiguous
            c["at_a"] += at_a
            c["held0"] += held == 0
            c["suffix"] += contiguous and at_a and held == 0
            c["suffix_loose"] += contiguous and (at_a or held == 0)
            c["lost_segs"] += len(lost)
            c["below"] += lost[0] < inorder - 1
    return per, delays


def print86(per, delays, label):
    print(f"### {label}\n")
    print("| flows | runs | failures sending (+ already probing) | SACK first: mean share over runs [95% CI] | "
          "any feedback sent after t_c first | notice before SACK (1 - SACK first) | next feedback after the notice: median s (p90) | "
          "no feedback within 2 s | a feedback arrived within 0.1 / 0.25 / 0.5 s before the notice |")
    print("|---|---|---|---|---|---|---|---|---|")
    out = {}
    for count in sorted(per):
        runs = [c for c in per[count].values() if c["n"]]
        sf = mean_ci([c["sack_first"] / c["n"] for c in runs])
        ff = mean_ci([c["fb_first"] / c["n"] for c in runs])
        nf = mean_ci([1 - c["sack_first"] / c["n"] for c in runs])
        nofb = mean_ci([c["no_fb_2s"] / c["n"] for c in runs])
        d = sorted(delays[count])
        p90 = d[int(0.9 * (len(d) - 1))] if d else float("nan")
        out[count] = {"sf": sf, "nf": nf}
        print(f"| {count} | {len(runs)} | {sum(c['n'] for c in runs)} (+{sum(c['probing'] for c in per[count].values())}) | "
              f"{fmt(sf)} | {fmt(ff)} | {fmt(nf)} | {statistics.median(d):.2f} ({p90:.2f}) | {fmt(nofb)} | "
              + " / ".join(fmt(mean_ci([c[f"fb_within_{w}"] / c["n"] for c in runs])) for w in (0.1, 0.25, 0.5)) + " |")
    print()
    print("| flows | failures with new losses (none) | suffix: mean share over runs [95% CI] | "
          "contiguous run | run starts at the in-order point | receiver held no out-of-order range | "
          "contiguous and (at the in-order point or nothing held) | pooled suffix | mean segments lost | "
          "lowest lost below the in-order point |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for count in sorted(per):
        runs = [c for c in per[count].values() if c["loss"]]
        sh = lambda key: mean_ci([c[key] / c["loss"] for c in runs])  # noqa: E731
        nl = sum(c["loss"] for c in runs)
        out[count]["su"] = sh("suffix")
        out[count]["contig"] = sh("contig")
        print(f"| {count} | {nl} ({sum(c['noloss'] for c in per[count].values())}) | {fmt(sh('suffix'))} | "
              f"{fmt(sh('contig'))} | {fmt(sh('at_a'))} | {fmt(sh('held0'))} | {fmt(sh('suffix_loose'))} | "
              f"{sum(c['suffix'] for c in runs) / max(nl, 1):.2f} | {sum(c['lost_segs'] for c in runs) / max(nl, 1):.1f} | "
              f"{sum(c['below'] for c in runs)} |")
    print()
    return out


def claim86(root):
    print("## Claim 86: notice before SACK, and suffix losses (seed 002 §4.3.3)\n")
    res, pers = {}, {}
    for name, label in (("seed002-route-failures", "DSR (salvaging)"),
                        ("seed002-route-failures-aodv", "AODV (no salvaging)")):
        p = os.path.join(root, name)
        if not os.path.exists(os.path.join(p, "flows.csv")):
            print(f"*{p} is missing.*\n")
            continue
        meta, tr, routes = load(p)
        per, delays = analyse86(meta, tr, routes)
        res[name] = print86(per, delays, label)
        pers[name] = per
    if len(pers) == 2:
        d, a = pers["seed002-route-failures"], pers["seed002-route-failures-aodv"]
        print("AODV - DSR, paired by seed (same nodes, walks and flow pairs), per-run shares:\n")
        print("| flows | seeds | SACK first | suffix (strict) | contiguous | contiguous and (at A or nothing held) |")
        print("|---|---|---|---|---|---|")
        for count in sorted(d):
            seeds = sorted(s for s in d[count] if s in a[count] and d[count][s]["loss"] and a[count][s]["loss"])
            diff = lambda key, den: mean_ci([a[count][s][key] / a[count][s][den] - d[count][s][key] / d[count][s][den]  # noqa: E731
                                             for s in seeds])
            print(f"| {count} | {len(seeds)} | {fmt_pm(diff('sack_first', 'n'))} | {fmt_pm(diff('suffix', 'loss'))} | "
                  f"{fmt_pm(diff('contig', 'loss'))} | {fmt_pm(diff('suffix_loose', 'loss'))} |")
        print()
    return res


# ================================================================ claim 87

def scenario_text(count, proto, seed):
    s = open(EXP).read()
    s = s[: s.index("\n[experiment]")] + "\n"
    s = re.sub(r"^seed = \d+$", f"seed = {seed}", s, count=1, flags=re.M)
    s = re.sub(r"^count = \d+$", f"count = {count}", s, count=1, flags=re.M)
    s = re.sub(r"^max_speed_mps = [0-9.]+$", "max_speed_mps = 20.0", s, count=1, flags=re.M)
    s = re.sub(r'^protocol = "atp-default"$', f'protocol = "{proto}"', s, count=1, flags=re.M)
    s = re.sub(r"^trace = true$", "trace = false", s, count=1, flags=re.M)
    if not proto.startswith("atp"):
        s = re.sub(r"\n# Overrides of the ATP preset.*?\n(?=\n# How the nodes move)", "\n", s, count=1, flags=re.S)
    return s


def ipv4(n):
    return bytes([10, 0, n // 250, n % 250 + 1])


def departures(path, src, dsts):
    """{dst: [t]} of the sender's own first-attempt DATA frames carrying its data packets."""
    out = {d: [] for d in dsts}
    want = {ipv4(d): d for d in dsts}
    me = ipv4(src)
    with open(path, "rb") as fh:
        data = fh.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    scale = 1e-9 if magic == 0xA1B23C4D else 1e-6
    off = 24
    n = len(data)
    while off + 16 <= n:
        sec, sub, incl, _ = struct.unpack_from("<IIII", data, off)
        rec = off + 16
        off = rec + incl
        rt_len = struct.unpack_from("<H", data, rec + 2)[0]
        present = struct.unpack_from("<I", data, rec + 4)[0]
        if not present & (1 << 10):  # dBm TX power: a frame this node sent
            continue
        m = rec + rt_len
        if data[m] != 0x08 or data[m + 1] & 0x08:  # DATA, not a MAC retry
            continue
        ip = m + 32
        if data[ip + 12:ip + 16] != me:
            continue
        d = want.get(bytes(data[ip + 16:ip + 20]))
        if d is None:
            continue
        if struct.unpack_from(">H", data, ip + 2)[0] < 500:
            continue
        out[d].append(sec + sub * scale)
    return out


def gap_stats(ts):
    ts = sorted(ts)
    if len(ts) < 20:
        return None
    g = [b - a for a, b in zip(ts, ts[1:])]
    span = ts[-1] - ts[0]
    m = statistics.fmean(g)
    act = [x for x in g if x <= 0.1]
    return {
        "n": len(ts),
        "cv": statistics.pstdev(g) / m,
        "lt1ms": sum(x < 0.001 for x in g) / len(g),
        "lt5ms": sum(x < 0.005 for x in g) / len(g),
        "lt10ms": sum(x < 0.010 for x in g) / len(g),
        "idle100": sum(x for x in g if x > 0.1) / span if span > 0 else 0.0,
        "idle10med": sum(x for x in g if x > 10 * statistics.median(g)) / span if span > 0 else 0.0,
        "lt_half_med": sum(x < 0.5 * statistics.median(g) for x in g) / len(g),
        "cv_active": statistics.pstdev(act) / statistics.fmean(act) if len(act) > 2 else float("nan"),
        "min_gap_ms": min(g) * 1e3,
        "median_gap_ms": statistics.median(g) * 1e3,
    }


FIELDS = ["count", "protocol", "seed", "flow", "src", "dst", "n", "cv", "lt1ms", "lt5ms", "lt10ms", "idle100",
          "idle10med", "lt_half_med",
          "cv_active", "min_gap_ms", "median_gap_ms"]


def run87(out, seeds):
    os.makedirs(out, exist_ok=True)
    gpath = os.path.join(out, "gaps.csv")
    done = set()
    if os.path.exists(gpath):
        with open(gpath, newline="") as fh:
            done = {(r["count"], r["protocol"], r["seed"]) for r in csv.DictReader(fh)}
    new = not os.path.exists(gpath)
    fh = open(gpath, "a", newline="")
    w = csv.DictWriter(fh, fieldnames=FIELDS)
    if new:
        w.writeheader()
    t_all = time.time()
    for seed in seeds:
        for count in (1, 25):
            for proto in ("tcp-newreno", "atp-default"):
                if (str(count), proto, str(seed)) in done:
                    continue
                scen = os.path.join(out, "scenario.toml")
                with open(scen, "w") as f:
                    f.write(scenario_text(count, proto, seed))
                # first the flows (src, dst), then the capture at the senders only
                rep = json.loads(subprocess.run([MESHBED, "sim", scen, "--json"], check=True,
                                                capture_output=True, text=True).stdout)
                flows = [(f["flow"], f["src"], f["dst"]) for f in rep["flows"]]
                srcs = {s for _, s, _ in flows}
                pdir = os.path.join(out, "pcap")
                shutil.rmtree(pdir, ignore_errors=True)
                os.makedirs(pdir)
                for nd in range(100):
                    if nd not in srcs:
                        os.symlink("/dev/null", os.path.join(pdir, f"n{nd}.pcap"))
                t1 = time.time()
                rep2 = json.loads(subprocess.run([MESHBED, "sim", scen, "--json", "--pcap", pdir], check=True,
                                                 capture_output=True, text=True).stdout)
                assert rep2["trace_hash"] == rep["trace_hash"], "the capture changed the run"
                by_src = defaultdict(list)
                for fl, s, d in flows:
                    by_src[s].append((fl, d))
                keep = {}
                for s, lst in by_src.items():
                    dep = departures(os.path.join(pdir, f"n{s}.pcap"), s, [d for _, d in lst])
                    for fl, d in lst:
                        keep[fl] = [round(t, 6) for t in dep[d]]
                        st = gap_stats(dep[d])
                        row = {"count": count, "protocol": proto, "seed": seed, "flow": fl, "src": s, "dst": d}
                        if st:
                            row.update(st)
                        else:
                            row["n"] = len(dep[d])
                        w.writerow(row)
                fh.flush()
                os.makedirs(os.path.join(out, "departures"), exist_ok=True)
                with gzip.open(os.path.join(out, "departures", f"{count}_{proto}_{seed}.json.gz"), "wt") as f:
                    json.dump(keep, f)
                shutil.rmtree(pdir, ignore_errors=True)
                print(f"seed {seed} flows {count} {proto}: {time.time() - t1:.1f} s", file=sys.stderr)
    fh.close()
    print(f"total {time.time() - t_all:.0f} s", file=sys.stderr)


def claim87(root):
    print("## Claim 87: TCP's bursts and inactivity at the sender's first hop (seed 002 §2.1, Fig. 1)\n")
    p = os.path.join(root, "seed002-burst", "gaps.csv")
    if not os.path.exists(p):
        print(f"*{p} is missing: run `run87`.*\n")
        return None
    runs = defaultdict(lambda: defaultdict(list))  # (count, proto) -> seed -> rows
    with open(p, newline="") as fh:
        for r in csv.DictReader(fh):
            if r["cv"]:
                runs[(int(r["count"]), r["protocol"])][int(r["seed"])].append(r)
    keys = ["cv", "cv_active", "lt1ms", "lt5ms", "lt10ms", "idle100", "lt_half_med", "idle10med", "median_gap_ms",
            "min_gap_ms"]

    def run_mean(rows, k):
        xs = [float(r[k]) for r in rows if r[k] not in ("", "nan")]
        return statistics.fmean(xs) if xs else float("nan")

    print("Per run the mean over its flows (flows with >= 20 departures), then mean over runs [95% CI]:\n")
    print("| flows | protocol | runs (flows) | CV of gaps | CV of gaps <= 100 ms | gaps < 1 ms | gaps < 5 ms | "
          "gaps < 10 ms | time in gaps > 100 ms | gaps < median/2 | time in gaps > 10 x median | median gap ms | "
          "min gap ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    res = {}
    for (count, proto), d in sorted(runs.items()):
        cells = []
        for k in keys:
            ci = mean_ci([run_mean(rows, k) for rows in d.values()])
            res[(count, proto, k)] = ci
            cells.append(fmt(ci, 3 if k.startswith("lt") or k.startswith("idle") else 2))
        print(f"| {count} | {proto} | {len(d)} ({sum(len(v) for v in d.values())}) | " + " | ".join(cells) + " |")
    print()
    print("NewReno against default ATP, paired by seed:\n")
    print("| flows | seeds | CV ratio NewReno ÷ ATP | CV (gaps <= 100 ms) ratio | gaps < 5 ms, difference | "
          "gaps < 10 ms, difference | time in gaps > 100 ms, difference | gaps < median/2, difference | "
          "time in gaps > 10 x median, difference |")
    print("|---|---|---|---|---|---|---|---|---|")
    for count in sorted({c for c, _ in runs}):
        a, b = runs.get((count, "tcp-newreno"), {}), runs.get((count, "atp-default"), {})
        seeds = sorted(set(a) & set(b))
        if len(seeds) < 2:
            continue
        r_cv = geo_ci([run_mean(a[s], "cv") / run_mean(b[s], "cv") for s in seeds])
        r_cva = geo_ci([run_mean(a[s], "cv_active") / run_mean(b[s], "cv_active") for s in seeds])
        d5 = mean_ci([run_mean(a[s], "lt5ms") - run_mean(b[s], "lt5ms") for s in seeds])
        d10 = mean_ci([run_mean(a[s], "lt10ms") - run_mean(b[s], "lt10ms") for s in seeds])
        di = mean_ci([run_mean(a[s], "idle100") - run_mean(b[s], "idle100") for s in seeds])
        dh = mean_ci([run_mean(a[s], "lt_half_med") - run_mean(b[s], "lt_half_med") for s in seeds])
        dm = mean_ci([run_mean(a[s], "idle10med") - run_mean(b[s], "idle10med") for s in seeds])
        res[(count, "paired")] = (r_cv, r_cva, d5, d10, di, dh, dm)
        print(f"| {count} | {len(seeds)} | {fmt(r_cv)} | {fmt(r_cva)} | {fmt_pm(d5, 3)} | {fmt_pm(d10, 3)} | "
              f"{fmt_pm(di, 3)} | {fmt_pm(dh, 3)} | {fmt_pm(dm, 3)} |")
    print()
    split = inactivity_split(root)
    print("Inactivity split (from the departure times): share of the span in gaps of 0.1-1 s and > 1 s, "
          "mean over runs [95% CI]; NewReno - ATP paired by seed:\n")
    print("| flows | NewReno 0.1-1 s | ATP 0.1-1 s | difference | NewReno > 1 s | ATP > 1 s | difference |")
    print("|---|---|---|---|---|---|---|")
    for count in sorted({c for c, _ in split}):
        a, b = split.get((count, "tcp-newreno"), {}), split.get((count, "atp-default"), {})
        seeds = sorted(set(a) & set(b))
        if len(seeds) < 2:
            continue
        cells = []
        for i in (0, 1):
            cells += [fmt(mean_ci([a[x][i] for x in seeds]), 3), fmt(mean_ci([b[x][i] for x in seeds]), 3),
                      fmt_pm(mean_ci([a[x][i] - b[x][i] for x in seeds]), 3)]
        print(f"| {count} | " + " | ".join(cells) + " |")
    print()
    return res


def inactivity_split(root):
    """From OUT/departures: per (count, protocol) {seed: mean over flows of the span's share in gaps in
    (0.1, 1] s (RTT-scale silences, what ACK bunching would give) and in gaps > 1 s (outages)}."""
    out = defaultdict(dict)
    d = os.path.join(root, "seed002-burst", "departures")
    if not os.path.isdir(d):
        return out
    for name in sorted(os.listdir(d)):
        count, proto, seed = name[: -len(".json.gz")].split("_")
        with gzip.open(os.path.join(d, name), "rt") as f:
            deps = json.load(f)
        mid, long_ = [], []
        for ts in deps.values():
            if len(ts) < 20:
                continue
            ts = sorted(ts)
            g = [b - a for a, b in zip(ts, ts[1:])]
            span = ts[-1] - ts[0]
            mid.append(sum(x for x in g if 0.1 < x <= 1.0) / span)
            long_.append(sum(x for x in g if x > 1.0) / span)
        if mid:
            out[(int(count), proto)][int(seed)] = (statistics.fmean(mid), statistics.fmean(long_))
    return out


def parse_seeds(s):
    out = []
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "run87":
        out = sys.argv[2] if len(sys.argv) > 2 else os.path.join("results", "claims", "seed002-burst")
        seeds = parse_seeds(sys.argv[3]) if len(sys.argv) > 3 else list(range(1, 21))
        run87(out, seeds)
        return
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join("results", "claims")
    claim86(root)
    claim87(root)


if __name__ == "__main__":
    main()
