"""examples/goodput_vs_hops.py runs and draws its figure."""

import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "goodput_vs_hops.py"


def test_the_goodput_vs_hops_example_draws_a_png(small_experiment, tmp_path):
    out = tmp_path / "g.png"
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), "--experiment", str(small_experiment), "--out", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    # 2 hop counts × 2 protocols × 2 repetitions, one flow each.
    assert "8 flows from 4 points × 2 repetitions" in run.stdout
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000


def test_the_example_without_matplotlib_names_the_extra_to_install():
    # `import matplotlib` fails as if it were not installed.
    hide = "import runpy, sys; sys.modules['matplotlib'] = None; runpy.run_path(sys.argv[1], run_name='__main__')"
    run = subprocess.run([sys.executable, "-c", hide, str(EXAMPLE)], capture_output=True, text=True)
    assert run.returncode == 1
    assert "matplotlib" in run.stderr and "pip install 'meshbed[plot]'" in run.stderr
    assert "Traceback" not in run.stderr
