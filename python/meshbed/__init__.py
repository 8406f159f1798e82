"""meshbed from Python.

The simulator runs in Rust (the native module ``meshbed._meshbed``) without
holding the GIL; this module turns what it returns into pandas DataFrames.

    import meshbed
    meshbed.experiments()                          # {name: description}
    s = meshbed.Scenario.builtin("default")        # or Scenario.from_file(path), Scenario.from_toml(text)
    s["radio.data_rate_kbps"]                      # a value by its dotted key
    s["flows[0].protocol"] = "tcp-reno"            # checked as `meshbed sim` checks a file
    r = meshbed.run(s, seed=7)                     # r.flows, r.mac, r.net, r.traces, r.route_log
    df = meshbed.sweep("testbed-a-single", repetitions=2)               # local threads
    df = meshbed.sweep("testbed-a-single", repetitions=2, backend="ray")  # ray.init() first

``sweep`` returns one row per flow per run with the columns of the CLI's
``flows.csv`` and the dtypes of its ``flows.parquet`` (the rows cross from
Rust as one Arrow record batch), ordered by (point, repetition, flow)
whichever backend ran them; ``df.attrs["trace_hashes"]`` maps (point,
repetition) to the run's trace hash. Every job runs through the experiment
runner's own single-job function (the CLI's checks, seeds and result store). An invalid scenario or experiment raises :class:`ScenarioError` (a
``ValueError``) with the message ``meshbed`` prints after ``error:``.
"""

from __future__ import annotations

import json
import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

import pandas as pd

from . import _meshbed
from ._meshbed import ScenarioError

__version__ = _meshbed.__version__
__all__ = ["Scenario", "Experiment", "Report", "ScenarioError", "experiments", "protocol_styles", "run", "sweep"]


class Scenario:
    """A checked scenario, kept as its TOML text (picklable, and what Rust reads).

    Values are read and changed by their dotted keys, the keys of the
    scenario file and of an experiment's sweep: ``s["radio.data_rate_kbps"]``,
    ``s["flows[0].protocol"] = "tcp-reno"``. A change is checked at once, as
    ``meshbed sim`` checks a file (the same message), and an invalid one
    leaves the scenario as it was."""

    def __init__(self, toml_text: str):
        self.toml = toml_text

    @classmethod
    def from_toml(cls, text: str) -> "Scenario":
        """Scenario text (never a path: :meth:`from_file`), checked as ``meshbed sim`` checks it."""
        if not isinstance(text, str):
            raise TypeError(f"Scenario.from_toml takes TOML text, not {type(text).__name__}: for a path use Scenario.from_file")
        return cls(_meshbed.scenario_from_text(text))

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike]) -> "Scenario":
        """A scenario file, checked as ``meshbed sim FILE`` checks it (errors name the file)."""
        return cls(_meshbed.scenario_from_file(os.fspath(path)))

    @classmethod
    def builtin(cls, name: str = "default") -> "Scenario":
        """``default`` (``meshbed scenario default``) or a built-in experiment's base scenario."""
        return cls(_meshbed.scenario_builtin(name))

    def __getitem__(self, key: str) -> Any:
        return json.loads(_meshbed.scenario_get(self.toml, key))

    def __setitem__(self, key: str, value: Any) -> None:
        self.toml = _meshbed.scenario_set(self.toml, key, json.dumps(value))

    def __repr__(self) -> str:
        return f"Scenario({len(self.toml)} bytes of TOML)"

    def __reduce__(self):
        return (Scenario, (self.toml,))


