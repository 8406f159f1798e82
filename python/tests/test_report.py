"""A run's Report prints as a short summary whatever the run, and run()
draws a progress bar of simulated seconds only on long runs, when asked or
when stderr is a terminal."""

import pathlib

import pandas as pd
import pytest

import meshbed
from meshbed import _meshbed

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
TABLES = ("flows", "mac", "net", "traces", "route_log")


@pytest.fixture(scope="module")
def long_scenario():
    # 30 moving nodes for 120 simulated s: about 670 000 events, more than
    # the 2**18 between two progress reports.
    return meshbed.Scenario.from_file(EXAMPLES / "aodv-random-waypoint.toml")


@pytest.fixture(scope="module")
def long_report(long_scenario):
    return meshbed.run(long_scenario, progress=False)


def short_scenario():
    # The same for 1.5 simulated s (the flow starts at 1 s): fewer events
    # than one progress report takes (the tests check it).
    s = meshbed.Scenario.from_file(EXAMPLES / "aodv-random-waypoint.toml")
    s["duration_s"] = 1.5
    return s


def _meshbed_progress_every():
    # meshbed_sim::PROGRESS_EVERY_EVENTS: the simulator reports its time
    # after every this many events.
    return 2**18


def test_the_repr_of_a_large_run_is_short_and_names_every_table_with_its_size(long_report):
    text = repr(long_report)
    assert len(repr(long_report.raw)) > 10_000, "the run is no longer large: pick a larger one"
    assert len(text) < 2_000
    assert text.startswith(f"Report(seed={long_report.seed}, ")
    for name in TABLES:
        rows, cols = getattr(long_report, name).shape
        assert f"{name}: {rows} row" in text
        assert f"× {cols} column" in text
    assert long_report.flows["protocol"].iloc[0] in text
    assert str(long_report) == text


def test_the_repr_is_bounded_however_large_the_tables():
    n = 50_000
    big = pd.DataFrame({"flow": range(n), "protocol": ["x" * 10_000] * n, "goodput_bps": [1.0] * n})
    big_log = pd.DataFrame({"flow": [0] * n, "t_s": [0.5] * n, "side": ["src"] * n, "event": ["route-up"] * n})
    r = meshbed.Report(
        raw={"seed": 1, "duration_s": 9.0, "trace_hash": "f" * 64},
        flows=big,
        mac=big,
        net=big,
        traces=big,
        route_log=big_log,
    )
    text = repr(r)
    assert len(text) < 2_000
    assert f"route_log: {n} rows × 4 columns" in text
    assert f"… {n - 3} more rows" in text
    assert "x" * 100 not in text


def test_the_progress_callback_gets_rising_simulated_times_and_changes_nothing(long_scenario, long_report):
    times = []
    text = _meshbed.run_scenario(long_scenario.toml, None, times.append)
    assert len(times) >= 2
    assert times == sorted(times)
    assert 0 < times[0] and times[-1] <= long_scenario["duration_s"]
    assert meshbed.run(long_scenario, progress=False).raw == long_report.raw
    assert text == _meshbed.run_scenario(long_scenario.toml, None)


def test_an_exception_in_the_progress_callback_is_raised_after_the_run(long_scenario):
    calls = []

    def fail(t_s):
        calls.append(t_s)
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        _meshbed.run_scenario(long_scenario.toml, None, fail)
    assert len(calls) == 1


def test_progress_true_draws_the_bar_even_on_a_short_run(capsys):
    r = meshbed.run(short_scenario(), progress=True)
    assert r.raw["events"] < _meshbed_progress_every()
    err = capsys.readouterr().err
    assert "simulating" in err and "2/2" in err


def test_progress_false_never_draws_a_bar(long_scenario, capsys, monkeypatch):
    monkeypatch.setattr(meshbed, "_stderr_is_terminal", lambda: True)
    meshbed.run(long_scenario, progress=False)
    assert capsys.readouterr().err == ""


def test_by_default_a_terminal_gets_a_bar_on_a_long_run_only(long_scenario, capsys, monkeypatch):
    monkeypatch.setattr(meshbed, "_stderr_is_terminal", lambda: True)
    r = meshbed.run(short_scenario())
    assert r.raw["events"] < _meshbed_progress_every(), "no longer a short run: shorten it"
    assert capsys.readouterr().err == ""
    meshbed.run(long_scenario)
    err = capsys.readouterr().err
    assert "simulating" in err and "120/120" in err


def test_by_default_no_bar_when_stderr_is_not_a_terminal(long_scenario, capsys, monkeypatch):
    monkeypatch.setattr(meshbed, "_stderr_is_terminal", lambda: False)
    meshbed.run(long_scenario)
    assert capsys.readouterr().err == ""
