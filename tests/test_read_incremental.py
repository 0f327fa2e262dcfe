"""``tallyboard.Reader``: polls that read only what is new, on a local disk and an fsspec store.

Event files are built record by record here (framed ``Event`` protos), so a test can append to a
file, tear its last record and complete it later, or damage one; what a poll returns is checked
against what was written, and the bytes each poll reads are counted.
"""

from __future__ import annotations

import io
import os
import uuid
import warnings
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest
from conftest import load_run
from tallyboard import Reader, SummaryWriter, Update, read
from tallyboard.reading import fetch
from tallyboard.reading.pool import TASK_BYTES
from tallyboard.reading.runs import RunReader
from tallyboard.reading.tree import LocalTree
from tallyboard.reading.watch import Watch
from tallyboard.records.framing import frame
from tallyboard.warn import ReadWarning

pytest_plugins = ["tallyboard.testing"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The tests of local trees run twice: followed by the kernel's change events where they
    can be (Linux), and scanned by ``stat`` alone, as on other systems and network file
    systems. Those of stores (named so) run once."""
    name = metafunc.definition.name
    if "store" not in name and "s3" not in name:
        metafunc.parametrize("tree_mode", ["events", "stat"], indirect=True)


@pytest.fixture(autouse=True)
def tree_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    mode = str(getattr(request, "param", "events"))
    if mode == "stat":
        monkeypatch.setattr(Watch, "open", classmethod(lambda cls, root: None))
    return mode


def _event(tag: str, step: int, value: float) -> bytes:
    from tallyboard_tfevents import proto

    return frame(
        proto.Event(
            wall_time=1000.0 + step,
            step=step,
            summary=proto.Summary(value=[proto.SummaryValue(tag=tag, simple_value=value)]),
        ).SerializeToString()
    )


def _records(steps: range, tags: tuple[str, ...] = ("loss", "acc")) -> bytes:
    return b"".join(_event(t, s, s * 0.5 + k) for s in steps for k, t in enumerate(tags))


#: steps of a file that fills a task of its own (more bytes than one task reads)
FILLS_A_TASK = range(TASK_BYTES // len(_records(range(1))) + 1)


def _file(run: Path, name: str = "events.out.tfevents.1.host") -> Path:
    run.mkdir(parents=True, exist_ok=True)
    return run / name


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def _steps(update: Update, run: str, tag: str = "loss") -> list[int]:
    tags, steps, _, _ = update.batches[run].scalars()
    return steps[tags == tag].tolist()


class _Counting:
    """Counts the bytes read from local files (by ``open`` or read whole), by path, while
    installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: dict[str, int] = {}
        self.opened: list[str] = []
        counter = self

        class File(io.FileIO):
            def read(self, size: int | None = -1) -> bytes:
                data = super().read(size)
                counter.read[str(self.name)] = counter.read.get(str(self.name), 0) + len(data)
                return data

            def readinto(self, buffer: Any) -> int:
                n = super().readinto(buffer) or 0
                counter.read[str(self.name)] = counter.read.get(str(self.name), 0) + n
                return n

        def open_(fs: Any, path: str, mode: str = "rb", **kwargs: Any) -> Any:
            counter.opened.append(path)
            return File(path, "r")

        whole = fetch.LocalFiles.read_from

        def read_from(fs: Any, path: str, offset: int, limit: int) -> bytes | None:
            counter.opened.append(path)
            data = whole(fs, path, offset, limit)
            counter.read[path] = counter.read.get(path, 0) + len(data or b"")
            return data

        monkeypatch.setattr(fetch.LocalFiles, "open", open_)
        monkeypatch.setattr(fetch.LocalFiles, "read_from", read_from)

    def total(self) -> int:
        return sum(self.read.values())

    def clear(self) -> None:
        self.read.clear()
        del self.opened[:]


def test_a_poll_reads_only_the_bytes_appended_since_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = _Counting(monkeypatch)
    files = {run: _file(tmp_path / run) for run in ("a", "b", "c")}
    for path in files.values():
        path.write_bytes(_records(range(50)))
    reader = Reader(str(tmp_path), workers=1)
    first = reader.poll()
    assert first.added == ["a", "b", "c"] and first.removed == []
    assert all(_steps(first, run) == list(range(50)) for run in files)
    assert counting.total() == sum(p.stat().st_size for p in files.values())

    counting.clear()
    assert not reader.poll()  # nothing changed: no file opened at all
    assert counting.opened == [] and counting.total() == 0

    grown = _records(range(50, 60))
    _append(files["b"], grown)
    update = reader.poll()
    assert update.added == update.removed == [] and list(update.batches) == ["b"]
    assert _steps(update, "b") == list(range(50, 60))
    assert _steps(update, "b", "acc") == list(range(50, 60))
    assert counting.opened == [str(files["b"])] and counting.total() == len(grown)


def test_new_runs_and_new_files_of_a_run_are_found(tmp_path: Path) -> None:
    _file(tmp_path / "a").write_bytes(_records(range(5)))
    reader = Reader(str(tmp_path))
    assert reader.poll().added == ["a"]
    _file(tmp_path / "lr=0.1" / "seed0").write_bytes(_records(range(3)))  # a new nested run
    _file(tmp_path / "a", "events.out.tfevents.2.host").write_bytes(_records(range(5, 8)))
    update = reader.poll()
    assert update.added == ["lr=0.1/seed0"] and update.removed == []
    assert _steps(update, "a") == [5, 6, 7]
    assert _steps(update, "lr=0.1/seed0") == [0, 1, 2]
    assert reader.runs == ["a", "lr=0.1/seed0"]


def test_deleted_runs_are_removed_and_a_run_written_again_is_both(tmp_path: Path) -> None:
    import shutil

    for run in ("a", "b", "c"):
        _file(tmp_path / run).write_bytes(_records(range(5)))
    reader = Reader(str(tmp_path))
    reader.poll()
    shutil.rmtree(tmp_path / "a")
    update = reader.poll()
    assert update.removed == ["a"] and update.added == [] and not update.batches
    assert reader.runs == ["b", "c"]
    # run b deleted and written again (a new file name, as a new writer names it)
    shutil.rmtree(tmp_path / "b")
    _file(tmp_path / "b", "events.out.tfevents.9.host").write_bytes(_records(range(2)))
    update = reader.poll()
    assert update.removed == ["b"] and update.added == ["b"]
    assert _steps(update, "b") == [0, 1]
    # a file of a run deleted while another stays: the run stays
    _file(tmp_path / "c", "events.out.tfevents.2.host").write_bytes(_records(range(5, 6)))
    reader.poll()
    (tmp_path / "c" / "events.out.tfevents.1.host").unlink()
    update = reader.poll()
    assert not update and reader.runs == ["b", "c"]
    _file(tmp_path / "a").write_bytes(_records(range(1)))  # back again
    assert reader.poll().added == ["a"]


def test_a_file_replaced_by_a_rename_starts_its_run_over(tmp_path: Path) -> None:
    # an atomic rewrite, or rsync copying a grown file: a new file (inode) at the same path
    a, b = _file(tmp_path / "a"), _file(tmp_path / "b")
    a.write_bytes(_records(range(5)))
    b.write_bytes(_records(range(3)))
    reader = Reader(str(tmp_path), workers=1)
    reader.poll()
    other = _file(tmp_path / "a", "events.out.tfevents.2.host")
    other.write_bytes(_records(range(100, 102)))  # the run has a second file, kept as it is
    reader.poll()
    new = tmp_path / "a" / "rewritten.tmp"
    new.write_bytes(_records(range(10, 17)))  # other values, longer than what was read
    os.replace(new, a)
    _append(b, _records(range(3, 4)))
    update = reader.poll()
    assert update.removed == ["a"] and update.added == ["a"]
    assert _steps(update, "a") == list(range(10, 17)) + [100, 101]  # both files, from the start
    assert _steps(update, "b") == [3]
    assert not reader.poll()
    _append(a, _records(range(17, 18)))
    update = reader.poll()
    assert _steps(update, "a") == [17] and not update.added


def test_a_local_tree_tells_a_replaced_file_from_a_grown_one(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "x").write_bytes(b"1")
    (run / "y").write_bytes(b"1")
    tree = LocalTree(str(tmp_path))
    tree.scan()
    (run / "x").write_bytes(b"12")  # rewritten in place: the same file
    (tmp_path / "tmp").write_bytes(b"123")
    os.replace(tmp_path / "tmp", run / "y")
    tree.scan()
    assert tree.replaced == {str(run / "y")}
    assert sorted(tree.resized) == [str(run / "x"), str(run / "y")]
    (tmp_path / "tmp").write_bytes(b"9")
    os.replace(tmp_path / "tmp", run / "x")  # replaced while a file is added beside it
    (run / "z").write_bytes(b"1")
    tree.scan()
    assert tree.changed and tree.replaced == {str(run / "x")}
    tree.scan()
    assert not tree.replaced and not tree.resized


def test_a_torn_last_record_is_completed_at_a_later_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = _Counting(monkeypatch)
    path = _file(tmp_path / "run")
    whole = _records(range(10))
    last = _event("loss", 10, 5.0)
    path.write_bytes(whole + last[:-7])  # the writer is mid-record
    reader = Reader(str(tmp_path), workers=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a torn tail is no damage
        assert _steps(reader.poll(), "run") == list(range(10))
        assert not reader.poll()  # still torn, the size unchanged: not even opened
    counting.clear()
    _append(path, last[-7:])
    update = reader.poll()
    assert _steps(update, "run") == [10]
    assert update.batches["run"].scalars()[3].tolist() == [5.0]
    assert counting.total() == len(last)  # only the torn record's bytes, read again whole


def test_a_corrupt_record_is_warned_once_with_file_and_offset_and_skipped(tmp_path: Path) -> None:
    path = _file(tmp_path / "run")
    good, bad = _records(range(3)), bytearray(_event("loss", 3, 1.5))
    bad[-1] ^= 0xFF  # its data CRC
    path.write_bytes(good + bytes(bad))
    reader = Reader(str(tmp_path))
    with pytest.warns(ReadWarning) as caught:
        first = reader.poll()
    messages = [str(w.message) for w in caught if issubclass(w.category, ReadWarning)]
    assert messages == [f"{path}: bad data CRC; record skipped at offset {len(good)}"]
    assert _steps(first, "run") == [0, 1, 2]
    _append(path, _event("loss", 4, 2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the damaged record is not read (nor warned) again
        assert _steps(reader.poll(), "run") == [4]
        assert not reader.poll()


def test_a_bad_length_stops_the_file_once_and_a_shrunk_file_is_reported(tmp_path: Path) -> None:
    a, b = _file(tmp_path / "a"), _file(tmp_path / "b")
    a.write_bytes(_records(range(2)) + b"\xff" * 40)
    b.write_bytes(_records(range(4)))
    reader = Reader(str(tmp_path))
    with pytest.warns(ReadWarning, match="bad length CRC"):
        reader.poll()
    _append(a, _records(range(2, 4)))
    b.write_bytes(_records(range(1)))  # rewritten shorter
    with pytest.warns(ReadWarning, match=f"{b}: the file shrank to .* offset") as caught:
        update = reader.poll()
    assert not update.batches
    assert not [w for w in caught if "bad length" in str(w.message)]  # warned once only
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _append(b, _records(range(4, 9)))
        assert not reader.poll()


def test_polls_on_an_fsspec_store_fetch_only_what_grew(monkeypatch: pytest.MonkeyPatch) -> None:
    root = f"memory://incremental-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    fetched: list[tuple[str, int, int]] = []
    real_fetch = fetch.fetch

    def counting(fs_: Any, path: str, offset: int = 0, *args: Any) -> bytes:
        data = real_fetch(fs_, path, offset, *args)
        fetched.append((path.rsplit("/", 2)[-2], offset, len(data)))
        return data

    monkeypatch.setattr(fetch, "fetch", counting)
    for run in ("a", "b"):
        fs.pipe(f"{root}/{run}/events.out.tfevents.1.host", _records(range(20)))
    reader = Reader(root)
    first = reader.poll()
    assert first.added == ["a", "b"] and _steps(first, "b") == list(range(20))
    size = len(_records(range(20)))
    assert sorted(fetched) == [("a", 0, size), ("b", 0, size)]
    del fetched[:]
    assert not reader.poll() and fetched == []
    more = _records(range(20, 25))
    fs.pipe(f"{root}/b/events.out.tfevents.1.host", _records(range(20)) + more)  # grown
    fs.pipe(f"{root}/c/events.out.tfevents.1.host", _records(range(3)))
    update = reader.poll()
    assert update.added == ["c"] and _steps(update, "b") == list(range(20, 25))
    assert sorted(fetched) == [("b", size, len(more)), ("c", 0, len(_records(range(3))))]
    fs.rm(f"{root}/a", recursive=True)
    assert reader.poll().removed == ["a"]
    fs.rm(root, recursive=True)


def test_kinds_and_tags_keep_only_what_was_asked(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path / "run")) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_scalar("acc", step / 3, step)
            w.add_histogram("weights", np.arange(10.0) + step, step)
            w.add_text("note", f"step {step}", step)
    every = Reader(str(tmp_path)).poll().batches["run"]
    assert sorted(every.rows) == ["histogram", "text"] and len(every.scalars()[0]) == 6
    some = Reader(str(tmp_path), kinds=["histogram"]).poll().batches["run"]
    assert list(some.rows) == ["histogram"] and len(some.scalars()[0]) == 0
    loss = Reader(str(tmp_path), kinds="scalar", tags="lo*").poll()
    assert (
        not loss.batches["run"].rows and loss.batches["run"].scalars()[0].tolist() == ["loss"] * 3
    )
    table = loss.table()
    assert table["step"].tolist() == [0, 1, 2] and table.equals(loss.table())  # asked twice
    pd_read = read(str(tmp_path), tags="loss")
    assert table.equals(pd_read)
    hist = Reader(str(tmp_path)).poll().table("histogram")
    acc = load_run(tmp_path / "run")
    assert hist["step"].tolist() == [e.step for e in acc.Histograms("weights")]


def test_the_first_poll_gives_what_read_gives(tmp_path: Path) -> None:
    for seed in range(3):
        with SummaryWriter(str(tmp_path / f"seed{seed}")) as w:
            for step in range(40):
                w.add_scalar("loss", 1.0 / (step + 1) + seed, step)
                w.add_scalar("lr", 0.1, step)
    for table in ("pandas", "arrow"):
        got = Reader(str(tmp_path)).poll().table(table=table)
        assert got.equals(read(str(tmp_path), table=table))


def test_a_folder_changed_within_the_same_clock_tick_is_listed_again(tmp_path: Path) -> None:
    """Coarse file system clocks: a file added in the tick the folder was listed in can leave
    the folder's mtime as it was. A folder that recent is listed again at the next scan; an
    older one is only stat-ed."""
    (tmp_path / "run").mkdir()
    first = tmp_path / "run" / "events.out.tfevents.1.host"
    first.write_bytes(b"x")
    tree = LocalTree(str(tmp_path), events=False)
    assert list(tree.scan()) == [str(first)]
    mtime = os.stat(tmp_path / "run").st_mtime_ns
    second = tmp_path / "run" / "events.out.tfevents.2.host"
    second.write_bytes(b"yy")
    os.utime(tmp_path / "run", ns=(mtime, mtime))  # as if stamped in the same tick
    assert sorted(tree.scan()) == [str(first), str(second)]  # recent: listed again
    # an old folder, unchanged, is not listed again: its files are stat-ed
    old = mtime - 10 * tree.racy_ns
    os.utime(tmp_path / "run", ns=(old, old))
    os.utime(tmp_path, ns=(old, old))
    tree = LocalTree(str(tmp_path), events=False)
    tree.scan()
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        listed.append(str(path))
        return real_scandir(path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "scandir", scandir)
        _append(second, b"zzz")
        assert tree.scan()[str(second)] == (True, 5)
        assert listed == []
        third = tmp_path / "run" / "events.out.tfevents.3.host"
        third.write_bytes(b"")
        assert str(third) in tree.scan() and listed == [str(tmp_path / "run")]


def _delete_after_first_file(path: Path) -> Any:
    """A progress callback that deletes ``path`` once the first task of a poll is read: the
    file was listed, and is gone when its turn comes."""

    def progress(done: int) -> None:
        if path.exists():
            path.unlink()

    return progress


def test_a_file_gone_between_listing_and_reading_fails_alone_and_the_poll_goes_on(
    tmp_path: Path,
) -> None:
    # a fills a task of its own; b and c are read together after it
    _file(tmp_path / "a").write_bytes(_records(FILLS_A_TASK))
    b = _file(tmp_path / "b")
    b.write_bytes(_records(range(5)))
    _file(tmp_path / "c").write_bytes(_records(range(7)))
    reader = Reader(str(tmp_path), workers=1)
    with pytest.warns(ReadWarning, match=f"{b}: could not be read .*read again next time"):
        update = reader.poll(progress=_delete_after_first_file(b))
    assert update.failed == [str(b)]
    assert sorted(update.batches) == ["a", "c"]
    assert _steps(update, "a") == list(FILLS_A_TASK) and _steps(update, "c") == list(range(7))
    update = reader.poll()  # b is gone for good: its run goes
    assert update.removed == ["b"] and not update.batches and not update.failed


def test_a_file_that_failed_is_read_whole_at_the_next_poll(tmp_path: Path) -> None:
    _file(tmp_path / "a").write_bytes(_records(FILLS_A_TASK))
    b = _file(tmp_path / "b")
    c = _file(tmp_path / "c")
    c.write_bytes(_records(range(3)))
    b.write_bytes(_records(range(5)))
    reader = Reader(str(tmp_path), workers=1)
    with pytest.warns(ReadWarning, match="could not be read"):
        first = reader.poll(progress=_delete_after_first_file(b))
    assert "b" not in first.batches and _steps(first, "c") == [0, 1, 2]
    b.write_bytes(_records(range(5)))  # back (a copy restored, a mount that came back)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        update = reader.poll()
    assert list(update.batches) == ["b"] and _steps(update, "b") == [0, 1, 2, 3, 4]
    assert not update.failed and not reader.poll()


def test_a_one_time_read_of_a_file_that_vanished_raises(tmp_path: Path) -> None:
    _file(tmp_path / "a").write_bytes(_records(FILLS_A_TASK))
    b = _file(tmp_path / "b")
    b.write_bytes(_records(range(5)))
    once = RunReader(str(tmp_path), keep=False)  # what read() and ls do: nothing kept to retry
    with pytest.raises(FileNotFoundError):
        once.read(workers=1, progress=_delete_after_first_file(b))


def test_a_one_time_reader_lists_once(tmp_path: Path) -> None:
    _file(tmp_path / "a").write_bytes(_records(range(3)))
    once = RunReader(str(tmp_path), keep=False)
    opened, gone = once.refresh()
    assert len(opened) == 1 and gone == []
    _file(tmp_path / "b").write_bytes(_records(range(3)))
    assert once.refresh() == ([], [])  # what it listed is what read() and ls read, once
    assert [run for run, _ in once.read()] == ["a"]


def test_a_pool_read_keeps_offsets_for_the_next_poll(tmp_path: Path) -> None:
    for run in ("a", "b", "c", "d"):
        _file(tmp_path / run).write_bytes(_records(range(30)))
    reader = Reader(str(tmp_path), workers=2)
    assert sum(len(b.scalars()[0]) for b in reader.poll().batches.values()) == 240
    _append(_file(tmp_path / "c"), _records(range(30, 31)))
    update = reader.poll()
    assert list(update.batches) == ["c"] and _steps(update, "c") == [30]


def test_bad_arguments_raise_naming_them(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="logdir"):
        Reader(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a directory"):
        Reader(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=r"kinds: unknown kind\(s\) \['nope'\]"):
        Reader(str(tmp_path), kinds=["scalar", "nope"])
    with pytest.raises(TypeError, match="tags must be"):
        Reader(str(tmp_path), tags=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="workers"):
        Reader(str(tmp_path), workers=0)
    with pytest.raises(ValueError, match="table must be"):
        Update().table(table="csv")


def test_close_forgets_everything(tmp_path: Path) -> None:
    _file(tmp_path / "a").write_bytes(_records(range(4)))
    with Reader(str(tmp_path)) as reader:
        reader.poll()
        reader.close()
        again = reader.poll()
    assert again.added == ["a"] and _steps(again, "a") == [0, 1, 2, 3]


def test_iter_poll_reads_a_big_file_in_windows_and_a_caller_that_stops_loses_nothing(
    tmp_path: Path,
) -> None:
    from tallyboard.plugin.readers import ChunkedFileReader

    path = _file(tmp_path / "big")
    path.write_bytes(_records(range(3000)))  # about 150 KB
    _file(tmp_path / "small").write_bytes(_records(range(5)))
    reader = Reader(str(tmp_path), workers=1)
    window = 20_000
    chunk = ChunkedFileReader.chunk_size
    ChunkedFileReader.chunk_size = 8192  # windows of whole chunks, so the bound is tight
    try:
        got = list(reader.iter_poll(max_bytes=window))
        assert reader.last_update.added == ["big", "small"]
        big = [b for run, b in got if run == "big"]
        assert len(big) >= path.stat().st_size // (window + 8192)
        steps = np.concatenate([b.scalars()[1][b.scalars()[0] == "loss"] for b in big])
        assert steps.tolist() == list(range(3000))
        # both grown: a caller that stops after the first batch loses nothing, reads nothing twice
        _append(path, _records(range(3000, 4000)))
        _append(_file(tmp_path / "small"), _records(range(5, 9)))
        first = next(iter(reader.iter_poll(max_bytes=window)))
        rest = reader.poll()
    finally:
        ChunkedFileReader.chunk_size = chunk
    assert first[0] == "big"
    tags, steps_first, _, _ = first[1].scalars()
    tags_rest, steps_rest, _, _ = rest.batches["big"].scalars()
    loss = np.concatenate([steps_first[tags == "loss"], steps_rest[tags_rest == "loss"]])
    assert loss.tolist() == list(range(3000, 4000))
    assert _steps(rest, "small") == [5, 6, 7, 8]
    with pytest.raises(ValueError, match="max_bytes"):
        next(reader.iter_poll(max_bytes=0))


def test_a_store_that_fails_one_fetch_loses_that_file_this_poll_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = f"memory://incremental-fail-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    for run in ("a", "b"):
        fs.pipe(f"{root}/{run}/events.out.tfevents.1.host", _records(range(10)))
    real_fetch = fetch.fetch
    refuse = {"b"}

    def flaky(fs_: Any, path: str, *args: Any) -> bytes:
        if path.rsplit("/", 2)[-2] in refuse:
            raise OSError(f"{path}: the store is down")
        return real_fetch(fs_, path, *args)

    monkeypatch.setattr(fetch, "fetch", flaky)
    reader = Reader(root)
    with pytest.warns(ReadWarning, match=r"b/events.out.tfevents.1.host: could not be fetched"):
        first = reader.poll()
    assert list(first.batches) == ["a"] and first.failed == [
        f"/{root[len('memory://') :]}/b/events.out.tfevents.1.host"
    ]
    refuse.clear()
    again = reader.poll()
    assert list(again.batches) == ["b"] and _steps(again, "b") == list(range(10))
    assert not again.failed
    fs.rm(root, recursive=True)


def test_a_store_that_does_not_answer_fails_the_poll_within_the_deadline() -> None:
    import threading
    import time

    root = f"memory://incremental-stall-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    fs.pipe(f"{root}/a/events.out.tfevents.1.host", _records(range(3)))
    reader = Reader(root, deadline=0.3)
    assert reader.poll().added == ["a"]
    stalled = threading.Event()
    real_find = type(fs).find

    def stuck(self: Any, *args: Any, **kwargs: Any) -> Any:
        stalled.wait(30)
        return real_find(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(fs), "find", stuck)
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"listing memory://.*incremental-stall.* 0\.3 s"):
            reader.poll()
        assert time.monotonic() - started < 5
        stalled.set()
    with pytest.raises(ValueError, match="deadline"):
        Reader(root, deadline=0)
    fs.rm(root, recursive=True)


def test_an_object_another_client_adds_to_an_s3_run_is_read_at_the_next_poll(
    tmp_path: Path,
) -> None:
    """Objects another client (boto3 here) puts on S3, in a run folder already listed (and in
    s3fs's cache of that folder) and in a new run, are listed and fetched at the next poll."""
    import boto3
    from tcp_proxy import Forwarder, s3fs_through

    with pytest.MonkeyPatch.context() as mp, s3fs_through(Forwarder, mp, "polls") as (fs, proxy):
        fs.pipe("polls/logs/r0/events.out.tfevents.1.host", _records(range(5)))
        reader = Reader("s3://polls/logs")
        assert _steps(reader.poll(), "r0") == list(range(5))
        fs.ls("polls/logs/r0")  # as a writer using the same s3fs instance would: now cached
        client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{proxy.port}")
        client.put_object(
            Bucket="polls", Key="logs/r0/events.out.tfevents.2.host", Body=_records(range(5, 9))
        )
        client.put_object(
            Bucket="polls", Key="logs/r1/events.out.tfevents.1.host", Body=_records(range(2))
        )
        update = reader.poll()
        assert update.added == ["r1"] and _steps(update, "r0") == [5, 6, 7, 8]


def test_an_iter_poll_stopped_early_leaves_what_it_did_not_hand_out_for_the_next_poll(
    tmp_path: Path,
) -> None:
    """A reader that keeps state besides an offset (the projector config's set of embeddings
    seen) is read through a copy: an embedding of a run never handed out is not marked seen."""
    from tallyboard_embedding.methods import CONFIG_NAME

    def config(run: str, names: list[str]) -> None:
        (tmp_path / run).mkdir(exist_ok=True)
        (tmp_path / run / "t.tsv").write_text("1\t2\n3\t4\n")
        lines = [f'embeddings {{ tensor_name: "{n}" tensor_path: "t.tsv" }}\n' for n in names]
        (tmp_path / run / CONFIG_NAME).write_text("".join(lines))

    def embeddings(batches: dict[str, Any]) -> dict[str, list[str]]:
        return {run: [r["tag"] for r in b.rows.get("embedding", [])] for run, b in batches.items()}

    for run in "ab":
        config(run, ["e:0"])
    reader = Reader(tmp_path, workers=1)
    assert embeddings(reader.poll().batches) == {"a": ["e"], "b": ["e"]}
    for run in "ab":
        config(run, ["e:0", "f:1"])
    polling = reader.iter_poll()
    taken, batch = next(polling)
    assert embeddings({taken: batch}) == {taken: ["f"]}
    polling.close()  # stopped before the other run was handed out
    other = "b" if taken == "a" else "a"
    assert embeddings(reader.poll().batches) == {other: ["f"]}
