"""The Python API against the CLI: same errors, same runs, same flows table."""

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
        meshbed.Scenario.from_file(bad)
    assert str(err.value) == expected
    assert str(bad) in str(err.value)
    assert isinstance(err.value, ValueError)


def test_bad_scenario_text_raises_without_a_file_name(tmp_path):
    with pytest.raises(meshbed.ScenarioError, match="duration_s"):
        meshbed.Scenario.from_toml("duration_s = -1.0\n")
    with pytest.raises(meshbed.ScenarioError, match="unknown built-in scenario `nope`"):
        meshbed.Scenario.builtin("nope")


def test_an_unknown_experiment_raises_with_the_cli_list_of_builtins(cli):
    expected = cli_error(cli("experiment", "run", "no-such-experiment", check=False))
    with pytest.raises(meshbed.ScenarioError) as err:
        meshbed.sweep("no-such-experiment", progress=False)
    message = str(err.value)
    assert message.startswith("`no-such-experiment`: expected the name of a built-in experiment (")
    # The same built-ins as the CLI names, and where a file or text goes instead.
    builtins = lambda text: text[text.index("(") + 1 : text.index(")")]
    assert builtins(message) == builtins(expected)
    assert "Experiment.from_file(path)" in message and "Experiment.from_toml(text)" in message


def test_experiments_are_never_guessed_from_a_string(small_experiment):
    # A string is a built-in name, never a path or text, even when a file
    # of that name exists.
    with pytest.raises(meshbed.ScenarioError, match="expected the name of a built-in experiment"):
        meshbed.Experiment.load(str(small_experiment))
    text = small_experiment.read_text()
    with pytest.raises(meshbed.ScenarioError, match="expected the name of a built-in experiment"):
        meshbed.Experiment.load(text)
    # A path is a file; text goes through from_toml; both give the same experiment.
    from_path = meshbed.Experiment.load(small_experiment)
    from_text = meshbed.Experiment.from_toml(text, str(small_experiment))
    assert from_path.toml == from_text.toml and from_path.name == from_text.name == "small"
    with pytest.raises(TypeError, match="from_file"):
        meshbed.Experiment.from_toml(small_experiment)
    assert meshbed.Experiment.builtin("testbed-a-single").name == "testbed-a-single"


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
    # A flow's samples are appended as the simulation's clock advances: in
    # time order within each flow (the flows' lists follow one another).
    assert report.traces.groupby("flow")["t_s"].is_monotonic_increasing.all()


WALK_AWAY = """seed = 1
duration_s = 60.0
[topology]
kind = "explicit"
nodes = [{ x_m = 0.0, y_m = 0.0 }, { x_m = 200.0, y_m = 0.0 }, { x_m = 400.0, y_m = 0.0 },
  { x_m = 600.0, y_m = 0.0 }, { x_m = 10.0, y_m = 20.0 }]
[routing]
kind = "aodv"
ss_threshold_dbm = -80.0
[[flows]]
src = 4
dst = 0
protocol = "tcp-newreno"
stop_s = 58.0
start_s = 1.0
[[flows]]
src = 1
dst = 3
traffic = "cbr"
rate_kbps = 64.0
[mobility]
model = "scripted"
[[mobility.nodes]]
node = 4
waypoints = [[2.0, 700.0, 20.0, 10.0]]
"""


def test_a_flows_parts_are_columns_and_its_route_log_a_table(cli, tmp_path):
    path = tmp_path / "walk.toml"
    path.write_text(WALK_AWAY)
    report = meshbed.run(path)
    expected = json.loads(cli("sim", "--json", path).stdout)
    # The parts a flow has, flattened: a transfer's for the TCP flow, UDP's
    # for the CBR flow, routing's for both (AODV ran); no list columns.
    columns = set(report.flows.columns)
    assert {"transfer.completed", "transfer.retransmissions", "udp.traffic", "routing.path_changes"} <= columns
    assert not any(isinstance(v, list) for v in report.flows.iloc[0])
    assert report.flows["udp.traffic"].tolist()[1] == "cbr"
    assert list(report.route_log.columns) == ["flow", "t_s", "side", "event"]
    logged = [e for f in expected["flows"] for e in f["routing"].get("route_log", [])]
    assert len(report.route_log) == len(logged) > 0