@dataclass
class Experiment:
    """An experiment (a scenario plus a sweep), as TOML text and the name its errors give it."""

    toml: str
    file: str
    name: str

    @classmethod
    def builtin(cls, name: str) -> "Experiment":
        """A built-in experiment by its name (``meshbed experiment list``)."""
        return cls(*_meshbed.experiment_builtin(name))

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike]) -> "Experiment":
        """An experiment file by its path."""
        return cls(*_meshbed.experiment_from_file(os.fspath(path)))

    @classmethod
    def from_toml(cls, text: str, file: str = "<experiment text>") -> "Experiment":
        """Experiment text (a scenario plus ``[experiment]``); ``file`` names it in errors."""
        if isinstance(text, os.PathLike):
            raise TypeError("Experiment.from_toml takes TOML text; for a file use Experiment.from_file(path)")
        return cls(*_meshbed.experiment_from_toml(text, file))

    @classmethod
    def load(cls, source: Union[str, os.PathLike, "Experiment"]) -> "Experiment":
        """An Experiment as it is, a path (``os.PathLike``, e.g. ``pathlib.Path``)
        as a file, or a ``str`` as a built-in name: a string is never guessed
        to be a path or text (use ``from_file`` or ``from_toml`` for those)."""
        if isinstance(source, Experiment):
            return source
        if isinstance(source, os.PathLike):
            return cls.from_file(source)
        if isinstance(source, str):
            return cls.builtin(source)
        raise TypeError(f"expected a built-in name, an os.PathLike or an Experiment, not {type(source).__name__}")


def experiments() -> Dict[str, str]:
    """The built-in experiments, name → description (``meshbed experiment list``)."""
    return dict(_meshbed.experiments())


def protocol_styles() -> Dict[str, Dict[str, str]]:
    """Each protocol's look in meshbed's figures, name → ``{"color": "#rrggbb",
    "marker": matplotlib marker}``: the very table ``meshbed experiment run``
    draws with, so that a matplotlib figure shows each protocol as the CLI's
    figures do (``ax.plot(x, y, **meshbed.protocol_styles()["tcp-reno"])``)."""
    return {name: {"color": color, "marker": marker} for name, color, marker in _meshbed.protocol_styles()}


@dataclass(repr=False)
class Report:
    """One simulation run: the JSON ``meshbed sim --json`` prints, and DataFrames of it.

    Its ``repr`` (what ``print(report)`` and a notebook show) is a summary of
    a bounded size whatever the run: the seed, each table's size and the
    first rows of a few columns of ``flows``; the tables themselves hold
    everything (a long mobile run's ``route_log`` has thousands of rows)."""

    raw: dict
    flows: pd.DataFrame = field(repr=False)
    mac: pd.DataFrame = field(repr=False)
    net: pd.DataFrame = field(repr=False)
    traces: pd.DataFrame = field(repr=False)
    route_log: pd.DataFrame = field(repr=False)

    @property
    def seed(self) -> int:
        return self.raw["seed"]

    @property
    def trace_hash(self) -> str:
        return self.raw["trace_hash"]

    def __repr__(self) -> str:
        head = f"Report(seed={self.seed}, {self.raw.get('duration_s')} simulated s, trace_hash={str(self.trace_hash)[:12]}…"
        tables = "; ".join(f"{name}: {_size(getattr(self, name))}" for name in _REPORT_TABLES)
        return f"{head}\n{tables}\nflows (head):\n{_head(self.flows)})"


# The tables of a Report, in the order its repr names them.
_REPORT_TABLES = ("flows", "mac", "net", "traces", "route_log")
# The columns of ``flows`` a Report's repr shows (those a run has), the
# rows and the characters per cell: bounds that keep it a few lines long.
_HEAD_COLUMNS = ("flow", "protocol", "src", "dst", "hops", "goodput_bps", "mean_delay_s", "transfer.completed")
_HEAD_ROWS = 3
_HEAD_CELL_CHARS = 24


def _size(df: pd.DataFrame) -> str:
    rows, cols = df.shape
    return f"{rows} row{'' if rows == 1 else 's'} × {cols} column{'' if cols == 1 else 's'}"


