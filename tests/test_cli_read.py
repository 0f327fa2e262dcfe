"""``tallyboard ls | export | plot`` run as real subprocesses on runs tallyboard wrote (``board``:
tests/test_board_cli.py)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import load_run
from tallyboard import SummaryWriter
from tallyboard.cli.read import smooth


def pb(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tallyboard", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``tallyboard ARGS`` through the same ``main()`` in this process (no interpreter to start,
    no pandas or pyarrow to import again: a second or more per call on the 2-core CI machine),
    its exit status and what it printed, as :func:`pb` gives them."""
    import contextlib

    from tallyboard.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as stop:  # argparse's usage errors
            status = stop.code if isinstance(stop.code, int) else 1
    return subprocess.CompletedProcess(list(args), status, out.getvalue(), err.getvalue())


def value(i: int, k: int, seed: int) -> float:
    return 2.0 / (i + 1) + 0.25 * k + 0.1 * seed


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    for seed in range(3):
        with SummaryWriter(str(root / f"seed{seed}")) as w:
            for i in range(20):
                for k, tag in enumerate(("loss", "acc")):
                    w.add_scalar(tag, value(i, k, seed), i)
    return root


def test_ls_table_and_json(logdir: Path) -> None:
    out = pb("ls", str(logdir))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:4] == ["run", "kind", "tag", "count"]
    assert any(ln.split()[:5] == ["seed1", "scalar", "loss", "20", "0..19"] for ln in lines)
    out = pb("ls", str(logdir), "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    scalars = [r for r in rows if r["kind"] == "scalar"]
    assert {(r["run"], r["tag"]) for r in scalars} == {
        (f"seed{s}", t) for s in range(3) for t in ("loss", "acc")
    }
    for r in scalars:
        assert (r["count"], r["min_step"], r["max_step"]) == (20, 0, 19)
        assert abs(r["last_wall_time"] - time.time()) < 600


def test_ls_columns_line_up_whatever_the_widths_of_their_cells(tmp_path: Path) -> None:
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.util import tensor_util
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    with SummaryWriter(str(tmp_path / "a")) as w:
        w.add_scalar("loss", 1.0, 3, walltime=0.0)  # 1970
        w.add_scalar("a much longer tag name than the header", 2.0, 123456789, walltime=1e12)
        w.add_image("picture", np.zeros((3, 4, 4), np.uint8), 0)
    torch_writer = TorchWriter(str(tmp_path / "a run with a long name"))
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="someone_elses"))
    value = Summary.Value(tag="x", metadata=meta, tensor=tensor_util.make_tensor_proto(1.0))
    torch_writer._get_file_writer().add_summary(Summary(value=[value]), 7)
    torch_writer.close()
    out = pb("ls", str(tmp_path))
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    starts = [header.index(name) for name in ("kind", "tag", "count", "steps", "last update")]
    assert len(rows) == 4
    for row in rows:
        for at in starts:  # every cell starts where its heading does, after the gap
            assert row[at - 2 : at] == "  " and row[at] != " ", (header, row)
    joined = "\n".join(rows)
    assert "undecoded (someone_elses)" in joined and "123456789..123456789" in joined
    assert "33658-" in joined and "1970-01-01 00:00:00" in joined


def test_ls_shows_each_rows_own_last_update_and_steps_when_runs_share_them(
    tmp_path: Path,
) -> None:
    walls = {"a": 100.2, "b": 50.5, "c": 100.9, "d": 86_400.0}  # a and c in one second
    for run, wall in walls.items():
        with SummaryWriter(str(tmp_path / run)) as w:
            w.add_scalar("loss", 1.0, 0, walltime=wall - 1)
            w.add_scalar("loss", 2.0, 5 if run != "b" else 7, walltime=wall)
    out = pb("ls", str(tmp_path))
    assert out.returncode == 0, out.stderr
    rows = [re.split(r"\s{2,}", line) for line in out.stdout.splitlines()[1:]]
    shown = {run: (steps, last) for run, _, _, _, steps, last in rows}
    assert shown == {
        "a": ("0..5", "1970-01-01 00:01:40"),
        "b": ("0..7", "1970-01-01 00:00:50"),
        "c": ("0..5", "1970-01-01 00:01:40"),
        "d": ("0..5", "1970-01-02 00:00:00"),
    }


