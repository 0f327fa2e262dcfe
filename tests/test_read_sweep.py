"""Reading many runs: the per-file tag-cycle search, the worker pool, run/tag globs, the progress
bar, and ``tallyboard export --dataset``; every table is checked against EventAccumulator."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import event_files, load_run
from tallyboard import SummaryWriter, read
from tallyboard.plugin.readers import ReadWarning
from tallyboard.reading.progress import Progress
from tallyboard.reading.runs import RunReader

pytest_plugins = ["tallyboard.testing"]


def _write(path: Path, steps: int, tags: tuple[str, ...], start: int = 0) -> None:
    with SummaryWriter(str(path)) as w:
        for s in range(start, start + steps):
            for k, tag in enumerate(tags):
                w.add_scalar(tag, 1.0 / (s + 1) + k, s)


def _sweep(root: Path) -> dict[str, tuple[str, ...]]:
    """Runs of different tags, lengths and step ranges (step varints of 1, 2 and 3 bytes)."""
    runs = {
        "lr=0.1/seed0": ("loss", "accuracy", "lr"),
        "lr=0.1/seed1": ("loss", "accuracy", "lr"),
        "lr=0.01/seed0": ("loss", "grad/norm"),
        "lr=0.01/seed1": ("x",),
        "baseline": ("loss", "accuracy", "lr", "a_much_longer_tag_name"),
    }
    for i, (run, tags) in enumerate(runs.items()):
        _write(root / run, 300 + 4000 * (i == 4), tags)
    return runs


def _assert_matches_event_accumulator(
    df: Any, root: Path, runs: dict[str, tuple[str, ...]]
) -> None:
    assert sorted(df["run"].unique()) == sorted(runs)
    for run, tags in runs.items():
        acc = load_run(root / run)
        assert sorted(acc.Tags()["scalars"]) == sorted(tags)
        for tag in tags:
            got = df[(df.run == run) & (df.tag == tag)]
            want = acc.Scalars(tag)
            assert got["step"].tolist() == [e.step for e in want]
            assert got["wall_time"].tolist() == [e.wall_time for e in want]
            assert got["value"].tolist() == [np.float32(e.value) for e in want]


def test_tag_cycles_are_found_after_the_first_event_and_a_step_varint_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 steps x 3 tags: the file's first event (file_version) and the step varint growing
    at step 128 must not hide the cycle; almost every record is bounded a cycle at a time."""
    from tallyboard_tfevents import reader as tfevents_reader

    _write(tmp_path, 1000, ("loss", "accuracy", "lr"))
    gained = []
    cycles = tfevents_reader.EventFileReader._cycles

    def counting(data: bytes, offs: list[int], pos: int) -> Any:
        out = cycles(data, offs, pos)
        gained.append(sum(map(len, out[0])))
        return out

    monkeypatch.setattr(tfevents_reader.EventFileReader, "_cycles", staticmethod(counting))
    df = read(str(tmp_path), workers=1)
    assert len(df) == 3000
    assert sum(gained) >= 2900, gained  # the old search found no cycle here: 0 gained
    _assert_matches_event_accumulator(df, tmp_path, {".": ("loss", "accuracy", "lr")})


def test_period_is_the_shortest_repeating_tail() -> None:
    from tallyboard_tfevents.reader import _period

    head = [90]  # the file_version event
    assert _period(head + [40, 44, 38] * 12) == 3
    assert _period(head + [40] * 40) == 1
    assert _period(head + [40, 44, 38] * 5 + [41, 45, 39] * 6) == 3  # after the varint grew
    assert _period(head + list(range(40, 80))) == 0
    long = [7, 8, 9, 10] * 300 + [1, 2] * 600  # the long-window path (numpy candidates)
    assert _period(long) == 2
    assert _period(list(range(600))) == 0


@pytest.mark.parametrize("workers", [1, 2])
def test_many_runs_match_event_accumulator(tmp_path: Path, workers: int) -> None:
    runs = _sweep(tmp_path)
    df = read(str(tmp_path), workers=workers)
    _assert_matches_event_accumulator(df, tmp_path, runs)