def _head(df: pd.DataFrame) -> str:
    cols = [c for c in _HEAD_COLUMNS if c in df.columns] or list(df.columns[: len(_HEAD_COLUMNS)])
    text = df[cols].head(_HEAD_ROWS).to_string(max_colwidth=_HEAD_CELL_CHARS)
    more = len(df) - _HEAD_ROWS
    return text + (f"\n… {more} more row{'' if more == 1 else 's'}" if more > 0 else "")


def _without_lists(record: dict) -> dict:
    return {k: _without_lists(v) if isinstance(v, dict) else v for k, v in record.items() if not isinstance(v, list)}


def _scalars(record: dict) -> dict:
    """A record's scalar fields, nested tables flattened to ``a.b`` (a flow's
    ``transfer.completed``, ``routing.path_changes``; lists left out)."""
    return pd.json_normalize(_without_lists(record)).iloc[0].to_dict()


def _report(raw: dict) -> Report:
    flows = pd.DataFrame([_scalars(f) for f in raw["flows"]])
    mac = pd.DataFrame(raw["mac_per_node"]).rename_axis("node").reset_index()
    net = pd.DataFrame([_scalars(n) for n in raw["net_per_node"]]).rename_axis("node").reset_index()
    traces = pd.DataFrame(
        [{"flow": f["flow"], **t} for f in raw["flows"] for t in f.get("trace", [])],
        columns=["flow", "t_s", "side", "kind", "value"],
    )
    route_log = pd.DataFrame(
        [{"flow": f["flow"], **e} for f in raw["flows"] for e in f.get("routing", {}).get("route_log", [])],
        columns=["flow", "t_s", "side", "event"],
    )
    return Report(raw=raw, flows=flows, mac=mac, net=net, traces=traces, route_log=route_log)


def run(scenario: Union[Scenario, os.PathLike], seed: Optional[int] = None, progress: Optional[bool] = None) -> Report:
    """Runs one scenario (a :class:`Scenario`, or a scenario file's path) in the simulator.

    ``progress``: a bar of simulated seconds (tqdm), as ``meshbed sim``
    shows. ``None`` (the default): on a long run only (the simulator reports
    its time every ``2**18`` events, so a short run never draws it nor pays
    for it) and only when stderr is a terminal; ``True``: from the start,
    wherever stderr goes (a notebook); ``False``: never."""
    if isinstance(scenario, os.PathLike):
        scenario = Scenario.from_file(scenario)
    if not isinstance(scenario, Scenario):
        raise TypeError("run takes a Scenario (Scenario.from_toml(text), Scenario.from_file(path)) or a path")
    if progress is None:
        progress = None if _stderr_is_terminal() else False
    if progress is False:
        return _report(json.loads(_meshbed.run_scenario(scenario.toml, seed)))
    bar = _SimProgress(scenario["duration_s"], at_start=progress is True)
    try:
        text = _meshbed.run_scenario(scenario.toml, seed, bar)
        bar.finish()
    finally:
        bar.close()
    return _report(json.loads(text))


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


