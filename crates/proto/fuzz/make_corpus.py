#!/usr/bin/env python3
"""Writes the seed corpus of the wire_decode fuzz target (corpus/wire_decode/).

Layout of a datagram: see crates/proto/src/wire.rs. The connection id is the
one the fuzz driver's engines use (fuzz_targets/drive.rs CONN), so valid
packets reach the engines' state machines. Re-run after a wire change:
    python3 crates/proto/fuzz/make_corpus.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from wire_corpus import ACK, FIN, RST, SACK_MORE, SACK_OPT, SACK_REQ, SYN, packet, script  # noqa: E402

OUT = os.path.join(HERE, "corpus", "wire_decode")


seeds = {
    "data_packet": packet(0, seq=1436, d_max_us=2500, d_s_us=1000, hops=2, payload=bytes(range(200))),
    "syn_probe": packet(SYN | SACK_REQ),
    "syn_ack_feedback": packet(SYN | ACK | SACK_OPT, d_max_us=4000),
    "feedback_sack_blocks": packet(SACK_OPT | ACK, ack=1436, d_max_us=3000,
                                   blocks=[(2872, 4308), (5744, 8616), (10052, 11488)]),
    "feedback_20_blocks": packet(SACK_OPT | ACK, ack=0, d_max_us=3000,
                                 blocks=[((2 * k + 1) * 1436, (2 * k + 2) * 1436) for k in range(20)]),
    "feedback_fin": packet(SACK_OPT | ACK | FIN, ack=5000, d_max_us=1000),
    "feedback_sack_more": packet(SACK_OPT | ACK | SACK_MORE, ack=1436, d_max_us=1000),
    "fin": packet(FIN, seq=20000, d_s_us=1000),
    "rst": packet(RST),
    "truncated": packet(0, payload=b"abc")[:20],
    "bad_version": packet(0, version=7, payload=b"x"),
    "bad_protocol": packet(0, proto=9),
    "unknown_flags": packet(0x08),
    "bad_sack_len": packet(SACK_OPT, sack_len=17) + bytes(17),
    "sack_past_end": packet(SACK_OPT, sack_len=32) + bytes(16),
    "reversed_sack_block": packet(SACK_OPT | ACK, blocks=[(100, 50)]),
    "data_in_feedback": packet(SACK_OPT | ACK, payload=b"no data here"),
    "huge_seq": packet(FIN, seq=2**64 - 5, payload=b"0123456789"),
    # A whole default-preset transfer: only time passes, the engines talk.
    "session_default": script(0, [(2, 10)] * 60 + [(2, 0xFFFF)] * 3),
    # Adaptive preset with injected feedback and data along the way.
    "session_adaptive_injected": script(2, [(2, 5)] * 10 + [
        (1, packet(SACK_OPT | ACK | SACK_MORE, ack=1436, d_max_us=900, blocks=[(2872, 4308)])),
        (0, packet(0, seq=40000, d_max_us=9000, d_s_us=100, payload=b"z" * 100)),
        (3, packet(SACK_REQ, seq=0, payload=b"y" * 50)),
    ] + [(2, 20)] * 40 + [(2, 0xFFFF)] * 3),
}

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {OUT}")