def test_a_decoder_that_does_not_pickle_reads_without_the_pool(
    tmp_path: Path, register_plugin: Any
) -> None:
    """A plugin's decoder defined inside a function cannot reach a worker process: the files
    are then read here, and nothing is lost."""
    from tallyboard import hookimpl

    class LocalDecoder:
        @hookimpl
        def register_decoders(self, register: Any) -> None:
            def decode(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
                return None

            register("tfevents", "nothing", decode)

    register_plugin(LocalDecoder(), "local-decoder")
    runs = _sweep(tmp_path)
    _assert_matches_event_accumulator(read(str(tmp_path), workers=2), tmp_path, runs)


def test_pool_reads_stay_incremental_and_warnings_reach_the_caller(tmp_path: Path) -> None:
    runs = _sweep(tmp_path)
    reader = RunReader(str(tmp_path))
    first = reader.read(workers=2)
    assert sum(len(b.scalars()[0]) for _, b in first) == sum(
        (300 + 4000 * (i == 4)) * len(t) for i, t in enumerate(runs.values())
    )
    assert sum(len(b.scalars()[0]) for _, b in reader.read(workers=2)) == 0  # nothing new
    _write(tmp_path / "lr=0.01/seed1", 5, ("x",), start=300)  # a second file of that run
    (path,) = event_files(tmp_path / "baseline")
    with open(path, "ab") as fh:  # damaged bytes appended to a file already read
        fh.write(b"\xff" * 40)
    with pytest.warns(ReadWarning, match="baseline/.*bad length CRC"):
        again = reader.read(workers=2)
    new = {run: b.scalars() for run, b in again if len(b.scalars()[0])}
    assert list(new) == ["lr=0.01/seed1"]
    assert new["lr=0.01/seed1"][1].tolist() == [300, 301, 302, 303, 304]


def test_run_and_tag_globs_keep_only_matching_and_leave_other_runs_unopened(tmp_path: Path) -> None:
    _sweep(tmp_path)
    (bad,) = event_files(tmp_path / "baseline")
    bad.write_bytes(b"\x00" * 64)  # would warn if it were opened
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = read(str(tmp_path), runs="lr=0.1/*", tags=["loss", "acc*"])
        opened = RunReader(str(tmp_path), runs=["lr=0.0?/*"]).discover()
    assert sorted(run for run, _ in opened) == ["lr=0.01/seed0", "lr=0.01/seed1"]
    assert sorted(df["run"].unique()) == ["lr=0.1/seed0", "lr=0.1/seed1"]
    assert sorted(df["tag"].unique()) == ["accuracy", "loss"]
    for run in ("lr=0.1/seed0", "lr=0.1/seed1"):
        acc = load_run(tmp_path / run)
        for tag in ("loss", "accuracy"):
            assert df[(df.run == run) & (df.tag == tag)]["step"].tolist() == [
                e.step for e in acc.Scalars(tag)
            ]


def test_bad_arguments_raise_in_the_caller(tmp_path: Path) -> None:
    _write(tmp_path, 3, ("x",))
    with pytest.raises(TypeError, match="runs must be None, a str or an iterable of str"):
        read(str(tmp_path), runs=[1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="tags must be None"):
        read(str(tmp_path), tags=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="workers must be None or an int >= 1, got 0"):
        read(str(tmp_path), workers=0)
    with pytest.raises(TypeError, match="progress must be None or a bool"):
        read(str(tmp_path), progress="yes")  # type: ignore[arg-type]


def test_progress_draws_only_when_asked_or_in_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    quiet = Progress(10, "read", delay=0.0)  # stderr is captured here: not a terminal
    quiet(5)
    quiet.close()
    assert capsys.readouterr().err == ""
    shown = Progress(10, "read", delay=0.0, show=True)
    for i in range(1, 11):
        shown(i)
    shown.close()
    err = capsys.readouterr().err
    assert "10/10" in err and "read" in err


# -- export --dataset -------------------------------------------------------------------------


def _cli(*args: str) -> int:
    from tallyboard.cli import main

    return main(list(args))


def _dataset_rows(path: Path) -> Any:
    import pyarrow.dataset as ds

    table = ds.dataset(str(path), format="parquet", partitioning="hive").to_table()
    return _sorted(table.to_pandas())


def _sorted(df: Any) -> Any:
    """Rows by run, tag and step, compared as text (categories keep their own order)."""
    df = df.assign(run=df["run"].astype(str), tag=df["tag"].astype(str))
    return df.sort_values(["run", "tag", "step"], kind="stable").reset_index(drop=True)


def test_export_dataset_appends_only_what_is_new(tmp_path: Path) -> None:
    import duckdb

    logdir, out = tmp_path / "logs", tmp_path / "dataset"
    runs = _sweep(logdir)
    assert _cli("export", str(logdir), "--dataset", str(out)) == 0
    first = _dataset_rows(out)
    want = _sorted(read(str(logdir)))
    assert len(first) == len(want)
    for col in ("run", "tag", "step", "wall_time", "value"):
        assert first[col].tolist() == want[col].tolist()
    assert sorted(first["run"].unique()) == sorted(runs)
    assert set(first["kind"].astype(str)) == {"scalar"}
    state = json.loads((out / "_tallyboard_state.json").read_text())
    assert state["exports"] == 1

    # new steps in one run, a new run; nothing else changes
    _write(logdir / "lr=0.1/seed0", 7, ("loss",), start=300)
    _write(logdir / "new_run", 4, ("loss", "lr"))
    assert _cli("export", str(logdir), "--dataset", str(out)) == 0
    second = _dataset_rows(out)
    assert len(second) == len(first) + 7 + 8
    full = _sorted(read(str(logdir)))
    for col in ("run", "tag", "step", "wall_time", "value"):
        assert second[col].tolist() == full[col].tolist()
    acc = load_run(logdir / "lr=0.1/seed0")
    got = second[(second.run == "lr=0.1/seed0") & (second.tag == "loss")]
    assert got["step"].tolist() == [e.step for e in acc.Scalars("loss")]

    # a third export with nothing new appends nothing
    before = sorted(p.name for p in out.rglob("*.parquet"))
    assert _cli("export", str(logdir), "--dataset", str(out)) == 0
    assert sorted(p.name for p in out.rglob("*.parquet")) == before

    con = duckdb.connect()
    counts = dict(
        con.execute(
            "select run, count(*) from read_parquet(?, hive_partitioning = true) group by run",
            [str(out / "**" / "*.parquet")],
        ).fetchall()
    )
    decoded = {r.replace("%2F", "/").replace("%3D", "="): n for r, n in counts.items()}
    assert decoded == second.groupby("run").size().to_dict()


def test_export_dataset_drops_parts_of_a_crashed_export_and_rejects_bad_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir, out = tmp_path / "logs", tmp_path / "dataset"
    _write(logdir / "a", 50, ("loss",))
    assert _cli("export", str(logdir), "--dataset", str(out)) == 0
    (part,) = out.rglob("*.parquet")
    stray = part.with_name("part-000002-000000.parquet")  # an export that died before its state
    stray.write_bytes(part.read_bytes())
    assert _cli("export", str(logdir), "--dataset", str(out)) == 0
    assert not stray.exists()
    assert len(_dataset_rows(out)) == 50

    other = tmp_path / "other"
    _write(other, 3, ("x",))
    assert _cli("export", str(other), "--dataset", str(out)) == 1
    assert "holds an export of" in capsys.readouterr().err
    afile = tmp_path / "file.txt"
    afile.write_text("x")
    assert _cli("export", str(logdir), "--dataset", str(afile)) == 1
    assert "is not a directory" in capsys.readouterr().err
    assert len(_dataset_rows(out)) == 50  # nothing accepted before is lost

    (src,) = event_files(logdir / "a")
    src.write_bytes(src.read_bytes()[:200])  # the file shrank: rewritten, or truncated
    with pytest.warns(ReadWarning, match="the file shrank since the last export"):
        assert _cli("export", str(logdir), "--dataset", str(out)) == 0
    assert len(_dataset_rows(out)) == 50


def test_export_memory_stays_bounded_as_runs_grow(tmp_path: Path) -> None:
    """Exporting 4x the runs needs no more memory per run than its bookkeeping: files are read,
    written and dropped a few at a time (traced in one process, workers=1)."""
    import shutil
    import tracemalloc

    from tallyboard.reading.dataset import export_dataset

    _write(tmp_path / "one", 100, ("loss", "accuracy", "lr"))
    (src,) = event_files(tmp_path / "one")
    peaks = {}
    for n in (400, 1600):  # each many tasks of files: what grows is what is kept per run
        logdir = tmp_path / f"logs{n}"
        for i in range(n):
            (logdir / f"run{i:04d}").mkdir(parents=True)
            shutil.copyfile(src, logdir / f"run{i:04d}" / src.name)
        tracemalloc.start()
        count = export_dataset(str(logdir), str(tmp_path / f"ds{n}"), workers=1)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert count == {"rows": n * 300, "files": n, "parts": n}
    # What may grow with the runs is each file's bookkeeping (its path, size and reader state,
    # under 4 KiB), never its data: each file holds 300 scalars, and the peak grows by far less.
    assert (peaks[1600] - peaks[400]) / 1200 < 4096, peaks
