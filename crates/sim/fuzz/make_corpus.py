#!/usr/bin/env python3
"""Writes the seed corpus of the scenario_toml fuzz target
(corpus/scenario_toml/): a mode byte (fuzz_targets/drive.rs), then either
scenario text (mode 0) or the bytes that drive the structured generator
(fuzz_targets/hostile_toml.rs) from base `mode / 4` (the examples, then the
reference's specimens).

The text seeds are the examples, each as it is and with one hostile value
(NaN, infinities, 1e300, zero, negative, huge integers, the wrong type, a
very long string, an unknown key); the structured seeds give the generator
fixed pseudo-random bytes for each base. tests/fuzz_corpus.rs checks that
the examples are read and run, and that each hostile text is refused with
its key. Re-run after changing the examples or the mode byte:
    python3 crates/sim/fuzz/make_corpus.py
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "scenario_toml")
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples")
# drive.rs EXAMPLES, in order.
NAMES = ["chain", "broch", "olsr-etx", "random-waypoint", "aodv-random-waypoint", "walk-away"]
TEXT = 0
BASES = 16  # more than there are: the mode wraps


def example(name):
    with open(os.path.join(EXAMPLES, name + ".toml")) as f:
        return f.read()


def text(t):
    return bytes([TEXT]) + t.encode()


CHAIN = example("chain")

# (name, the change to chain.toml): each must be refused
HOSTILE = [
    ("duration_nan", ("duration_s = 15.0", "duration_s = nan")),
    ("duration_inf", ("duration_s = 15.0", "duration_s = inf")),
    ("duration_1e300", ("duration_s = 15.0", "duration_s = 1e300")),
    ("duration_zero", ("duration_s = 15.0", "duration_s = 0.0")),
    ("duration_negative", ("duration_s = 15.0", "duration_s = -15.0")),
    ("duration_string", ("duration_s = 15.0", 'duration_s = "NaN"')),
    ("seed_negative", ("seed = 1", "seed = -1")),
    ("nodes_zero", ("nodes = 4", "nodes = 0")),
    ("nodes_huge", ("nodes = 4", "nodes = 9223372036854775807")),
    ("nodes_10001", ("nodes = 4", "nodes = 10001")),
    ("spacing_nan", ("spacing_m = 200.0", "spacing_m = nan")),
    ("spacing_negative", ("spacing_m = 200.0", "spacing_m = -200.0")),
    ("rate_not_a_rate", ("data_rate_kbps = 24000", "data_rate_kbps = 24001")),
    ("standard_long", ('standard = "802.11a"', 'standard = "' + "802.11a" * 10000 + '"')),
    # Once reported as `radio = <the whole [radio] table>`: radio.standard.
    ("standard_unknown", ('standard = "802.11a"', 'standard = "802.11x"')),
    ("protocol_nan", ('protocol = "atp-default"', 'protocol = "NaN"')),
    ("bytes_zero", ("bytes = 1000000", "bytes = 0")),
    ("bytes_huge", ("bytes = 1000000", "bytes = 18446744073709551615")),
    ("start_after_end", ("start_s = 1.0", "start_s = 1e300")),
    ("dst_missing_node", ("dst = 3", "dst = 4294967295")),
    ("src_is_dst", ("src = 0", "src = 3")),
    ("unknown_key", ("spacing_m = 200.0", "spacing_m = 200.0\nspacingm = 1")),
    ("unknown_table", ("[radio]", "[radoi]")),
    ("routing_unknown_kind", ('kind = "shortest-path"', 'kind = "nan"')),
    ("duplicate_key", ("nodes = 4", "nodes = 4\nnodes = 5")),
    ("not_toml", ("[topology]", "[topology")),
]

seeds = {}
for name in NAMES:
    seeds[f"example_{name}"] = text(example(name))
for name, (old, new) in HOSTILE:
    assert old in CHAIN, old
    seeds[f"hostile_{name}"] = text(CHAIN.replace(old, new, 1))
rng = random.Random(7)
for base in range(BASES):
    for k in range(2):
        seeds[f"generated_base{base}_{k}"] = bytes([1 + 4 * base]) + bytes(rng.randrange(256) for _ in range(96))

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {OUT}")
