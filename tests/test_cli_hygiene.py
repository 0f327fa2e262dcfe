"""The command line as a shell user meets it: --version, closed pipes, missing extras, CLI words."""

from __future__ import annotations

import subprocess
import sys

import pytest
import tallyboard
from tallyboard import SummaryWriter
from tallyboard.extras import MissingExtra


def _cli(*args: str, block: str | None = None, **kw):
    """Run ``python -m tallyboard ARGS``; ``block`` makes that module unimportable in the child."""
    code = "import sys, runpy\n"
    if block:
        code += f"sys.modules[{block!r}] = None\n"
    code += "sys.argv = ['tallyboard', *sys.argv[1:]]\nrunpy.run_module('tallyboard', run_name='__main__')\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, **kw)


@pytest.mark.parametrize("how", ["module", "script"])
def test_version_is_printed_by_the_module_and_the_script(how):
    if how == "module":
        out = subprocess.run(
            [sys.executable, "-m", "tallyboard", "--version"], capture_output=True, text=True
        )
    else:
        script = subprocess.run(
            [
                sys.executable,
                "-c",
                "import shutil, sys; print(shutil.which('tallyboard', path=sys.prefix + '/bin'))",
            ],
            capture_output=True,
            text=True,
        ).stdout.strip()
        out = subprocess.run([script, "--version"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"tallyboard {tallyboard.__version__}"


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly():
    proc = subprocess.Popen(
        [sys.executable, "-m", "tallyboard", "plugins"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # like `| head -0`: nobody reads what it prints
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141  # 128 + SIGPIPE, what a shell shows for a killed writer
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_plot_without_matplotlib_names_the_extra_in_one_line(tmp_path):
    with SummaryWriter(tmp_path / "run") as w:
        w.add_scalar("loss", 1.0, 0)
    out = _cli(
        "plot", str(tmp_path), "--tag", "loss", "-o", str(tmp_path / "p.png"), block="matplotlib"
    )
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "tallyboard: tallyboard plot needs matplotlib, which is not installed: "
        'pip install "tallyboard[figures]" (from a checkout: pip install ".[figures]")'
    ]


def test_read_without_pandas_raises_an_import_error_naming_the_extra(tmp_path):
    code = (
        "import sys\nsys.modules['pandas'] = None\nimport tallyboard\n"
        f"tallyboard.read({str(tmp_path)!r})\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("tallyboard.extras.MissingExtra: tallyboard.read needs pandas")
    assert 'pip install "tallyboard[read]"' in last
    assert issubclass(MissingExtra, ModuleNotFoundError)


def test_export_parquet_without_pyarrow_names_the_extra(tmp_path):
    with SummaryWriter(tmp_path / "run") as w:
        w.add_scalar("loss", 1.0, 0)
    out = _cli("export", str(tmp_path), "-o", str(tmp_path / "x.parquet"), block="pyarrow")
    assert out.returncode == 1
    assert 'pip install "tallyboard[read]"' in out.stderr and "Traceback" not in out.stderr


def test_convert_into_a_full_directory_speaks_cli_words(tmp_path):
    with SummaryWriter(tmp_path / "src" / "run") as w:
        w.add_scalar("loss", 1.0, 0)
    (tmp_path / "dst").mkdir()
    (tmp_path / "dst" / "keep.txt").write_text("x")
    out = _cli("convert", str(tmp_path / "src"), str(tmp_path / "dst"), "--to", "tfevents")
    assert out.returncode == 1
    assert "--force" in out.stderr and "force=True" not in out.stderr
    with pytest.raises(FileExistsError, match=r"force=True to add") as info:
        tallyboard.convert(str(tmp_path / "src"), str(tmp_path / "dst"), "tfevents")
    assert "--force" not in str(info.value)
