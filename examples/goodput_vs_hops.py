"""Goodput against hop count, from Python: runs the built-in testbed A
single-flow experiment (seed 001 Fig. 5.1 / seed 000 Fig. 5: one 2 MB
transfer over a 1–6-hop chain, every protocol) and draws the mean goodput
per protocol with the 95% confidence interval of the mean over the
repetitions, with matplotlib, in the looks the CLI's figures give the
protocols (`meshbed.protocol_styles()`).

    pip install './python[plot]'         # once (with --ray: './python[plot,ray]')
    python examples/goodput_vs_hops.py --repetitions 2 --out goodput_vs_hops.png
    python examples/goodput_vs_hops.py --ray local  # the same sweep on a Ray started here
    python examples/goodput_vs_hops.py --ray auto   # ... on the Ray cluster this machine is part of

It runs as a script or cell by cell in a notebook (Jupyter's "# %%" cells).
"""

# %%
import argparse
import pathlib
import textwrap

try:
    import matplotlib
except ImportError as err:
    raise SystemExit(
        "examples/goodput_vs_hops.py draws its figure with matplotlib, which is not installed: "
        "pip install 'meshbed[plot]' (from a checkout: pip install './python[plot]')"
    ) from err

matplotlib.use("Agg")  # a file, no display needed
import matplotlib.pyplot as plt  # noqa: E402

import meshbed  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--experiment", default="testbed-a-single", help="a built-in experiment, or an experiment file, with a `hops` axis")
parser.add_argument("--repetitions", type=int, default=None, help="default: the experiment's own")
parser.add_argument(
    "--ray",
    metavar="ADDRESS",
    help="run on Ray (pip install 'meshbed[ray]'): `local` starts one here; `auto` joins the running cluster this "
    "machine is part of (`ray start`); else the cluster at ADDRESS (`ray://HEAD:10001`)",
)
parser.add_argument("--out", default="goodput_vs_hops.png", help="the figure (PNG)")
args, _ = parser.parse_known_args()  # a notebook kernel passes its own arguments

# %% Run every point × repetition: one row per flow per run, flows.csv's columns.
if args.ray:
    import ray

    ray.init(address=None if args.ray == "local" else args.ray)
# As `meshbed experiment run`: a built-in's name, else a file of that name.
source = args.experiment if args.experiment in meshbed.experiments() else pathlib.Path(args.experiment)
flows = meshbed.sweep(source, repetitions=args.repetitions, backend="ray" if args.ray else "local")
print(f"{len(flows)} flows from {flows['point'].nunique()} points × {flows['rep'].nunique()} repetitions")

# %% Per protocol and hop count: the mean of the runs' goodput (Mbit/s) and the
# 95% confidence interval of that mean over the repetitions (Student's t),
# computed in linear space, as the CLI's goodput.png draws it.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    """Student's t quantile 0.975 with df degrees of freedom: a table up to 30,
    beyond it the expansion around the normal's 1.96 (within 1e-4)."""
    if df <= len(T975):
        return T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


per_run = flows.groupby(["protocol", "hops", "point", "rep"], sort=False)["goodput_bps"].mean().div(1e6)
table = per_run.groupby(["protocol", "hops"], sort=False).agg(["mean", "std", "count"]).reset_index()
table["ci"] = [t975(n - 1) * sd / n**0.5 if n > 1 else float("nan") for sd, n in zip(table["std"], table["count"])]
print(table.pivot(index="hops", columns="protocol", values="mean").round(3).to_string())

# %% Protocols with identical results are one series, named "a = b", not lines
# hidden under each other.
series = {}
for protocol, rows in table.groupby("protocol", sort=False):
    key = tuple(map(tuple, rows[["hops", "mean", "ci"]].fillna(-1.0).to_numpy()))
    series.setdefault(key, []).append((protocol, rows))

