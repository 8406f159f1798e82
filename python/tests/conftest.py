"""Shared helpers: the CLI binary the Python results are checked against, and
a small experiment (testbed A's single flow, cut down to 2 × 2 points × 2
repetitions of a 300 kB transfer) that runs in seconds."""

import os
import shutil
import subprocess

import pytest

import meshbed


def _cli():
    exe = os.environ.get("MESHBED_BIN") or shutil.which("meshbed")
    return exe if exe and os.path.exists(exe) else None


@pytest.fixture(scope="session")
def cli():
    exe = _cli()
    if exe is None:
        pytest.skip("the meshbed binary is not built: set MESHBED_BIN (scripts/test does)")

    def run(*args, check=True):
        return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, check=check)

    return run


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"the built-in testbed-a-single no longer has {old!r}: update this fixture"
    return text.replace(old, new)


@pytest.fixture(scope="session")
def small_experiment(tmp_path_factory):
    text = meshbed.Experiment.load("testbed-a-single").toml
    for old, new in [
        ('name = "testbed-a-single"', 'name = "small"'),
        ("repetitions = 10", "repetitions = 2"),
        ("values = [1, 2, 3, 4, 5, 6]", "values = [1, 3]"),
        (
            'values = ["atp-default", "atp-aggressive", "atp-adaptive", "tcp-tahoe", "tcp-reno", "tcp-newreno"]',
            'values = ["atp-default", "tcp-newreno"]',
        ),
        ("bytes = 2000000", "bytes = 300000"),
    ]:
        text = _replace_once(text, old, new)
    path = tmp_path_factory.mktemp("exp") / "small.toml"
    path.write_text(text)
    return path
