"""Sweeps on a Ray cluster started by the test itself (a head and a second
node on this machine): the same rows and trace hashes as the local runner,
and a sweep whose task's worker is killed mid-run still completes, with no
row lost or duplicated (Ray retries the task)."""

import os
import signal
import threading
import time

import pandas as pd
import pytest

import meshbed

ray = pytest.importorskip("ray")
from meshbed import ray_local  # noqa: E402

# Ray names a worker process after the task it is running.
TASK_TITLE = "ray::_run_job_task"


@pytest.fixture(scope="module")
def cluster():
    c = ray_local.start(nodes=2, num_cpus=1)
    yield c
    ray.shutdown()
    c.shutdown()


def test_the_cluster_has_two_nodes(cluster):
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2


def test_ray_sweep_is_bit_identical_to_local(cluster, small_experiment):
    local = meshbed.sweep(small_experiment, backend="local", progress=False)
    on_ray = meshbed.sweep(small_experiment, backend="ray", progress=False)
    pd.testing.assert_frame_equal(on_ray, local)
    assert on_ray.attrs["trace_hashes"] == local.attrs["trace_hashes"]


def _task_workers():
    """Pids of processes running a meshbed run as a Ray task."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
        except OSError:
            continue
        if cmdline.startswith(TASK_TITLE):
            pids.append(int(pid))
    return pids


def test_a_killed_task_is_retried_and_no_row_is_lost_or_duplicated(cluster, small_experiment):
    local = meshbed.sweep(small_experiment, repetitions=3, backend="local", progress=False)
    result = {}

    def run():
        try:
            result["df"] = meshbed.sweep(small_experiment, repetitions=3, backend="ray", progress=False)
        except BaseException as e:  # handed to the test's thread
            result["error"] = e

    sweep = threading.Thread(target=run)
    sweep.start()
    killed = None
    # Kill the worker of the first task seen running: Ray must retry it.
    deadline = time.monotonic() + 120
    while killed is None and sweep.is_alive() and time.monotonic() < deadline:
        for pid in _task_workers():
            os.kill(pid, signal.SIGKILL)
            killed = pid
            break
        time.sleep(0.002)
    sweep.join(timeout=600)
    assert not sweep.is_alive()
    assert "error" not in result, result.get("error")
    assert killed is not None, "no task was seen running, so none was killed"
    df = result["df"]
    assert not df.duplicated(["point", "rep", "flow"]).any()
    pd.testing.assert_frame_equal(df, local)
    assert df.attrs["trace_hashes"] == local.attrs["trace_hashes"]