# %% The caption: repetitions, seeds and the settings the points share.
reps = sorted(flows.groupby("point")["rep"].nunique().unique())
seeds = sorted(flows["seed"].unique())
seed_text = f"seeds {seeds[0]}–{seeds[-1]}" if len(seeds) == seeds[-1] - seeds[0] + 1 else f"seeds {', '.join(map(str, seeds))}"
caption = [f"n = {'–'.join(map(str, reps))} repetitions per point ({seed_text}; repetition r runs with its point's seed + r)."]
try:
    import tomllib  # Python 3.11+

    base = tomllib.loads(meshbed.Experiment.load(source).toml)
    radio, mac = base.get("radio", {}), base.get("radio", {}).get("mac", {})
    retries = (mac.get("short_retry_limit"), mac.get("long_retry_limit"))
    settings = [
        f"{radio.get('standard', '?')} at {radio.get('data_rate_kbps', 0) / 1e3:g} Mbit/s",
        "MAC retries off" if retries == (0, 0) else f"MAC retry limits {retries[0]}/{retries[1]} (short/long)",
        f"{base.get('topology', {}).get('kind', '?')}, {base.get('topology', {}).get('spacing_m', '?'):g} m apart",
    ]
    caption.append("Settings: " + "; ".join(settings) + ".")
except ImportError:
    pass
caption.append("Bars: 95% confidence interval of the mean over the repetitions (Student's t), computed in linear space.")

# %% The figure: each protocol in its own colour and marker (the CLI's), a log
# axis when the means span more than 1.5 decades, series shifted sideways a
# little so that their bars do not hide each other, the legend above the plot.
styles = meshbed.protocol_styles()
means = table["mean"]
log = bool((means > 0).all() and means.max() / means.min() > 10**1.5)
floor = means.min() / 10 if log else None  # bars reaching lower end open at the axis
step = min(0.3 / (len(series) - 1), 0.06) if len(series) > 1 else 0.0
fig, ax = plt.subplots(figsize=(8, 6.4))
open_ended = False
for i, group in enumerate(series.values()):
    names = [name for name, _ in group]
    rows = group[0][1]
    x = rows["hops"] + (i - (len(series) - 1) / 2) * step
    mean, ci = rows["mean"], rows["ci"].fillna(0.0)
    lower = mean - ci
    style = styles.get(names[0], {"color": None, "marker": "o"})
    below = lower < floor if log else lower < float("-inf")
    open_ended |= bool(below.any())
    shown = lower.clip(lower=floor) if log else lower
    ax.errorbar(x, mean, yerr=[mean - shown, ci], capsize=3, label=" = ".join(names), **style)
    if below.any():
        ax.plot(x[below], [floor] * int(below.sum()), linestyle="none", marker="v", color=style["color"])
if log:
    ax.set_yscale("log")  # tick labels as powers of ten, all alike
    ax.set_ylim(bottom=floor)
ax.set_xticks(sorted(table["hops"].unique()))
ax.set_xlabel("Path length (hops)")
ax.set_ylabel("Goodput (Mbit/s)")
ax.set_title(f"{args.experiment}: goodput per flow (mean, 95% CI)")
ax.grid(alpha=0.3)
ax.legend(loc="lower left", bbox_to_anchor=(0, 1.06, 1, 0.2), mode="expand", ncol=3, frameon=False, fontsize=9)
if len(series) < table["protocol"].nunique():
    caption.append('"a = b" in the legend: a and b gave identical results, drawn once.')
if step:
    caption.append(f"Series shifted sideways by up to ±{step * (len(series) - 1) / 2:.2f} hops so that their bars do not hide each other.")
if open_ended:
    caption.append("▼ at the foot of a bar: the interval reaches below the axis (to zero or below), drawn open-ended.")
fig.subplots_adjust(left=0.1, right=0.97, top=0.72, bottom=0.1 + 0.035 * len(caption))
fig.text(0.01, 0.01, "\n".join(textwrap.fill(line, 120) for line in caption), fontsize=7.5, va="bottom", color="0.2")
fig.savefig(args.out, dpi=120)
print(f"figure: {args.out}")
