"""Builders shared by the fuzz corpus scripts (crates/proto/fuzz and
crates/net/fuzz): a meshbed datagram (layout: crates/proto/src/wire.rs) and
a fuzz driver script (fuzz_targets/drive.rs: a selector byte, then
(op, u16 arg[, bytes]) records)."""
import struct

SACK_MORE, SACK_OPT, SACK_REQ, ACK, RST, SYN, FIN = 0x80, 0x40, 0x20, 0x10, 0x04, 0x02, 0x01


def packet(control, seq=0, ack=0, d_max_us=0, d_s_us=0, blocks=(), payload=b"",
           proto=1, version=1, hops=0, conn=0x01020304, sack_len=None):
    sack = b"".join(struct.pack(">QQ", s, e) for s, e in blocks)
    if sack_len is None:
        sack_len = len(sack)
    head = struct.pack(">BBBBHHIQQII", proto, version, control, hops, sack_len, 0, conn,
                       seq, ack, d_max_us, d_s_us)
    assert len(head) == 36
    return head + sack + payload


def script(selector, ops):
    """drive.rs script: the selector (a byte, or bytes), then (op, u16 arg,
    bytes) records."""
    out = bytes(selector) if isinstance(selector, (bytes, list)) else bytes([selector])
    for op, arg in ops:
        if isinstance(arg, bytes):
            out += bytes([op]) + struct.pack(">H", len(arg)) + arg
        else:
            out += bytes([op]) + struct.pack(">H", arg)
    return out
