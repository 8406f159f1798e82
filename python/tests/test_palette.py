"""Each protocol's look: one table (crates/experiment/src/figures/palette.rs)
for the CLI's figures and for matplotlib figures such as
examples/goodput_vs_hops.py, so that the two cannot drift apart."""

import re

import meshbed


def test_every_protocol_has_a_colour_and_a_marker_of_its_own():
    styles = meshbed.protocol_styles()
    assert {"atp-default", "tcp-tahoe", "tcp-newreno", "mtl", "udp", "kernel-tcp"} <= set(styles)
    assert all(re.fullmatch(r"#[0-9a-f]{6}", s["color"]) for s in styles.values()), styles
    assert len({s["color"] for s in styles.values()}) == len(styles)
    assert len({s["marker"] for s in styles.values()}) == len(styles)


def test_matplotlib_draws_every_marker():
    from matplotlib.markers import MarkerStyle

    for name, style in meshbed.protocol_styles().items():
        assert MarkerStyle(style["marker"]).get_path().vertices.size > 0, name


def test_the_cli_draws_each_protocol_in_the_colour_python_gets(cli, small_experiment, tmp_path):
    out = tmp_path / "run"
    cli("experiment", "run", small_experiment, "--out", out, "--no-store")
    svg = (out / "goodput.svg").read_text().lower()
    styles = meshbed.protocol_styles()
    # The small experiment compares atp-default and tcp-newreno.
    for protocol in ["atp-default", "tcp-newreno"]:
        assert styles[protocol]["color"] in svg, protocol
    assert styles["mtl"]["color"] not in svg
