#!/usr/bin/env python3
"""Writes the seed corpus of the movement_files fuzz target
(corpus/movement_files/): a selector byte (fuzz_targets/drive.rs: bit 0
BonnMotion, bit 1 three dimensions, bit 2 small bounds), then the file.

`accepted_*` seeds are files the readers take (at and inside the bounds);
`refused_*` seeds each hold one hostile value that must be refused, quickly,
with the file and line: among them the lines of the issue where
`setdest 300 0 1e300` made the simulator spin forever. tests/fuzz_corpus.rs
checks both. Re-run after a change of the selector:
    python3 crates/mobility/fuzz/make_corpus.py
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "movement_files")
EXAMPLE = os.path.join(HERE, "..", "..", "..", "examples", "scen-3-nodes.tcl")

NS2, BONNMOTION, THREE_D, SMALL = 0, 1, 2, 4

START = "$node_(0) set X_ 1\n$node_(0) set Y_ 1\n"


def ns2(text, small=False):
    return bytes([NS2 | (SMALL if small else 0)]) + text.encode()


def bm(text, three_d=False, small=False):
    return bytes([BONNMOTION | (THREE_D if three_d else 0) | (SMALL if small else 0)]) + text.encode()


def setdest(t, node, x, y, speed):
    return f'$ns_ at {t} "$node_({node}) setdest {x} {y} {speed}"\n'


def random_waypoint(nodes, moves, width, speed, seed):
    """A `setdest`-style file: every node's start, then its moves in time order."""
    rng = random.Random(seed)
    text = "# nodes: %d, max speed: %.1f\n" % (nodes, speed)
    for n in range(nodes):
        text += f"$node_({n}) set X_ {rng.uniform(0, width):.6f}\n$node_({n}) set Y_ {rng.uniform(0, width):.6f}\n"
        text += f"$node_({n}) set Z_ 0.000000\n"
    for n in range(nodes):
        t = 0.0
        for _ in range(moves):
            t += rng.uniform(0.0, 5.0)
            text += setdest(f"{t:.6f}", n, f"{rng.uniform(0, width):.6f}", f"{rng.uniform(0, width):.6f}",
                            f"{rng.uniform(0.0, speed):.6f}")
    text += '$ns_ at 50.0 "$god_ set-dist 0 1 2"\n$god_ set-dist 0 1 1\n'
    return text


def bm_waypoints(nodes, points, width, seed, three_d=False, min_dt=1.0):
    rng = random.Random(seed)
    lines = []
    for _ in range(nodes):
        t, words = 0.0, []
        x, y = rng.uniform(0, width), rng.uniform(0, width)
        for _ in range(points):
            words += [f"{t:.3f}", f"{x:.3f}", f"{y:.3f}"] + (["0.0"] if three_d else [])
            t += rng.uniform(min_dt, min_dt + 9.0)
            x, y = rng.uniform(0, width), rng.uniform(0, width)
        lines.append(" ".join(words))
    return "\n".join(lines) + "\n"


with open(EXAMPLE) as f:
    example = f.read()

seeds = {
    "accepted_ns2_example": ns2(example),
    "accepted_ns2_random_waypoint": ns2(random_waypoint(6, 8, 1000.0, 20.0, 1)),
    "accepted_ns2_small": ns2(random_waypoint(4, 5, 400.0, 15.0, 2), small=True),
    # A setdest that cuts the one before short, and a speed of zero.
    "accepted_ns2_cut_short": ns2(START + setdest(1, 0, 300, 0, 1) + setdest(5, 0, 0, 300, 2)
                                  + setdest(6, 0, 50, 50, 0)),
    # Every value at its bound; a speed so small the leg ends after the
    # simulator's last instant.
    "accepted_ns2_at_the_bounds": ns2("$node_(1) set X_ -20000000\n$node_(1) set Y_ 20000000\n" + START
                                      + setdest(86400, 1, 20000000, -20000000, 1000) + setdest(0, 0, 1, 1, 1e-300)),
    "accepted_ns2_small_at_the_bounds": ns2("".join(f"$node_({n}) set X_ {-500 + n}\n$node_({n}) set Y_ 500\n"
                                                    for n in range(8)) + setdest(600, 7, 500, -500, 20), small=True),
    "accepted_bm_2d": bm(bm_waypoints(5, 8, 800.0, 3)),
    "accepted_bm_3d": bm(bm_waypoints(3, 6, 300.0, 4, three_d=True), three_d=True),
    "accepted_bm_small": bm(bm_waypoints(3, 4, 100.0, 5, min_dt=10.0), small=True),
    # A node that does not move, and one at 999.9 m/s.
    "accepted_bm_fast": bm("0 0 0\n0 0 0 1 999.9 0 2 0 0\n"),
    # The hostile lines: each must be refused, not run.
    "refused_ns2_speed_1e300": ns2(START + setdest(1, 0, 300, 0, "1e300")),
    "refused_ns2_x_1e300": ns2(START + setdest(1, 0, "1e300", 0, 10)),
    "refused_ns2_time_1e300": ns2(START + setdest("1e300", 0, 3, 0, 10)),
    "refused_ns2_speed_inf": ns2(START + setdest(1, 0, 300, 0, "inf")),
    "refused_ns2_speed_nan": ns2(START + setdest(1, 0, 300, 0, "NaN")),
    "refused_ns2_speed_negative": ns2(START + setdest(1, 0, 300, 0, -3)),
    "refused_ns2_time_negative": ns2(START + setdest(-1, 0, 3, 0, 10)),
    "refused_ns2_start_out_of_bounds": ns2("$node_(0) set X_ -3e7\n$node_(0) set Y_ 0\n"),
    "refused_ns2_setdest_short": ns2(START + '$ns_ at 1 "$node_(0) setdest 3 0"\n'),
    "refused_ns2_two_destinations": ns2(START + setdest(2, 0, 3, 0, 1) + setdest(2, 0, 5, 0, 1)),
    "refused_ns2_node_2000": ns2("$node_(2000) set X_ 1\n"),
    "refused_ns2_node_u32_overflow": ns2("$node_(4294967296) set X_ 1\n"),
    "refused_ns2_no_start": ns2(START + setdest(1, 1, 3, 0, 1)),
    "refused_ns2_small_speed": ns2(START + setdest(1, 0, 3, 0, 21), small=True),
    "refused_bm_speed": bm("0 0 0 1 0 0\n0 0 0 1 0 0 2 5000 0\n"),
    "refused_bm_x_1e300": bm("0 1 1 1 1e300 1\n"),
    "refused_bm_time_1e300": bm("0 1 1 1e300 2 1\n"),
    "refused_bm_same_time": bm("0 0 0 1 0 0 1 5 0\n"),
    "refused_bm_time_backwards": bm("5 1 2 1 3 3\n"),
    "refused_bm_nan": bm("0 nan 0\n"),
    "refused_bm_width": bm("0 1 2 3\n"),
    "refused_bm_gzip": bytes([BONNMOTION, 0x1F, 0x8B, 8, 0]),
    "refused_bm_not_utf8": bytes([BONNMOTION, 0xFF, 0xFE, 0]),
    "refused_bm_small_nodes": bm("0 0 0\n" * 9, small=True),
}

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {OUT}")
