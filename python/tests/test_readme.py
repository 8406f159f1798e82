"""The README's Python lines run as written, so they cannot drift from the
package: every ```python block of README.md, in a fresh interpreter whose
working directory has the repository's examples/ (the paths the README
uses), with the built-in experiment the README sweeps swapped for the small
one of conftest.py (the same keys, seconds instead of minutes)."""

import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
SWEPT = "testbed-a-single"


def readme_blocks():
    return BLOCK.findall((ROOT / "README.md").read_text())


def test_the_readme_has_python_lines_that_sweep_the_swapped_experiment():
    blocks = readme_blocks()
    assert blocks, "README.md has no ```python block"
    assert any(f'meshbed.sweep("{SWEPT}"' in b for b in blocks)


def test_the_readme_python_lines_run_as_written(small_experiment, tmp_path):
    pytest.importorskip("ray")  # the README's last lines sweep on Ray
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    prelude = textwrap.dedent(
        f"""
        import meshbed
        _builtin = meshbed.Experiment.builtin.__func__
        _small = meshbed.Experiment.from_file({str(small_experiment)!r})
        meshbed.Experiment.builtin = classmethod(lambda cls, name: _small if name == {SWEPT!r} else _builtin(cls, name))
        """
    )
    # conftest's small experiment: 2 points x 2 protocols x 2 repetitions, one flow each.
    check = '\nprint(f"README ran: {len(df)} rows, report of seed {r.seed}")\n'
    script = tmp_path / "readme.py"
    script.write_text(prelude + "\n".join(readme_blocks()) + check)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "README ran: 8 rows, report of seed 7" in run.stdout
    # print(r): the short summary, not the run's JSON.
    assert "Report(seed=7, " in run.stdout and "route_log: " in run.stdout
    assert (tmp_path / "results" / SWEPT / "store").is_dir()
