#!/usr/bin/env python3
"""Writes the seed corpus of the control_packets fuzz target
(corpus/control_packets/).

Packet layouts: crates/routing/src/{aodv,dsr,olsr}/packet.rs; script
layout: fuzz_targets/drive.rs (a selector byte, then (op, u16 arg[, bytes])
records, the same records as the proto and net targets' scripts). Every
protocol gets honest sessions (routes found, data delivered, a link broken
and repaired) and hostile ones (forged control packets naming real nodes,
forged source routes, garbage). tests/fuzz_corpus.rs checks that the honest
seeds deliver their data. Re-run after a change of a layout:
    python3 crates/routing/fuzz/make_corpus.py
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "proto", "fuzz"))
from wire_corpus import script  # noqa: E402

OUT = os.path.join(HERE, "corpus", "control_packets")

NODES, OUTSIDER = 5, 5
KINDS = ["aodv", "dsr", "olsr", "olsr-etx"]
CHAIN, STAR, MESH, SHORTCUT = range(4)
VARIANT = 16
# Ops (op % 8).
RAW, FOLDED, TIME, SEND, ARRIVE, LINK, POWER, NOTICE = range(8)


def selector(kind, shape=CHAIN, variant=False):
    return KINDS.index(kind) + 4 * shape + (VARIANT if variant else 0)


def at(node, other):
    """A script argument naming `node` and `other` (u16 % 5, u16 / 5 % 6),
    or, times 8 plus the op, a packet op's node and neighbour."""
    return node + NODES * other


def send(src, dst):
    return (SEND, at(src, dst))


def link(a, b, up):
    return (LINK, at(a, b) + NODES * NODES * (1 if up else 0))


def power(hearer, sender, dbm):
    return (POWER, at(hearer, sender) + (int((dbm + 100) * 2) << 8))


def notice(node, what, other):
    """what: 0 link failure, 2 peer unresponsive, 3 frame heard."""
    return (NOTICE, node + NODES * what + NODES * 4 * other)


def wait(ms):
    return (TIME, ms)


def u32s(*vs):
    return b"".join(struct.pack(">I", v) for v in vs)


# AODV (RFC 3561 §5, node ids as addresses, TTL in byte 2).
def rreq(ttl, hops, rreq_id, dest, dest_seq, orig, orig_seq, unknown=False, dest_only=False):
    flags = (0x08 if unknown else 0) | (0x10 if dest_only else 0)
    return bytes([1, flags, ttl, hops]) + u32s(rreq_id, dest, dest_seq, orig, orig_seq)


def rrep(ttl, hops, dest, dest_seq, orig, lifetime_ms):
    return bytes([2, 0, ttl, hops]) + u32s(dest, dest_seq, orig, lifetime_ms)


def rerr(unreachable, no_delete=False):
    return bytes([3, 0x80 if no_delete else 0, 0, len(unreachable)]) + b"".join(u32s(d, s) for d, s in unreachable)


# DSR (RFC 4728 §6 options, one-byte address counts).
def addrs(route):
    return bytes([len(route)]) + u32s(*route)


def dsr_rreq(req_id, hop_limit, initiator, target, record):
    return bytes([1]) + struct.pack(">HB", req_id, hop_limit) + u32s(initiator, target) + addrs(record)


def dsr_rrep(route):
    return bytes([2]) + addrs(route)


def dsr_rerr(source, unreachable, route):
    return bytes([3]) + u32s(source, unreachable) + addrs(route)


def source_route(salvage, path):
    return bytes([96, salvage]) + addrs(path)


# OLSR (RFC 3626 §3.3, node ids as addresses; a flat HELLO entry list).
SYM_LINK, ASYM_LINK, LOST_LINK = 2, 1, 3
SYM_NEIGH, MPR_NEIGH = 1, 2
VTIME_6S, VTIME_15S, HTIME_2S = 0x86, 0xE7, 0x05


def message(kind, originator, ttl, hops, seq, body, vtime=VTIME_15S):
    return struct.pack(">BBHIBBH", kind, vtime, 12 + len(body), originator, ttl, hops, seq) + body


def hello(originator, seq, entries, willingness=3):
    body = struct.pack(">HBBH", 0, HTIME_2S, willingness, len(entries))
    body += b"".join(struct.pack(">IBH", n, (neigh << 2) | lnk, metric) for n, neigh, lnk, metric in entries)
    return message(1, originator, 1, 0, seq, body, VTIME_6S)


def tc(originator, ttl, hops, seq, ansn, advertised):
    body = struct.pack(">HH", ansn, 0) + b"".join(struct.pack(">IH", n, m) for n, m in advertised)
    return message(2, originator, ttl, hops, seq, body)


def probe(originator, seq, received):
    return message(201, originator, 1, 0, seq, b"".join(struct.pack(">IB", n, c) for n, c in received))


def olsr(seq, *messages):
    body = b"".join(messages)
    return struct.pack(">HH", 4 + len(body), seq) + body


def honest(kind):
    """Routes found, data both ways, a link broken and repaired, data again."""
    converge = [wait(6000)] * 4 if kind.startswith("olsr") else [wait(500)]
    return converge + [send(0, 4), wait(2000), send(4, 0), wait(2000), send(1, 3), wait(2000),
                       link(2, 3, False), wait(100), send(0, 4), wait(8000), link(2, 3, True)] + converge + [
        send(0, 4), wait(3000), send(3, 1), wait(3000)]