class _SimProgress:
    """A run's progress bar in simulated seconds, called by the simulator
    with its time. Opened at the start (``at_start``) or at the first call,
    which only a long run makes."""

    def __init__(self, duration_s: float, at_start: bool):
        self.total = math.ceil(duration_s)
        self.bar = None
        if at_start:
            self._open()

    def _open(self):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total, desc="simulating", unit="simulated s")

    def __call__(self, t_s: float) -> None:
        if self.bar is None:
            self._open()
        self.bar.update(min(int(t_s), self.total) - self.bar.n)

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.update(self.total - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _progress(total: int, name: str, show: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=name, unit="run", disable=not show)


def _jobs(points: int, reps: int) -> List[Tuple[int, int]]:
    # The experiment runner's order: repetition r of point p is job p * reps + r.
    return [(p, r) for p in range(points) for r in range(reps)]


def sweep(
    experiment: Union[str, os.PathLike, Experiment],
    repetitions: Optional[int] = None,
    backend: str = "local",
    progress: bool = True,
    jobs: Optional[int] = None,
    force: bool = False,
    max_retries: int = 3,
    store: Optional[Union[str, os.PathLike]] = None,
) -> pd.DataFrame:
    """Runs every point × repetition of an experiment (a built-in name, an
    ``os.PathLike`` file, or an ``Experiment``: ``Experiment.from_toml(text)``)
    and returns one row per flow per run, the columns of ``flows.csv``.

    The experiment is checked first as ``meshbed experiment run`` checks it
    (its bounds, every point, the routes under every repetition's seed);
    then each job runs through the experiment runner's single-job function:
    ``backend="local"``: threads of this process (``jobs``, default all
    cores; the simulator releases the GIL). ``backend="ray"``: one Ray task
    per point × repetition on whatever cluster ``ray.init()`` connected to
    (a local one is started if none), retried up to ``max_retries`` times if
    its worker dies. Seeds are the CLI's (the point's seed + repetition).
    ``store``: a result store directory (``meshbed experiment run``'s
    ``results/NAME/store``; on Ray, one every worker sees): finished runs
    found there are reused, new ones kept; ``df.attrs["store"]`` says what
    ran and what was reused."""
    e = Experiment.load(experiment)
    points, reps, name = _meshbed.plan(e.toml, e.file, repetitions, force)
    store_dir = None if store is None else os.fspath(store)
    jobs_list = _jobs(points, reps)
    bar = _progress(len(jobs_list), name, progress)
    try:
        if backend == "local":
            done = _sweep_local(e, jobs_list, jobs, store_dir, bar)
        elif backend == "ray":
            done = _sweep_ray(e, jobs_list, max_retries, store_dir, bar)
        else:
            raise ValueError(f"backend = {backend!r}: expected 'local' or 'ray'")
    finally:
        bar.close()
    batch, hashes, store_line = _meshbed.flows(e.toml, e.file, [done[j] for j in jobs_list])
    df = batch.to_pandas()
    df.attrs["trace_hashes"] = {(p, r): h for p, r, h in hashes}
    if store_line is not None:
        df.attrs["store"] = store_line
    return df


def _sweep_local(e: Experiment, jobs_list, jobs: Optional[int], store: Optional[str], bar) -> dict:
    done = {}
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        futures = {pool.submit(_meshbed.run_job, e.toml, e.file, p, r, store): (p, r) for p, r in jobs_list}
        try:
            for f in as_completed(futures):
                done[futures[f]] = f.result()
                bar.update(1)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return done


def _run_job_task(toml_text: str, file: str, point: int, rep: int, store: Optional[str]) -> bytes:
    """A Ray task: one job on whichever worker Ray chose, through the same
    single-job function as the local threads (its ``meshbed`` must be the
    same build, or the rows differ)."""
    return _meshbed.run_job(toml_text, file, point, rep, store)


def _sweep_ray(e: Experiment, jobs_list, max_retries: int, store: Optional[str], bar) -> dict:
    try:
        import ray
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ImportError("backend='ray' needs Ray: pip install 'meshbed[ray]' (and meshbed on every worker)") from err
    if not ray.is_initialized():
        ray.init()
    task = ray.remote(max_retries=max_retries, num_cpus=1)(_run_job_task)
    # The experiment's text goes to the object store once, not once per task.
    toml_ref = ray.put(e.toml)
    refs = {task.remote(toml_ref, e.file, p, r, store): (p, r) for p, r in jobs_list}
    done = {}
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                done[refs[ref]] = _ray_result(ray, ref)
                bar.update(1)
    except BaseException:
        for ref in pending:
            ray.cancel(ref)
        raise
    return done


def _ray_result(ray, ref):
    """A task's result; an invalid run raises the same ScenarioError as locally."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:
        cause = err.as_instanceof_cause()
        if isinstance(cause, ScenarioError):
            raise ScenarioError(str(cause.args[0]) if cause.args else str(cause)) from err
        raise