@pytest.mark.parametrize("suffix", ["csv", "parquet", "jsonl"])
def test_export_reads_back_the_values_written(logdir: Path, tmp_path: Path, suffix: str) -> None:
    out_path = tmp_path / f"out.{suffix}"
    out = in_process(
        "export", str(logdir), "-o", str(out_path), "--runs", "seed0", "--runs", "seed2"
    )
    assert out.returncode == 0, out.stderr
    df = {
        "csv": pd.read_csv,
        "parquet": pd.read_parquet,
        "jsonl": lambda p: pd.read_json(p, lines=True),
    }[suffix](out_path)
    assert list(df.columns) == ["run", "tag", "step", "wall_time", "value"]
    assert len(df) == 2 * 2 * 20
    for row in df.itertuples():
        seed, k = int(row.run[-1]), ("loss", "acc").index(row.tag)
        assert row.value == pytest.approx(value(row.step, k, seed), rel=1e-6)
    again = in_process("export", str(logdir), "-o", str(out_path), "--tags", "acc")
    assert again.returncode == 1 and "--force" in again.stderr
    forced = in_process("export", str(logdir), "-o", str(out_path), "--tags", "acc", "--force")
    assert forced.returncode == 0, forced.stderr
    if suffix == "csv":
        df = pd.read_csv(out_path)
        assert set(df["tag"]) == {"acc"} and len(df) == 60


