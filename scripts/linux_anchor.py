#!/usr/bin/env python3
"""Issue 27's fidelity anchor: the Linux kernel's TCP against meshbed's engines on the emulator.

Usage:
    python3 scripts/linux_anchor.py [ROOT]     # ROOT defaults to results

Each pair below is two runs of the same network and seeds (the files' headers have the
commands, `--backend emu`, root): the kernel's TCP with a congestion control, and the engine
that stands for it. Per testbed, MAC retry limit and hop count: the goodput ratio kernel / engine
paired by seed (flows.csv goodput_bps; an unfinished transfer counts its bytes over the run),
geometric mean over the seeds with a Student-t 95% interval on the log ratios, and the
transfers that did not finish (kernel / engine); a cell of other than three paired seeds says
how many. A pair whose outputs are missing is skipped; an output's seeds run later (ROOT/NAME-more,
from examples/emulator/*-more.toml) join its first ones.

Where they exist, two simulator runs split the difference (seeds paired with the emulator's):
the engine's own file run in the simulator (`meshbed experiment run FILE --out ROOT/NAME-sim`,
no `--backend`: the emulator's effect on the engine, engine emu / engine sim), and the
engine with Linux's initial window and delayed ACKs in the simulator
(`examples/sensitivity/tcp-*-linux-settings.toml`: kernel emu / that). For CUBIC on
both testbeds, also the engine with Linux's settings on the emulator (ROOT/anchor-engine-linux
and ROOT/anchor-a-engine-linux, examples/emulator/testbed-{b,a}-cubic-engine-linux.toml)
beside the kernel and, where simulated, beside the same engine simulated, and the engine on the emulator against the simulator with each relay holding the
flow's packets 0-300 us (`examples/sensitivity/tcp-relay-forwarding-delay.toml`, output
ROOT/tcp-relay-forwarding-delay): how much of the emulator's effect its forwarding round trip is.
With `--no-relays` (ROOT/anchor-engine-linux-norelay, ROOT/anchor-a-engine-linux-norelay), the
engine with Linux's settings on the emulator with its datagrams forwarded by the kernel alone, as
the kernel's TCP segments always are: the kernel beside it, and the relays' share. With Linux's
delayed-ACK timer as well (40 ms: ROOT/anchor-engine-linux-ato-norelay on the emulator,
ROOT/tcp-cubic-linux-ato in the simulator): the kernel beside the engine set as it is; for BBR and
SACK the same (ROOT/anchor-{bbr,sack}-engine-linux-ato-norelay, ROOT/tcp-{bbr,sack}-linux-ato).
And the engine in the simulator with each end holding the flow's packets 50-200 us before its
engine takes them (examples/sensitivity/tcp-endpoint-delay.toml, ROOT/tcp-endpoint-delay): how
much of the engine's gain on the emulator its user-space ends' latency is.

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

# (title, kernel output, engine output, the engine with Linux's settings in the simulator),
# as the example files' headers write them.
PAIRS = [
    ("Testbed B, kernel cubic / tcp-cubic", "anchor-kernel", "anchor-engine", "tcp-cubic-linux-settings"),
    ("Testbed B, kernel reno (SACK) / tcp-sack", "anchor-reno-kernel", "anchor-sack-engine", "tcp-sack-linux-settings"),
    ("Testbed B, kernel bbr / tcp-bbr", "anchor-bbr-kernel", "anchor-bbr-engine", "tcp-bbr-linux-settings"),
    ("Testbed A, kernel cubic / tcp-cubic", "anchor-a-kernel", "anchor-a-engine", None),
    ("Testbed A, kernel reno (SACK) / tcp-sack", "anchor-a-reno-kernel", "anchor-a-sack-engine", None),
]


def read(path, only=None):
    """{(retries, hops): {seed: (goodput_bps, completed)}}, or None if missing; `only`: (column,
    value) rows to keep. Seeds run later for the same network (PATH-more, the `-more.toml`
    files' output) join the first file's."""
    f = os.path.join(path, "flows.csv")
    if not os.path.exists(f):
        return None
    out = defaultdict(dict)
    for f in (f, os.path.join(path + "-more", "flows.csv")):
        if not os.path.exists(f):
            continue
        with open(f, newline="") as fh:
            for r in csv.DictReader(fh):
                if only and r.get(only[0]) != only[1]:
                    continue
                retries = int(float(r.get(RETRY) or 6))
                out[(retries, int(r["hops"]))][int(r["seed"])] = (float(r["goodput_bps"]), r["completed"] == "true")
    return out


def table(title, num, den):
    hops = sorted({h for _, h in num})
    print(f"#### {title} (goodput ratio, geometric mean over paired seeds, 95% CI)\n")
    print("| retries | " + " | ".join(f"{h} hop{'s' if h > 1 else ''}" for h in hops) + " |")
    print("|---|" + "---|" * len(hops))
    for retries in sorted({r for r, _ in num}, reverse=True):
        cells = []
        for h in hops:
            kk, ee = num.get((retries, h), {}), den.get((retries, h), {})
            seeds = [s for s in sorted(kk) if s in ee and kk[s][0] > 0 and ee[s][0] > 0]
            if len(seeds) < 2:
                cells.append("n/a")
                continue
            m, lo, hi = geo_ci([kk[s][0] / ee[s][0] for s in seeds])
            unfinished = (sum(not kk[s][1] for s in seeds), sum(not ee[s][1] for s in seeds))
            note = f" ({unfinished[0]}/{unfinished[1]} unfinished)" if any(unfinished) else ""
            if len(seeds) != 3:
                note += f" ({len(seeds)} seeds)"
            cells.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]{note}")
        print(f"| {retries} | " + " | ".join(cells) + " |")
    print()


def main():
    for title, kernel_dir, engine_dir, linux_dir in PAIRS:
        k, e = read(os.path.join(ROOT, kernel_dir)), read(os.path.join(ROOT, engine_dir))
        if k is None:
            print(f"*{title}: {ROOT}/{kernel_dir} is missing.*\n")
            continue
        if e is None:
            # The preset engine's run is missing: the tables of the engine set as Linux is
            # below still stand beside the kernel.
            print(f"*{title}: {ROOT}/{engine_dir} is missing.*\n")
            e = {}
        else:
            table(title, k, e)
            means = {}
            for label, d in (("kernel", k), ("engine", e)):
                means[label] = {key: sum(g for g, _ in v.values()) / len(v) / 1e6 for key, v in d.items()}
            print("Mean goodput, Mbit/s (kernel / engine): " + "; ".join(
                f"retries {r}, {h} hops: {means['kernel'][(r, h)]:.2f} / "
                f"{means['engine'].get((r, h), float('nan')):.2f}"
                for r, h in sorted(means["kernel"], key=lambda x: (-x[0], x[1]))) + ".\n")
        sim = read(os.path.join(ROOT, engine_dir + "-sim"))
        if sim is not None and e:
            table(f"{title.split(',')[0]}, the engine on the emulator / in the simulator", e, sim)
        if engine_dir == "anchor-engine" and e:
            hold_dir = os.path.join(ROOT, "tcp-relay-forwarding-delay")
            for hold in ("0.0001", "0.0002", "0.0003"):
                held = read(hold_dir, ("flows[*].tcp.relay_forwarding_delay_s", hold))
                if held:
                    table(f"Testbed B, the engine on the emulator / in the simulator with each relay holding "
                          f"its packets {float(hold) * 1e6:.0f} us", e, held)
        linux = read(os.path.join(ROOT, linux_dir)) if linux_dir else None
        if linux is not None:
            table(f"{title.split(',')[0]}, the kernel on the emulator / the engine with Linux's settings in the "
                  "simulator", k, linux)
        # The engine with Linux's initial window and delayed ACKs on the emulator itself
        # (examples/emulator/testbed-{b,a}-cubic-engine-linux.toml): the kernel beside it, and
        # the same engine in the simulator.
        linux_emu = read(os.path.join(ROOT, engine_dir + "-linux"))
        if linux_emu is not None:
            table(f"{title.split(',')[0]}, the kernel / the engine with Linux's settings, both on the emulator",
                  k, linux_emu)
            if linux is not None:
                table(f"{title.split(',')[0]}, the engine with Linux's settings on the emulator / in the simulator",
                      linux_emu, linux)
        # The same engine on the emulator without relays (`--no-relays`, output
        # ROOT/<engine>-linux-norelay): its datagrams forwarded by the kernel alone, as the
        # kernel's TCP segments are, instead of netfilter's queue and `meshbed relay`.
        norelay = read(os.path.join(ROOT, engine_dir + "-linux-norelay"))
        if norelay is not None:
            table(f"{title.split(',')[0]}, the kernel / the engine with Linux's settings, both on the emulator, "
                  "the engine's datagrams forwarded without relays", k, norelay)
            if linux_emu is not None:
                table(f"{title.split(',')[0]}, the engine with Linux's settings on the emulator: with relays / "
                      "without", linux_emu, norelay)
            if linux is not None:
                table(f"{title.split(',')[0]}, the engine with Linux's settings on the emulator without relays / "
                      "in the simulator", norelay, linux)
        # With Linux's delayed-ACK timer too (40 ms, its ATO; [flows.tcp] delayed_ack_timeout_s):
        # on the emulator without relays (examples/emulator/testbed-b-cubic-engine-linux-ato.toml,
        # ROOT/<engine>-linux-ato-norelay) and in the simulator (examples/sensitivity/
        # tcp-cubic-linux-ato.toml, ROOT/tcp-cubic-linux-ato, its 40 ms rows).
        ato_emu = read(os.path.join(ROOT, engine_dir + "-linux-ato-norelay"))
        if ato_emu is not None:
            table(f"{title.split(',')[0]}, the kernel / the engine with Linux's settings and delayed-ACK timer, "
                  "both on the emulator without relays", k, ato_emu)
        if linux_dir:
            ato_sim = read(os.path.join(ROOT, linux_dir.replace("-settings", "-ato")),
                           ("flows[*].tcp.delayed_ack_timeout_s", "0.04"))
            if ato_sim:
                table(f"{title.split(',')[0]}, the kernel on the emulator / the engine with Linux's settings and "
                      "delayed-ACK timer in the simulator", k, ato_sim)
                if ato_emu is not None:
                    table(f"{title.split(',')[0]}, that engine on the emulator without relays / in the simulator",
                          ato_emu, ato_sim)
        # The user-space ends' latency (examples/sensitivity/tcp-endpoint-delay.toml, output
        # ROOT/tcp-endpoint-delay): the same engine in the simulator with each end holding the
        # flow's packets before its engine takes them, against none, and the engine on the
        # emulator without relays against each.
        if engine_dir == "anchor-engine":
            hold_dir = os.path.join(ROOT, "tcp-endpoint-delay")
            key = "flows[*].tcp.endpoint_delay_s"
            none = read(hold_dir, (key, "0.0"))
            for hold in ("0.00005", "0.0001", "0.0002"):
                held = read(hold_dir, (key, hold))
                if none and held:
                    us = f"{float(hold) * 1e6:.0f} us"
                    table(f"Testbed B, the engine with Linux's settings in the simulator, each end holding {us} / "
                          "none", held, none)
                    if ato_emu is not None:
                        table(f"Testbed B, that engine on the emulator without relays / in the simulator with "
                              f"each end holding {us}", ato_emu, held)


if __name__ == "__main__":
    main()
