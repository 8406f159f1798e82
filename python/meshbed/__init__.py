"""meshbed from Python.

The simulator runs in Rust (the native module ``meshbed._meshbed``) without
holding the GIL; this module turns what it returns into pandas DataFrames.

    import meshbed
    meshbed.experiments()                          # {name: description}
    s = meshbed.Scenario.builtin("default")        # or Scenario.from_toml(path or text)
    r = meshbed.run(s, seed=7)                     # r.flows, r.mac, r.net, r.traces
    df = meshbed.sweep("testbed-a-single", repetitions=2)               # local threads
    df = meshbed.sweep("testbed-a-single", repetitions=2, backend="ray")  # ray.init() first

``sweep`` returns one row per flow per run with the columns of the CLI's
``flows.csv``, rows ordered by (point, repetition, flow) whichever backend ran
them; ``df.attrs["trace_hashes"]`` maps (point, repetition) to the run's trace
hash. An invalid scenario or experiment raises :class:`ScenarioError` (a
``ValueError``) with the message ``meshbed`` prints after ``error:``.
"""

from __future__ import annotations

import io
import json
import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple, Union

import pandas as pd

from . import _meshbed
from ._meshbed import ScenarioError

__version__ = _meshbed.__version__
__all__ = ["Scenario", "Experiment", "Report", "ScenarioError", "experiments", "run", "sweep"]


def _looks_like_text(source: str) -> bool:
    # A path has no newline and no TOML table or assignment.
    return "\n" in source or "=" in source or "[" in source


class Scenario:
    """A checked scenario, kept as its TOML text (picklable, and what Rust reads)."""

    def __init__(self, toml_text: str):
        self.toml = toml_text

    @classmethod
    def from_toml(cls, text_or_path: Union[str, os.PathLike]) -> "Scenario":
        """A scenario file's path, or scenario text; checked as ``meshbed sim`` checks it."""
        if isinstance(text_or_path, os.PathLike) or not _looks_like_text(text_or_path):
            return cls(_meshbed.scenario_from_file(os.fspath(text_or_path)))
        return cls(_meshbed.scenario_from_text(text_or_path))

    @classmethod
    def builtin(cls, name: str = "default") -> "Scenario":
        """``default`` (``meshbed scenario default``) or a built-in experiment's base scenario."""
        return cls(_meshbed.scenario_builtin(name))

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
    def load(cls, source: Union[str, os.PathLike, "Experiment"]) -> "Experiment":
        """A built-in experiment's name, an experiment file's path, or experiment text."""
        if isinstance(source, Experiment):
            return source
        return cls(*_meshbed.experiment_resolve(os.fspath(source)))


def experiments() -> Dict[str, str]:
    """The built-in experiments, name → description (``meshbed experiment list``)."""
    return dict(_meshbed.experiments())


@dataclass
class Report:
    """One simulation run: the JSON ``meshbed sim --json`` prints, and DataFrames of it."""

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


def _scalars(record: dict) -> dict:
    """A record's scalar fields, nested tables flattened to ``a.b`` (lists left out)."""
    return pd.json_normalize({k: v for k, v in record.items() if not isinstance(v, list)}).iloc[0].to_dict()


def _report(raw: dict) -> Report:
    flows = pd.DataFrame([_scalars(f) for f in raw["flows"]])
    mac = pd.DataFrame(raw["mac_per_node"]).rename_axis("node").reset_index()
    net = pd.DataFrame([_scalars(n) for n in raw["net_per_node"]]).rename_axis("node").reset_index()
    traces = pd.DataFrame(
        [{"flow": f["flow"], **t} for f in raw["flows"] for t in f.get("trace", [])],
        columns=["flow", "t_s", "side", "kind", "value"],
    )
    route_log = pd.DataFrame(
        [{"flow": f["flow"], **e} for f in raw["flows"] for e in f.get("route_log", [])],
        columns=["flow", "t_s", "side", "event"],
    )
    return Report(raw=raw, flows=flows, mac=mac, net=net, traces=traces, route_log=route_log)