def test_export_format_flag_and_unknown_suffix(logdir: Path, tmp_path: Path) -> None:
    out = pb("export", str(logdir), "-o", str(tmp_path / "x.dat"))
    assert out.returncode == 1 and "--format" in out.stderr and "Traceback" not in out.stderr
    out = pb("export", str(logdir), "-o", str(tmp_path / "x.dat"), "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    assert len(pd.read_json(tmp_path / "x.dat", lines=True)) == 120


def _png(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        assert im.size == (800, 500)
        return np.asarray(im.convert("RGB"))


@pytest.mark.parametrize("extra", [[], ["--smooth", "0.6"], ["--smooth", "0.6", "--band"]])
def test_plot_writes_a_non_blank_png(logdir: Path, tmp_path: Path, extra: list[str]) -> None:
    png = tmp_path / "loss.png"
    out = pb("plot", str(logdir), "--tag", "loss", "-o", str(png), *extra)
    assert out.returncode == 0, out.stderr
    pixels = _png(png)
    colours = {tuple(p) for p in pixels.reshape(-1, 3)[::7]}
    assert len(colours) > 10


def test_plot_missing_tag_lists_tags(logdir: Path, tmp_path: Path) -> None:
    out = pb("plot", str(logdir), "--tag", "nope", "-o", str(tmp_path / "x.png"))
    assert out.returncode == 1
    assert "'nope'" in out.stderr and "acc, loss" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "x.png").exists()


def test_smoothing_matches_tensorboard_formula_by_hand() -> None:
    w = 0.6
    # by hand: last=0.4*1=0.4 -> /0.4 = 1; last=0.24+0.4*3=1.44 -> /(1-0.36)=2.25;
    # last=0.864+0.4*2=1.664 -> /(1-0.216)=2.12244...
    got = smooth([1.0, 3.0, 2.0], w)
    assert got == pytest.approx([1.0, 2.25, 1.664 / 0.784])
    assert smooth([1.0, 3.0], 0.0) == [1.0, 3.0]
    nan = smooth([1.0, float("nan"), 3.0], w)
    assert nan[0] == 1.0 and nan[1] != nan[1] and nan[2] == pytest.approx(2.25)
    with pytest.raises(ValueError, match="weight"):
        smooth([1.0], 1.0)


def test_bad_arguments(tmp_path: Path, logdir: Path) -> None:
    out = pb("ls", str(tmp_path / "missing"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "not a directory" in out.stderr
    out = pb("plot", str(logdir), "--tag", "loss", "-o", "x.png", "--smooth", "1.5")
    assert out.returncode == 2 and "[0, 1)" in out.stderr
    out = pb("export", str(logdir))
    assert out.returncode == 2 and "-o/--output" in out.stderr
    out = pb("export", str(logdir), "-o", "x.csv", "--format", "xml")
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_long_runs_of_one_tag_are_listed_exported_and_plotted_whole(tmp_path: Path) -> None:
    # 300 records of one length: the reader decodes them in bulk (numpy columns, not lists)
    with SummaryWriter(str(tmp_path / "runs" / "long")) as w:
        for step in range(300):
            w.add_scalar("loss", 1.0 / (step + 1), step)
    runs = str(tmp_path / "runs")
    listed = pb("ls", runs, "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert (row["count"], row["min_step"], row["max_step"]) == (300, 0, 299)
    out_path = tmp_path / "long.csv"
    assert pb("export", runs, "-o", str(out_path)).returncode == 0
    df = pd.read_csv(out_path)
    assert df["step"].tolist() == list(range(300))
    assert np.allclose(df["value"], 1.0 / (df["step"] + 1), rtol=1e-6)
    png = tmp_path / "long.png"
    plotted = pb("plot", runs, "--tag", "loss", "-o", str(png))
    assert plotted.returncode == 0, plotted.stderr
    assert len(np.unique(_png(png).reshape(-1, _png(png).shape[-1]), axis=0)) > 10


def _exported(path: Path, fmt: str) -> list[dict[str, Any]]:
    """The rows of an export, read with the standard library (csv, json) or pyarrow, and their
    cells decoded as documented: base64 bytes, JSON-text lists in csv, .npy bytes in parquet."""
    import base64
    import csv

    if fmt == "parquet":
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
        for row in rows:
            if isinstance(row.get("value"), bytes):  # a tensor: .npy bytes
                row["value"] = np.load(io.BytesIO(row["value"])).tolist()
        return rows
    if fmt == "jsonl":
        rows = [json.loads(line) for line in path.read_text().splitlines()]
    else:
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            for key, cell in row.items():
                if cell[:1] in ("[", "{"):
                    row[key] = json.loads(cell)
    for row in rows:
        if "data" in row:
            row["data"] = base64.b64decode(row["data"])
    return rows


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_kind_writes_every_field_of_every_kind(tmp_path: Path, fmt: str) -> None:
    from tensorboard.util import tensor_util

    run = tmp_path / "runs" / "r"
    rng = np.random.default_rng(5)
    with SummaryWriter(str(run)) as w:
        for step in range(2):
            w.add_histogram("h", rng.normal(size=50), step)
            w.add_image("img", rng.random((3, 4, 5)), step)
            w.add_tensor("t", rng.normal(size=(2, 3)).astype(np.float32), step)
            w.add_audio("a", np.sin(np.arange(300) / 3), step, sample_rate=8000)
            w.add_text("note", f"step **{step}**", step)
    acc = load_run(run)
    logdir = str(tmp_path / "runs")

    def export(kind: str) -> list[dict[str, Any]]:
        out_path = tmp_path / f"{kind}.{fmt}"
        out = in_process("export", logdir, "-o", str(out_path), "--kind", kind)
        assert out.returncode == 0, out.stderr
        assert f"wrote 2 {kind} rows" in out.stderr
        rows = _exported(out_path, fmt)
        assert [r["run"] for r in rows] == ["r", "r"] and [int(r["step"]) for r in rows] == [0, 1]
        return rows

    for row, e in zip(export("histogram"), acc.Histograms("h")):
        assert row["bucket_limit"] == list(e.histogram_value.bucket_limit)
        assert row["bucket"] == list(e.histogram_value.bucket)
        assert float(row["sum_squares"]) == e.histogram_value.sum_squares
        assert float(row["wall_time"]) == e.wall_time
    for row, e in zip(export("image"), acc.Images("img")):
        assert row["data"] == e.encoded_image_string
        assert (int(row["width"]), int(row["height"])) == (e.width, e.height)
    for row, e in zip(export("tensor"), acc.Tensors("t")):
        assert row["value"] == tensor_util.make_ndarray(e.tensor_proto).tolist()
        assert row["dtype"] == "float32" and row["shape"] == [2, 3]
    for row, e in zip(export("audio"), acc.Audio("a")):
        assert row["data"] == e.encoded_audio_string
        assert float(row["sample_rate"]) == e.sample_rate == 8000
    assert [r["value"] for r in export("text")] == ["step **0**", "step **1**"]


def test_export_kind_hparams_gives_one_row_per_trial(tmp_path: Path) -> None:
    import csv

    with SummaryWriter(str(tmp_path / "runs")) as w:
        for lr in (0.1, 0.01):
            w.add_hparams({"lr": lr, "opt": "sgd"}, {"hp/acc": lr * 5}, run_name=f"lr{lr}")
    out_path = tmp_path / "hp.csv"
    out = in_process("export", str(tmp_path / "runs"), "-o", str(out_path), "--kind", "hparams")
    assert out.returncode == 0, out.stderr
    with open(out_path, newline="") as fh:
        rows = sorted(csv.DictReader(fh), key=lambda r: r["run"])
    assert [(r["run"], float(r["lr"]), r["opt"]) for r in rows] == [
        ("lr0.01", 0.01, "sgd"),
        ("lr0.1", 0.1, "sgd"),
    ]
    assert [float(r["hp/acc"]) for r in rows] == pytest.approx([0.05, 0.5], rel=1e-7)  # float32


def test_export_unknown_kind_is_a_one_line_error(logdir: Path, tmp_path: Path) -> None:
    out = pb("export", str(logdir), "-o", str(tmp_path / "x.csv"), "--kind", "nope")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "unknown kind 'nope'" in out.stderr and "histogram" in out.stderr
    assert not (tmp_path / "x.csv").exists()


def test_ls_reads_a_run_with_a_csv_mirror_once_and_from_picks_the_format(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path / "run"), sinks=["tfevents", "csv"]) as w:
        for step in range(5):
            w.add_scalar("loss", 1.0 / (step + 1), step)
    out = pb("ls", str(tmp_path), "--json")
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)
    assert (row["run"], row["tag"], row["count"]) == ("run", "loss", 5)
    assert "note:" not in out.stderr  # the mirror tallyboard was asked to write: no surprise
    csv_only = pb("ls", str(tmp_path), "--json", "--from", "csv")
    assert [r["count"] for r in json.loads(csv_only.stdout)] == [5]
    assert "also holds" not in csv_only.stderr
    both = pb("ls", str(tmp_path), "--json", "--from", "csv", "--from", "tfevents")
    assert [r["count"] for r in json.loads(both.stdout)] == [10]
    bad = pb("ls", str(tmp_path), "--from", "nope")
    assert bad.returncode == 1 and "unknown format" in bad.stderr


def test_a_mirror_tallyboard_did_not_write_is_noted_once_per_command(tmp_path: Path) -> None:
    from tensorboardX import SummaryWriter as TbxWriter

    for run in ("a", "b"):  # another writer's event files, with csv files copied beside them
        with SummaryWriter(str(tmp_path / "made" / run), sinks=["csv"]) as w:
            w.add_scalar("loss", 0.5, 0)
        with TbxWriter(str(tmp_path / "runs" / run)) as tbx:
            tbx.add_scalar("loss", 0.5, 0)
        for f in (tmp_path / "made" / run).iterdir():
            (tmp_path / "runs" / run / f.name).write_bytes(f.read_bytes())
    ls = pb("ls", str(tmp_path / "runs"))
    export = pb("export", str(tmp_path / "runs"), "-o", str(tmp_path / "out.csv"))
    for out in (ls, export):
        assert out.returncode == 0, out.stderr
        notes = [ln for ln in out.stderr.splitlines() if ln.startswith("note:")]
        assert notes == [
            "note: runs 'a', 'b' also hold csv files with the same values; not read"
            " (--from csv reads them)"
        ], out.stderr


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``tallyboard ARGS`` in this process: its exit status and what it wrote to stderr."""
    from tallyboard.cli import main

    status = main(list(args))
    return status, capsys.readouterr().err


def test_export_selects_tags_and_runs_by_glob_as_read_does(
    logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import tallyboard

    out = tmp_path / "x.csv"
    status, err = cli(capsys, "export", str(logdir), "-o", str(out), "--tags", "l*",
                      "--runs", "seed[02]")  # fmt: skip
    assert status == 0, err
    got = pd.read_csv(out).sort_values(["run", "step"], ignore_index=True)
    want = tallyboard.read(logdir, tags="l*", runs="seed[02]").astype({"run": str, "tag": str})
    want = want.sort_values(["run", "step"], ignore_index=True)
    assert len(got) == 40 and set(got["tag"]) == {"loss"} and set(got["run"]) == {"seed0", "seed2"}
    pd.testing.assert_frame_equal(got[["run", "tag", "step", "value"]],
                                  want[["run", "tag", "step", "value"]], check_dtype=False)  # fmt: skip


def test_export_of_no_value_is_an_error_naming_the_closest_tags_and_writes_nothing(
    logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.parquet"
    status, err = cli(capsys, "export", str(logdir), "-o", str(out), "--tags", "los")
    assert status == 1
    assert err.startswith("tallyboard export: --tags los matches none of the 2 scalar tags in the")
    assert "3 runs read" in err and "closest: loss, acc; nothing written" in err
    assert list(tmp_path.iterdir()) == [logdir]  # neither the output nor its .partial
    status, err = cli(capsys, "export", str(logdir), "-o", str(out), "--kind", "image")
    assert status == 1 and "no image values in the 3 runs read" in err
    status, err = cli(capsys, "export", str(logdir), "-o", str(out), "--runs", "sed1")
    assert status == 1
    assert "--runs sed1 matches no run under" in err and "runs there: seed1, seed" in err
    assert sorted(err.split("runs there: ")[1].split(";")[0].split(", ")) == [
        "seed0",
        "seed1",
        "seed2",
    ]
    assert list(tmp_path.iterdir()) == [logdir]
    status, err = cli(capsys, "export", str(logdir), "-o", str(out), "--tags", "loss")
    assert status == 0 and "wrote 60 scalars" in err  # the retry needs no --force


def test_export_options_before_the_log_dir_take_one_value_each(
    logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.csv"
    status, err = cli(capsys, "export", "--runs", "seed1", "--tags", "acc", str(logdir),
                      "-o", str(out))  # fmt: skip
    assert status == 0, err
    assert len(pd.read_csv(out)) == 20
    with pytest.raises(SystemExit) as stop:  # a second word after --runs is no run name
        cli(capsys, "export", str(logdir), "--runs", "seed1", "seed2", "-o", str(out), "--force")
    assert stop.value.code == 2 and "unrecognized arguments: seed2" in capsys.readouterr().err


def test_ls_says_count_is_records_where_a_step_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SummaryWriter(str(tmp_path / "run")) as w:
        for step in (0, 1, 2, 2):  # step 2 twice, as MindSpore's collector at an epoch end
            w.add_scalar("loss", 1.0, step)
        w.add_scalar("acc", 1.0, 0)
    status, err = cli(capsys, "ls", str(tmp_path))
    assert status == 0
    assert err == (
        "note: count is records: 1 tag holds more records than steps (e.g. run loss: 4 records"
        " over steps 0..2), a step written more than once; TensorBoard draws one point per step\n"
    )
