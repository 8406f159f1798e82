#!/usr/bin/env python3
"""Writes the seed corpus of the recv_datagrams fuzz target (corpus/recv_datagrams/).

The script format is fuzz_targets/drive.rs's: a selector byte, then records
(op, u16 arg[, bytes]). Datagram layout: crates/proto/src/wire.rs; transfer
header: crates/net/src/framing.rs. Re-run after a format change:
    python3 crates/net/fuzz/make_corpus.py
"""
import hashlib
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "proto", "fuzz"))
import wire_corpus  # noqa: E402
from wire_corpus import ACK, FIN, RST, SACK_MORE, SACK_OPT, SACK_REQ, SYN, script  # noqa: E402, F401
OUT = os.path.join(HERE, "corpus", "recv_datagrams")
PROTOCOLS = ["atp-default", "atp-aggressive", "atp-adaptive", "tcp-tahoe", "tcp-reno", "tcp-newreno"]


def conn_id(k):
    """drive.rs template op: protocol k % 6, number k (crates/net/src/conn.rs)."""
    return ((1 + k % 6) << 28) | (k & 0x0FFFFFFF)


def packet(control, conn, seq=0, payload=b"", proto=1, d_max_us=1000):
    return wire_corpus.packet(control, seq=seq, d_max_us=d_max_us, payload=payload, proto=proto, conn=conn)


def header(name, data, size=None):
    n = name.encode()
    size = len(data) if size is None else size
    return b"MBFX\x01\x00" + struct.pack(">H", len(n)) + n + struct.pack(">Q", size) + hashlib.sha256(data).digest()


def stream(name, data):
    return header(name, data) + data


def template(control, k, seq, payload=b""):
    """drive.rs op 2: [control, k, seq u32, payload]."""
    return bytes([control, k]) + struct.pack(">I", seq) + payload


def transfer(k, name, data, chunk=500, skip=()):
    """Template ops for a whole ATP transfer (k % 6 < 3) from peer k % 4."""
    s = stream(name, data)
    ops = [(2, template(SYN, k, 0))]
    pieces = [s[i:i + chunk] for i in range(0, len(s), chunk)]
    for i, p in enumerate(pieces):
        if i in skip:
            continue
        fin = FIN if i == len(pieces) - 1 else 0
        ops.append((2, template(fin, k, i * chunk, p)))
    return ops


DATA = bytes((i * 13 + 1) % 256 for i in range(1200))
seeds = {
    # Part 1 on its own: a valid stream for the sink.
    "stream_valid": stream("a.txt", b"hello, mesh"),
    "stream_bad_magic": b"MBFY\x01\x00\x00\x01x" + bytes(40),
    "stream_name_256": b"MBFX\x01\x00\x01\x00" + b"n" * 256 + bytes(40),
    "stream_bidi_name": stream("invoice\u202efdp.exe", b"x"),
    "stream_temp_name": stream(".meshbed-0123456789abcdef.partial", b"x"),
    # The real sender's whole transfer (ATP default, then TCP Tahoe).
    "session_atp": script(0, [(3, 63)] * 40),
    "session_tcp": script(3 << 2, [(3, 63)] * 40),
    # Template transfers: one complete, one with a hole, one with a bad hash.
    "template_transfer": script(0, transfer(0, "t.bin", DATA) + [(1, 10)]),
    "template_hole": script(0, transfer(1, "h.bin", DATA * 20, chunk=700, skip=(0,)) + [(1, 100)]
                            + transfer(1, "h.bin", DATA * 20, chunk=700)[1:2]),
    "template_bad_hash": script(0, [(2, template(SYN, 2, 0)),
                                    (2, template(FIN, 2, 0, header("b.bin", b"other", 5) + b"wrong"))]),
    # SYNs from many numbers and peers: eviction, the per-peer share, refusals.
    "syn_flood": script(0, [(2, template(SYN, k, 0)) for k in range(24)] + [(1, 600)]
                        + [(2, template(SYN, k, 0)) for k in range(24, 40)]),
    "syn_flood_with_headers": script(2, sum(([(2, template(SYN, k, 0)),
                                              (2, template(0, k, 0, header("x", b"", 1 << 30)))]
                                             for k in range(12)), []) + [(1, 700)]
                                     + [(2, template(SYN, 40, 0))]),
    # One-byte pieces after a hole: the reorder caps.
    "one_byte_pieces": script(0, [(2, template(SYN, 3, 0))]
                              + [(2, template(0, 3, 2 * i + 1, b"p")) for i in range(200)]),
    # Raw datagrams: stray data, a reset, feedback, a truncated one.
    "raw_datagrams": script(0, [(0, packet(0, conn_id(5), seq=10, payload=b"stray")),
                                (0, packet(RST, conn_id(0))),
                                (0, packet(SACK_OPT | ACK, conn_id(1))),
                                (4, packet(SYN, conn_id(2))),
                                (5, packet(SYN, 0x01020304)),
                                (0, b"\x01\x01short")]),
}

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {OUT}")
