"""Wall time of one built-in sweep run locally (threads) and on a local Ray
cluster of two nodes with one CPU each, and Ray's overhead per run.

    python python/benchmarks/ray_overhead.py [EXPERIMENT] [REPETITIONS]

Both runs have two runs going at once. The overhead per run is the extra
wall time times the two slots, over the runs; starting the cluster is
reported apart. The rows of both are checked to be identical.
"""

import sys
import time

import pandas as pd
import ray

import meshbed
from meshbed import ray_local

name = sys.argv[1] if len(sys.argv) > 1 else "testbed-a-single"
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 2

t = time.perf_counter()
local = meshbed.sweep(name, repetitions=reps, backend="local", jobs=2, progress=False)
local_s = time.perf_counter() - t
runs = len(local.attrs["trace_hashes"])

t = time.perf_counter()
c = ray_local.start(nodes=2, num_cpus=1)
start_s = time.perf_counter() - t

t = time.perf_counter()
on_ray = meshbed.sweep(name, repetitions=reps, backend="ray", progress=False)
ray_s = time.perf_counter() - t
pd.testing.assert_frame_equal(on_ray, local)
assert on_ray.attrs["trace_hashes"] == local.attrs["trace_hashes"]
ray.shutdown()
c.shutdown()

print(f"{name}, {reps} repetitions: {runs} runs, identical rows and trace hashes")
print(f"local (2 threads):            {local_s:7.2f} s")
print(f"Ray, 2 nodes × 1 CPU:         {ray_s:7.2f} s  (+ {start_s:.1f} s to start the cluster)")
print(f"Ray overhead per run:         {(ray_s - local_s) * 2 / runs * 1000:7.1f} ms")
