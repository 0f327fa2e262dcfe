"""Hostile files the readers once crashed, hung or ballooned on (issue 19), each read by
``read()`` and the CLI commands that read: the damage is reported with file and offset, and the
runs beside it are still read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tracemalloc
import warnings
from pathlib import Path

import pandas as pd
import pytest
from hostile_files import frame, header, image_event, png_bomb, scalar_event, write_runs
from tallyboard import read
from tallyboard.plugin.readers import ReadWarning


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "runs"
    write_runs(root)
    return root


@pytest.fixture
def logdir(runs: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, symlinks=True)
    return copy


def only(logdir: Path, cond: str) -> Path:
    (path,) = [p for p in logdir.rglob("*") if cond in p.name and p.is_file()]
    return path


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tallyboard", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def counts(logdir: Path, **kw: object) -> dict[str, int]:
    df = read(str(logdir), **kw)  # type: ignore[arg-type]
    return {str(k): int(v) for k, v in df.groupby("run", observed=True).size().items()}


BASE = {"csv": 12, "jsonl": 6, "ms": 12, "tb": 12}


@pytest.mark.parametrize("run,cond", [("tb", "tfevents"), ("ms", ".out.events.summary.")])
def test_a_header_claiming_2_to_62_bytes_is_damage_named_with_file_and_offset(
    logdir: Path, run: str, cond: str
) -> None:
    path = only(logdir / run, cond)
    end = path.stat().st_size
    with open(path, "ab") as f:
        f.write(header(1 << 62) + b"x" * 32)
    with pytest.warns(ReadWarning, match=rf"{path.name}: a record claims \d+ bytes.*offset {end}"):
        assert counts(logdir) == BASE  # every record before it, and every other run
    out = cli("ls", str(logdir), "--json")
    assert out.returncode == 0, out.stderr
    assert f"offset {end}" in out.stderr and "MemoryError" not in out.stderr
    exported = logdir.parent / "out.csv"
    out = cli("export", str(logdir), "-o", str(exported))
    assert out.returncode == 0, out.stderr
    assert pd.read_csv(exported).groupby("run").size().to_dict() == BASE
    out = cli("convert", str(logdir), str(logdir.parent / "conv"), "--to", "tfevents")
    assert out.returncode == 0 and f"offset {end}" in out.stderr, out.stderr
    assert counts(logdir.parent / "conv") == BASE


def test_a_header_within_the_limit_but_past_the_end_is_a_torn_tail_costing_no_memory(
    logdir: Path,
) -> None:
    path = only(logdir / "tb", "tfevents")
    with open(path, "ab") as f:
        f.write(header(1 << 30) + b"x" * 32)  # a live file's record not all written yet
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ReadWarning)  # not damage (yet): no warning
            assert counts(logdir, formats=["tfevents"]) == {"tb": 12}
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20


def test_deeply_nested_json_is_a_malformed_line_and_the_next_lines_are_read(
    logdir: Path,
) -> None:
    path = only(logdir / "jsonl", "records")
    good = path.read_bytes().split(b"\n")[0]
    end = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b"[" * 100_000 + b"\n" + b'{"a":' * 50_000 + b"\n" + good + b"\n")
    with pytest.warns(ReadWarning) as rec:
        assert counts(logdir, formats=["jsonl"]) == {"jsonl": 7}
    messages = [str(w.message) for w in rec]
    assert any(f"offset {end}" in m and "malformed JSON line" in m for m in messages)
    assert any(f"offset {end + 100_001}" in m for m in messages)


def test_a_fifo_named_like_a_log_file_is_skipped_with_a_warning_never_opened(
    logdir: Path,
) -> None:
    fifo = logdir / "tb" / "events.out.tfevents.1.fifo"
    os.mkfifo(fifo)
    os.mkfifo(logdir / "csv" / "scalars.1.csv")
    code = (
        "import warnings, sys; warnings.simplefilter('always');"
        "from tallyboard import read;"
        f"df = read({str(logdir)!r});"
        "print(df.groupby('run', observed=True).size().to_dict())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )  # a hang fails here instead of hanging the suite
    assert out.returncode == 0, out.stderr
    assert eval(out.stdout) == BASE
    assert f"{fifo}: not a regular file" in out.stderr
    out = cli("ls", str(logdir), timeout=60)
    assert out.returncode == 0 and "not a regular file" in out.stderr, out.stderr


def test_a_symlink_to_a_folder_named_like_an_event_file_is_a_folder(
    logdir: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, logdir / "tb" / "events.out.tfevents.2.dir")
    assert counts(logdir) == BASE


def test_symlinked_run_folders_are_read_as_tensorboard_reads_them_and_loops_end(
    logdir: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other-disk"
    shutil.copytree(logdir / "ms", other / "ms-run")
    os.symlink(other / "ms-run", logdir / "linked")
    os.symlink(logdir, logdir / "tb" / "loop")  # a loop back to the log dir
    os.symlink(tmp_path / "nowhere", logdir / "dangling")
    assert counts(logdir) == {**BASE, "linked": 12}


def test_a_200_mb_csv_line_costs_one_chunk_not_the_line(logdir: Path, tmp_path: Path) -> None:
    from tallyboard_csv.reader import CsvFileReader

    path = only(logdir / "csv", "scalars")
    end = path.stat().st_size
    with open(path, "ab") as f:
        for _ in range(32):
            f.write(b"1" * (1 << 20))  # 32 MiB here; the 200 MB peaked at 650 MB
        f.write(b"\n1.5,99,late,3.0\n")
    tracemalloc.start()
    try:
        with pytest.warns(ReadWarning, match=rf"a line longer than {1 << 20} bytes.*offset {end}"):
            df = read(str(logdir), formats=["csv"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(df) == 13 and df["tag"].iloc[-1] == "late"
    assert peak < 4 * (CsvFileReader.chunk_size + CsvFileReader.max_unit), peak


def test_a_stray_quote_in_scalars_csv_is_damage_in_its_row_only(logdir: Path) -> None:
    path = only(logdir / "csv", "scalars")
    lines = path.read_bytes().split(b"\n")
    bad = 3
    assert b",loss," in lines[bad]
    lines[bad] = lines[bad].replace(b",loss,", b',"loss,')
    path.write_bytes(b"\n".join(lines))
    offset = sum(len(x) + 1 for x in lines[:bad])
    with pytest.warns(ReadWarning, match=rf"malformed CSV row.*offset {offset}"):
        assert counts(logdir, formats=["csv"]) == {"csv": 11}


def test_a_quoted_line_break_still_being_written_waits_for_its_end(tmp_path: Path) -> None:
    from tallyboard import SummaryWriter

    with SummaryWriter(str(tmp_path), sinks=["csv"]) as w:
        w.add_scalar("two\nlines", 1.0, 1)
    path = only(tmp_path, "scalars")
    whole = path.read_bytes()
    path.write_bytes(whole[: whole.index(b"\n", whole.index(b'"')) + 1])  # torn in its tag
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReadWarning)
        assert read(str(tmp_path)).empty
    path.write_bytes(whole)
    assert read(str(tmp_path))["tag"].tolist() == ["two\nlines"]


def test_a_png_decompression_bomb_is_not_decoded(tmp_path: Path) -> None:
    from tallyboard_image.encoded import from_row
    from tallyboard_image.pixels import MAX_PIXELS

    bomb = png_bomb(10_000, 10_000)  # 0.3 MB of PNG, 300 MB of pixels
    assert len(bomb) < 400_000
    with pytest.raises(ValueError, match=f"100000000 pixels, more than the {MAX_PIXELS}"):
        from_row({"tag": "bomb", "step": 1, "data": bomb})
    src = tmp_path / "src" / "run"
    src.mkdir(parents=True)
    (src / "events.out.tfevents.1.bomb").write_bytes(
        frame(scalar_event("loss", 1, 0.5)) + frame(image_event("bomb", 1, bomb, 10_000, 10_000))
    )
    code = (  # VmHWM: this process's peak RSS (ru_maxrss would carry the forking parent's over)
        "import sys; from tallyboard.__main__ import main;"
        "rc = main(sys.argv[1:]);"
        "print([int(x.split()[1]) // 1024 for x in open('/proc/self/status')"
        " if x.startswith('VmHWM')][0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "convert", str(tmp_path / "src"), str(tmp_path / "dst")]
        + ["--to", "mindspore"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "not converted: image 1" in out.stderr and "pixels" in out.stderr
    assert int(out.stdout.split()[-1]) < 300, out.stdout  # MiB; the bomb decoded was ~1000


def test_export_refuses_to_overwrite_a_file_of_the_log_dir_it_reads(logdir: Path) -> None:
    target = only(logdir / "csv", "scalars")
    before = target.read_bytes()
    out = cli("export", str(logdir), "-o", str(target), "--force")
    assert out.returncode == 1 and "refusing to overwrite" in out.stderr, out.stderr
    assert target.read_bytes() == before
    link = logdir.parent / "link.csv"  # outside the log dir, but one of its files
    os.symlink(target, link)
    out = cli("export", str(logdir), "-o", str(link), "--force")
    assert out.returncode == 1 and "refusing to overwrite" in out.stderr, out.stderr
    assert target.read_bytes() == before
    new = logdir / "export.csv"  # a new file inside it is fine
    out = cli("export", str(logdir), "-o", str(new))
    assert out.returncode == 0, out.stderr
    assert len(pd.read_csv(new)) == sum(BASE.values())


def test_plot_refuses_to_overwrite_a_file_of_the_log_dir_it_reads(logdir: Path) -> None:
    target = only(logdir / "tb", "tfevents")
    before = target.read_bytes()
    out = cli("plot", str(logdir), "--tag", "loss", "-o", str(target), "--force")
    assert out.returncode == 1 and "refusing to overwrite" in out.stderr, out.stderr
    assert target.read_bytes() == before


def test_a_fifo_in_a_listed_files_place_is_read_as_empty_never_waited_on(tmp_path: Path) -> None:
    """A FIFO put where a listed file was, between the listing and the read (no writer at its
    other end), reads as empty, whole or opened; a folder there raises, its descriptor closed."""
    fifo = tmp_path / "events.out.tfevents.1.fifo"
    os.mkfifo(fifo)
    (tmp_path / "folder").mkdir()
    code = (
        "import os, fsspec; from tallyboard.reading.fetch import LocalFiles;"
        "local = LocalFiles(fsspec.filesystem('file'));"
        f"print(repr(local.read_from({str(fifo)!r}, 0, 1 << 20)));"
        f"f = local.open({str(fifo)!r}); print(repr(f.read())); f.close();"
        "probe = lambda: (os.close(fd := os.open(os.devnull, os.O_RDONLY)), fd)[1];"
        "before = probe();"
        f"folder = {str(tmp_path / 'folder')!r}\n"
        "for call in (lambda: local.open(folder), lambda: local.read_from(folder, 0, 1 << 20)):\n"
        "    try:\n"
        "        call()\n"
        "    except IsADirectoryError:\n"
        "        print('IsADirectoryError')\n"
        "print(probe() - before)"  # the lowest free descriptor: the same unless one leaked
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )  # a wait fails here instead of hanging the suite
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n") == [
        "b''",
        "b''",
        "IsADirectoryError",
        "IsADirectoryError",
        "0",
        "",
    ]
