"""The Python API against the CLI: same errors, same runs, same flows.csv."""

import json

import pandas as pd
import pytest

import meshbed
from meshbed import _meshbed


def cli_error(result):
    assert result.returncode != 0, result.stdout
    text = result.stderr
    # `eprintln!("error: {e:#}")`: the message between the prefix and the last newline.
    assert text.startswith("error: ") and text.endswith("\n"), text
    return text[len("error: ") : -1]


def test_a_bad_scenario_file_raises_the_cli_message(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("duration_s = -1.0\n")
    expected = cli_error(cli("sim", bad, check=False))
    with pytest.raises(meshbed.ScenarioError) as err:
        meshbed.Scenario.from_toml(bad)
    assert str(err.value) == expected
    assert str(bad) in str(err.value)
    assert isinstance(err.value, ValueError)


def test_bad_scenario_text_raises_without_a_file_name(tmp_path):
    with pytest.raises(meshbed.ScenarioError, match="duration_s"):
        meshbed.Scenario.from_toml("duration_s = -1.0\n")
    with pytest.raises(meshbed.ScenarioError, match="unknown built-in scenario `nope`"):
        meshbed.Scenario.builtin("nope")


def test_an_unknown_experiment_raises_the_cli_message(cli):
    expected = cli_error(cli("experiment", "run", "no-such-experiment", check=False))
    with pytest.raises(meshbed.ScenarioError) as err:
        meshbed.sweep("no-such-experiment", progress=False)
    assert str(err.value) == expected


def test_experiments_lists_the_builtins_as_the_cli(cli):
    names = meshbed.experiments()
    listed = [line.split()[0] for line in cli("experiment", "list").stdout.splitlines() if line.strip()]
    assert list(names) == listed
    assert "testbed-a-single" in names and names["testbed-a-single"]


def test_run_matches_meshbed_sim_and_gives_dataframes(cli):
    s = meshbed.Scenario.builtin("default")
    report = meshbed.run(s, seed=7)
    expected = json.loads(cli("sim", "--json", "--seed", "7").stdout)
    assert report.trace_hash == expected["trace_hash"]
    assert report.seed == 7
    assert list(report.flows["goodput_bps"]) == [f["goodput_bps"] for f in expected["flows"]]
    assert len(report.mac) == len(expected["mac_per_node"])
    assert list(report.mac["node"]) == list(range(len(report.mac)))
    assert report.mac["drop_retry_limit"].sum() == expected["mac_total"]["drop_retry_limit"]
    assert {"node", "forwarded", "drops.retry_limit"} <= set(report.net.columns)
    # Another seed, another run.
    assert meshbed.run(s, seed=8).trace_hash != report.trace_hash


def test_run_of_a_traced_flow_has_its_trace():
    s = meshbed.Scenario.builtin("testbed-a-single")
    report = meshbed.run(s)
    assert list(report.traces.columns) == ["flow", "t_s", "side", "kind", "value"]
    assert len(report.traces) == sum(len(f["trace"]) for f in report.raw["flows"]) > 0
    assert report.traces["t_s"].is_monotonic_increasing or report.traces.groupby("kind")["t_s"].is_monotonic_increasing.all()


def test_scenario_round_trips_through_its_text(tmp_path):
    s = meshbed.Scenario.builtin("default")
    path = tmp_path / "s.toml"
    path.write_text(s.toml)
    again = meshbed.Scenario.from_toml(path)
    assert meshbed.run(again, seed=3).trace_hash == meshbed.run(s, seed=3).trace_hash


def test_local_sweep_gives_the_cli_flows_csv(cli, small_experiment, tmp_path):
    out = tmp_path / "out"
    cli("experiment", "run", small_experiment, "--out", out)
    expected = pd.read_csv(out / "flows.csv")
    df = meshbed.sweep(small_experiment, backend="local", progress=False, jobs=2)
    assert len(df) == 2 * 2 * 2
    pd.testing.assert_frame_equal(df, expected)
    # The Rust runner's trace hashes, run by run.
    e = meshbed.Experiment.load(small_experiment)
    _, hashes = _meshbed.run_experiment(e.toml, e.file, None)
    assert df.attrs["trace_hashes"] == {(p, r): h for p, r, h in hashes}
    # The Parquet beside the CSV reads back in pandas (pyarrow) as the same
    # table, with the version pinning columns on every row.
    parquet = pd.read_parquet(out / "flows.parquet")
    assert list(parquet.columns) == list(expected.columns)
    # An empty text cell is "" in Parquet and NaN once pandas reads the CSV.
    def text_blank(df):
        return df.apply(lambda c: c.astype(object).fillna("") if pd.api.types.is_string_dtype(c) or c.isna().all() else c)

    pd.testing.assert_frame_equal(text_blank(parquet), text_blank(expected), check_dtype=False)
    assert parquet["meshbed_version"].notna().all() and parquet["git_revision"].notna().all()


def test_sweep_repetitions_override_and_one_thread_agree(small_experiment):
    one = meshbed.sweep(small_experiment, repetitions=1, progress=False, jobs=1)
    three = meshbed.sweep(small_experiment, repetitions=3, progress=False, jobs=2)
    assert sorted(set(three["rep"])) == [0, 1, 2]
    # dtypes may differ (a column empty in one frame only reads as float).
    pd.testing.assert_frame_equal(three[three["rep"] == 0].reset_index(drop=True), one, check_dtype=False)


def test_sweep_refuses_zero_repetitions_and_an_unknown_backend(small_experiment):
    with pytest.raises(meshbed.ScenarioError, match="at least one repetition"):
        meshbed.sweep(small_experiment, repetitions=0, progress=False)
    with pytest.raises(ValueError, match="backend"):
        meshbed.sweep(small_experiment, backend="spark", progress=False)