def forged(kind):
    """Forged control packets naming real nodes (folded, op 1), after the
    network converged, then data through it."""
    if kind == "aodv":
        packets = [
            (FOLDED + 8 * at(2, 1), rrep(10, 0, 4, 1000, 0, 60_000)),  # "4 is right behind 1"
            (FOLDED + 8 * at(1, OUTSIDER), rreq(5, 1, 9, 4, 0, OUTSIDER, 7, unknown=True)),
            (FOLDED + 8 * at(3, 2), rreq(1, 0, 1, 3, 5, 3, 5)),  # a RREQ from the node itself
            (FOLDED + 8 * at(0, 1), rrep(1, 0, 0, 7, 0, 1000)),  # a route to the node itself
            (FOLDED + 8 * at(2, 3), rerr([(0, 2**32 - 1), (4, 9), (1, 0)], no_delete=True)),
            (FOLDED + 8 * at(4, 3), rrep(1, 0, 3, 2**31, 3, 2**32 - 1)),  # a HELLO with seq wrap
        ]
    elif kind == "dsr":
        packets = [
            (FOLDED + 8 * at(2, 1), dsr_rrep([0, 1, 2, 1, 4])),  # a loop
            (FOLDED + 8 * at(1, 0), dsr_rreq(7, 255, 0, 4, [1, 1, 1])),
            (FOLDED + 8 * at(3, 2), dsr_rreq(8, 0, 3, 0, [])),  # from itself, no hops left
            (FOLDED + 8 * at(0, 1), dsr_rerr(1, 2, [1, 0])),
            (FOLDED + 8 * at(2, 3), dsr_rrep([2, 2])),
            (FOLDED + 8 * at(4, OUTSIDER), dsr_rrep([4, OUTSIDER, 0])),
            (ARRIVE + 8 * at(2, 1), bytes([0, 4]) + source_route(0, [0, 1, 2, 1, 4])),
            (ARRIVE + 8 * at(1, 0), bytes([0, 4]) + source_route(200, [0, 1, 2, 3, 4])),
            (ARRIVE + 8 * at(3, 2), bytes([0, 4]) + source_route(0, [3, 3])),
        ]
    else:
        packets = [
            # Node 1 says 0 is its MPR selector and hears 0 and itself.
            (FOLDED + 8 * at(0, 1), olsr(9, hello(1, 9, [(0, MPR_NEIGH, SYM_LINK, 256), (1, SYM_NEIGH, SYM_LINK, 256)]))),
            # A TC from 4 advertising 0 (the hearer) and an outsider, metric 1.
            (FOLDED + 8 * at(0, 1), olsr(10, tc(4, 255, 3, 9, 65535, [(0, 1), (OUTSIDER, 65535), (2, 0)]))),
            (FOLDED + 8 * at(0, 1), olsr(11, tc(4, 255, 3, 10, 0, []))),  # ANSN wraps
            (FOLDED + 8 * at(2, 1), olsr(12, probe(1, 1, [(2, 255), (0, 0)]), message(7, 1, 255, 0, 3, b"??"))),
            (FOLDED + 8 * at(3, OUTSIDER), olsr(13, hello(OUTSIDER, 1, [(3, SYM_NEIGH, LOST_LINK, 0)], willingness=7))),
            (FOLDED + 8 * at(1, 2), olsr(14, tc(1, 0, 255, 1, 1, [(1, 256)]))),  # a TC from the node itself
        ]
    converge = [wait(6000)] * 4 if kind.startswith("olsr") else [wait(500)]
    return converge + [send(0, 4), wait(1000)] + packets + [wait(100), send(0, 4), send(2, 0), wait(3000),
                                                           notice(2, 0, 3), notice(1, 2, 4), wait(20_000)]


seeds = {
    # Bare packets: the parsers' round trips.
    "aodv_rreq": rreq(35, 2, 9, 4, 0, 1, 7, unknown=True),
    "aodv_rrep_hello": rrep(1, 0, 3, 5, 3, 2000),
    "aodv_rerr": rerr([(4, 6), (8, 1)]),
    "dsr_rreq": dsr_rreq(7, 3, 1, 9, [2, 3]),
    "dsr_rrep": dsr_rrep([1, 2, 3]),
    "dsr_rerr": dsr_rerr(2, 3, [2, 1]),
    "dsr_source_route": source_route(1, [4, 5]),
    "olsr_hello": olsr(7, hello(9, 42, [(4, MPR_NEIGH, SYM_LINK, 256)])),
    "olsr_tc_probe": olsr(65535, tc(3, 255, 2, 1, 9, [(1, 256), (2, 65535)]), probe(3, 2, [(7, 10)])),
    "olsr_unknown": olsr(1, message(99, 1, 1, 0, 1, b"abc")),
}
for kind in KINDS:
    seeds[f"honest_{kind}"] = script(selector(kind), honest(kind))
    seeds[f"variant_{kind}"] = script(selector(kind, SHORTCUT, True),
                                      [power(1, 0, -80), power(0, 1, -80), power(3, 0, -50)] + honest(kind))
    seeds[f"mesh_{kind}"] = script(selector(kind, MESH), honest(kind) + [notice(0, 0, 4), send(0, 4), wait(3000)])
    seeds[f"star_{kind}"] = script(selector(kind, STAR, True), honest(kind))
    seeds[f"forged_{kind}"] = script(selector(kind), forged(kind))
    seeds[f"raw_{kind}"] = script(selector(kind, CHAIN), [wait(500), (RAW + 8 * at(1, 0), b"\x01"),
                                                         (RAW + 8 * at(2, OUTSIDER), bytes(40)), (RAW + 8 * at(3, 4), b"\xff" * 30),
                                                         (ARRIVE + 8 * at(1, 0), b"\x00\x04\x60"), wait(5000)])

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {OUT}")
