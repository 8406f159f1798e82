#!/usr/bin/env python3
"""Writes the seed corpus of the engines fuzz target (corpus/engines/).

Script layout: fuzz_targets/engines_drive.rs (two selector bytes, then
(op, u16 arg[, bytes]) records). Every protocol of Protocol::ALL gets an
honest session that completes, most also one through a lossy, duplicating,
reordering channel, and hostile ones. tests/fuzz_corpus.rs checks that the
honest seeds deliver every byte once. Re-run after a change of the script
layout:
    python3 crates/proto/fuzz/make_engines_corpus.py
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from wire_corpus import ACK, FIN, RST, SACK_OPT, SACK_REQ, SYN, packet, script  # noqa: E402

OUT = os.path.join(HERE, "corpus", "engines")

# Protocol::ALL, in order (the selector's index).
PROTOCOLS = ["atp-default", "atp-aggressive", "atp-adaptive", "tcp-tahoe", "tcp-reno", "tcp-newreno",
             "tcp-newreno-elfn", "tcp-reno-paced", "tcp-newreno-paced", "mtl", "tcp-cubic", "tcp-sack", "tcp-bbr"]
# Selector option bits (engines_drive.rs).
STREAMING, COMMIT, SMALL_BUFFERS, TRACE, STALLED = 1, 2, 4, 8, 16
# Ops (op % 10).
TO_RECEIVER, TO_SENDER, TIME, STAMPED, LOSS, DUPLICATE, REVERSE, FORGED, ROUTE, READ = range(10)


def selector(protocol, options=0):
    """The two selector bytes: the protocol's index, the option bits."""
    return [PROTOCOLS.index(protocol), options]


def steps(n, arg=100):
    """n time steps of arg · 100 us (10 ms by default)."""
    return [(TIME, arg)] * n


def forged(control, seq=0, ack=0, payload=b""):
    """An op-7 record body: [control, seq (u32), ack (u32), payload]."""
    return bytes([control]) + struct.pack(">II", seq, ack) + payload


def other_side(op):
    """Op 7 (forged: the receiver) or 8 (routing: the sender) aimed at the
    other side (op / 10 odd)."""
    return op + 10


seeds = {}
for p in PROTOCOLS:
    atp = p.startswith("atp")
    # Enough 10 ms steps for every option set (ATP-default streams an
    # 8 KiB window per 0.5 s epoch).
    n = 200 if p == "atp-default" else 60
    seeds[f"clean_{p}"] = script(selector(p), steps(n))
    seeds[f"streaming_commit_{p}"] = script(selector(p, STREAMING | COMMIT), steps(n))
    seeds[f"small_stalled_{p}"] = script(selector(p, SMALL_BUFFERS | STALLED),
                                         steps(20) + [(READ, 700)] + steps(n))
    # Honest impairments, then long steps so that retransmission timers fire.
    seeds[f"lossy_{p}"] = script(selector(p, TRACE),
                                 steps(2) + [(LOSS, 0b0100_1001_0010_0100), (DUPLICATE, 0b1000_0100_0001_0010),
                                             (REVERSE, 3)]
                                 + steps(n) + steps(40, 0x2000))
    seeds[f"route_notices_{p}"] = script(selector(p, TRACE),
                                         steps(3) + [(ROUTE, 0)]
                                         + steps(30) + [(ROUTE, 1), (ROUTE, 2 + 3 * 41), (other_side(ROUTE), 2)]
                                         + steps(n) + steps(20, 0x2000))
    # Hostile: forged resets, FINs, acknowledgements of bytes never sent,
    # data far ahead, garbage and stamped garbage, mid-transfer.
    seeds[f"hostile_{p}"] = script(selector(p, COMMIT), steps(3) + [
        (FORGED, forged(ACK | SACK_OPT if atp else ACK, seq=0, ack=1_000_000)),
        (other_side(FORGED), forged(ACK, ack=50_000, payload=bytes(32))),
        (FORGED, forged(0, seq=30_000, payload=b"q" * 200)),
        (FORGED, forged(FIN, seq=10)),
        (TO_SENDER, packet(SACK_OPT | ACK, ack=1436, blocks=[(5000, 2000)])),
        (TO_RECEIVER, packet(SYN | SACK_REQ)),
        (STAMPED, packet(0, seq=2**63, payload=b"x" * 10)),
        (TO_RECEIVER, b"\x01\x01"),
    ] + steps(10) + [(other_side(FORGED), forged(RST))] + steps(n))
    seeds[f"syn_storm_{p}"] = script(selector(p), [(FORGED, forged(SYN | SACK_REQ, seq=k)) for k in range(20)]
                                     + [(other_side(FORGED), forged(SYN | ACK))] + steps(10))

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {OUT}")