def test_from_toml_takes_text_and_from_file_a_path(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(meshbed.Scenario.builtin("default").toml)
    # A path given as text is text: not a scenario.
    with pytest.raises(meshbed.ScenarioError):
        meshbed.Scenario.from_toml(str(path))
    with pytest.raises(TypeError, match="from_file"):
        meshbed.Scenario.from_toml(path)
    assert meshbed.Scenario.from_file(str(path)).toml == meshbed.Scenario.from_file(path).toml


def test_scenario_values_by_dotted_key(cli, tmp_path):
    s = meshbed.Scenario.builtin("testbed-a-single")
    assert s["radio.data_rate_kbps"] == 24000
    assert s["flows[0].protocol"] == "atp-default"
    s["flows[0].protocol"] = "tcp-reno"
    assert s["flows[0].protocol"] == "tcp-reno"
    assert meshbed.run(s).raw["flows"][0]["protocol"] == "tcp-reno"
    with pytest.raises(KeyError):
        s["radio.no_such_key"]
    # An invalid value: the message `meshbed sim` gives the same file, and
    # the scenario is left as it was.
    before = s.toml
    with pytest.raises(meshbed.ScenarioError) as err:
        s["radio.data_rate_kbps"] = 7
    assert s.toml == before
    bad = tmp_path / "bad.toml"
    bad.write_text(before.replace("data_rate_kbps = 24000", "data_rate_kbps = 7", 1))
    assert cli_error(cli("sim", bad, check=False)) == f"{bad}: {err.value}"


def test_scenario_round_trips_through_its_text(tmp_path):
    s = meshbed.Scenario.builtin("default")
    path = tmp_path / "s.toml"
    path.write_text(s.toml)
    again = meshbed.Scenario.from_file(path)
    assert meshbed.run(again, seed=3).trace_hash == meshbed.run(s, seed=3).trace_hash


def test_local_sweep_gives_the_cli_flows_table(cli, small_experiment, tmp_path):
    out = tmp_path / "out"
    cli("experiment", "run", small_experiment, "--out", out, "--no-store")
    # The rows cross as Arrow: the columns and dtypes of flows.parquet.
    expected = pd.read_parquet(out / "flows.parquet")
    df = meshbed.sweep(small_experiment, backend="local", progress=False, jobs=2)
    assert len(df) == 2 * 2 * 2
    pd.testing.assert_frame_equal(df, expected)
    assert df["seed"].dtype == "uint64" and df["goodput_bps"].dtype == "float64" and df["completed"].dtype == "bool"
    # The same values as flows.csv.
    csv = pd.read_csv(out / "flows.csv")
    assert list(df.columns) == list(csv.columns)
    assert list(df["goodput_bps"]) == list(csv["goodput_bps"])
    # The Rust thread pool's rows and trace hashes, run by run.
    e = meshbed.Experiment.load(small_experiment)
    batch, hashes = _meshbed.run_experiment(e.toml, e.file, None)
    pd.testing.assert_frame_equal(batch.to_pandas(), df)
    assert df.attrs["trace_hashes"] == {(p, r): h for p, r, h in hashes}
    assert df["meshbed_version"].notna().all() and df["git_revision"].notna().all()


def test_sweep_repetitions_override_and_one_thread_agree(small_experiment):
    one = meshbed.sweep(small_experiment, repetitions=1, progress=False, jobs=1)
    three = meshbed.sweep(small_experiment, repetitions=3, progress=False, jobs=2)
    assert sorted(set(three["rep"])) == [0, 1, 2]
    pd.testing.assert_frame_equal(three[three["rep"] == 0].reset_index(drop=True), one)


def test_sweep_keeps_and_reuses_runs_in_the_store(small_experiment, tmp_path):
    store = tmp_path / "store"
    first = meshbed.sweep(small_experiment, progress=False, store=store)
    assert first.attrs["store"].startswith("8 runs executed, 0 reused from the store")
    again = meshbed.sweep(small_experiment, progress=False, store=store, repetitions=3)
    assert again.attrs["store"].startswith("4 runs executed, 8 reused from the store")
    pd.testing.assert_frame_equal(again[again["rep"] < 2].reset_index(drop=True), first)
    assert "store" not in meshbed.sweep(small_experiment, progress=False).attrs


def test_sweep_refuses_zero_repetitions_and_an_unknown_backend(small_experiment):
    with pytest.raises(meshbed.ScenarioError, match="at least one repetition"):
        meshbed.sweep(small_experiment, repetitions=0, progress=False)
    with pytest.raises(ValueError, match="backend"):
        meshbed.sweep(small_experiment, backend="spark", progress=False)
