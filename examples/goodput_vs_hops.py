"""Goodput against hop count, from Python: runs the built-in testbed A
single-flow experiment (seed 001 Fig. 5.1 / seed 000 Fig. 5: one 2 MB
transfer over a 1–6-hop chain, every protocol) and draws mean goodput ± one
standard deviation per protocol with matplotlib.

    pip install ./python matplotlib      # once
    python examples/goodput_vs_hops.py --repetitions 2 --out goodput_vs_hops.png
    python examples/goodput_vs_hops.py --ray auto   # the same sweep on a running Ray cluster

It runs as a script or cell by cell in a notebook (Jupyter's "# %%" cells).
"""

# %%
import argparse
import pathlib

import matplotlib

matplotlib.use("Agg")  # a file, no display needed
import matplotlib.pyplot as plt  # noqa: E402

import meshbed  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--experiment", default="testbed-a-single", help="a built-in experiment, or an experiment file, with a `hops` axis")
parser.add_argument("--repetitions", type=int, default=None, help="default: the experiment's own")
parser.add_argument("--ray", metavar="ADDRESS", help="run on the Ray cluster at ADDRESS (`auto`: the local one)")
parser.add_argument("--out", default="goodput_vs_hops.png", help="the figure (PNG)")
args, _ = parser.parse_known_args()  # a notebook kernel passes its own arguments

# %% Run every point × repetition: one row per flow per run, flows.csv's columns.
if args.ray:
    import ray

    ray.init(address=args.ray)
# As `meshbed experiment run`: a built-in's name, else a file of that name.
source = args.experiment if args.experiment in meshbed.experiments() else pathlib.Path(args.experiment)
flows = meshbed.sweep(source, repetitions=args.repetitions, backend="ray" if args.ray else "local")
print(f"{len(flows)} flows from {flows['point'].nunique()} points × {flows['rep'].nunique()} repetitions")

# %% Mean and standard deviation of each flow's goodput, per protocol and hop count.
table = flows.groupby(["protocol", "hops"])["goodput_bps"].agg(["mean", "std"]).reset_index()
print(table.pivot(index="hops", columns="protocol", values="mean").div(1e6).round(3).to_string())

# %% The figure.
fig, ax = plt.subplots(figsize=(7, 4.5))
for protocol, rows in table.groupby("protocol", sort=False):
    ax.errorbar(rows["hops"], rows["mean"] / 1e6, yerr=rows["std"].fillna(0) / 1e6, marker="o", capsize=3, label=protocol)
ax.set_xlabel("hops")
ax.set_ylabel("goodput (Mbit/s)")
ax.set_title(f"{args.experiment}: goodput vs hops (mean ± sd)")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(args.out, dpi=120)
print(f"figure: {args.out}")