def run(scenario: Union[Scenario, str, os.PathLike], seed: Optional[int] = None) -> Report:
    """Runs one scenario (a :class:`Scenario`, a path or TOML text) in the simulator."""
    if not isinstance(scenario, Scenario):
        scenario = Scenario.from_toml(scenario)
    return _report(json.loads(_meshbed.run_scenario(scenario.toml, seed)))


def _frame(csv_texts: Iterable[str]) -> pd.DataFrame:
    """One DataFrame from per-run ``flows.csv`` texts (each with its header), read
    as pandas reads the CLI's ``flows.csv``."""
    texts = list(csv_texts)
    if not texts:
        return pd.DataFrame()
    header = texts[0].split("\n", 1)[0]
    body = "".join(t.split("\n", 1)[1] for t in texts)
    return pd.read_csv(io.StringIO(header + "\n" + body))


def _progress(total: int, name: str, show: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=name, unit="run", disable=not show)


def _jobs(points: int, reps: int) -> List[Tuple[int, int]]:
    # The CLI's order: repetition r of point p is job p * reps + r.
    return [(p, r) for p in range(points) for r in range(reps)]


def sweep(
    experiment: Union[str, os.PathLike, Experiment],
    repetitions: Optional[int] = None,
    backend: str = "local",
    progress: bool = True,
    jobs: Optional[int] = None,
    force: bool = False,
    max_retries: int = 3,
) -> pd.DataFrame:
    """Runs every point × repetition of an experiment (a built-in name, a file or
    text) and returns one row per flow per run, the columns of ``flows.csv``.

    ``backend="local"``: threads of this process (``jobs``, default all cores;
    the simulator releases the GIL). ``backend="ray"``: one Ray task per point ×
    repetition on whatever cluster ``ray.init()`` connected to (a local one is
    started if none), retried up to ``max_retries`` times if its worker dies.
    Seeds are the CLI's (the point's seed + repetition), so both give the CLI's
    rows."""
    e = Experiment.load(experiment)
    points, reps, name = _meshbed.plan(e.toml, e.file, repetitions, force)
    jobs_list = _jobs(points, reps)
    bar = _progress(len(jobs_list), name, progress)
    try:
        if backend == "local":
            done = _sweep_local(e, jobs_list, jobs, bar)
        elif backend == "ray":
            done = _sweep_ray(e, jobs_list, max_retries, bar)
        else:
            raise ValueError(f"backend = {backend!r}: expected 'local' or 'ray'")
    finally:
        bar.close()
    df = _frame(done[j][0] for j in jobs_list)
    df.attrs["trace_hashes"] = {j: done[j][1] for j in jobs_list}
    return df


def _sweep_local(e: Experiment, jobs_list, jobs: Optional[int], bar) -> dict:
    done = {}
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        futures = {pool.submit(_meshbed.run_point, e.toml, e.file, p, r): (p, r) for p, r in jobs_list}
        try:
            for f in as_completed(futures):
                done[futures[f]] = f.result()
                bar.update(1)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return done


def _run_point_task(toml_text: str, file: str, point: int, rep: int) -> Tuple[str, str]:
    """A Ray task: one run on whichever worker Ray chose (its ``meshbed`` must be
    the same build, or the rows differ)."""
    return _meshbed.run_point(toml_text, file, point, rep)


def _sweep_ray(e: Experiment, jobs_list, max_retries: int, bar) -> dict:
    try:
        import ray
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ImportError("backend='ray' needs Ray: pip install 'ray>=2.9' (and meshbed on every worker)") from err
    if not ray.is_initialized():
        ray.init()
    task = ray.remote(max_retries=max_retries, num_cpus=1)(_run_point_task)
    # The experiment's text goes to the object store once, not once per task.
    toml_ref = ray.put(e.toml)
    refs = {task.remote(toml_ref, e.file, p, r): (p, r) for p, r in jobs_list}
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
