"""Steps of float scalars only are queued as rows and framed in batches on the writer thread.

Files are read back with the independent ``tests/mindspore_reader.py`` (protobuf classes built
from MindSpore's field numbers; every record's CRCs and canonical encoding checked): batched
records hold the same Events, in call order, as the per-record path writes.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import time
import warnings
from itertools import chain
from pathlib import Path
from typing import Any

import mindspore_reader as msr
import numpy as np
import pytest
from tallyboard import SummaryRecord
from tallyboard.records.framing import frame
from tallyboard.records.recordfile import row_key
from tallyboard.records.rows import QueuedRows
from tallyboard_mindspore.encoders import MIN_SCALAR_BATCH, encode_scalar_rows, scalar_event
from tallyboard_mindspore.wire import version_event

STEPS = [0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**35, 2**63 - 1, -1, -(2**63)]
TAGS = ["loss", "t" * 150, "acc/é"]
VALUES = [0.5, 1 / 3, -2.5, 1e39, -1e39, float("inf"), float("nan"), 1e-45, 0.0]


def only(path: Path) -> Path:
    (found,) = [p for p in path.iterdir() if p.name.endswith("_MS")]
    return found


def f32(value: float) -> np.float32:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float32 overflow of 1e39
        return np.float32(value)


def rows_of(layout: str, n: int, seed: int) -> list[tuple[Any, int, float, Any]]:
    """``(tags, step, wall_time, values)`` rows of one of several layouts."""
    rng = np.random.default_rng(seed)
    out: list[tuple[Any, int, float, Any]] = []
    for i in range(n):
        wall = 1.7e9 + float(rng.random()) * 1e6
        value = float(rng.choice(VALUES)) if i % 3 else float(rng.normal())
        if layout == "one tag":
            out.append(("loss", 1000 + i, wall, value))
        elif layout == "steps change width":
            out.append(("loss", 16300 + i, wall, value))
        elif layout == "several scalars a step":
            out.append((("loss", "lr", "loss"), i, wall, (value, 0.25 * i, -value)))
        else:  # every tag, step width and row shape mixed
            step = int(rng.choice(STEPS))
            if i % 4 == 0:
                out.append(((TAGS[i % 3], "lr"), step, wall, (value, float(i))))
            else:
                out.append((TAGS[int(rng.integers(3))], step, wall, value))
    return out


def parse(data: bytes, tmp_path: Path) -> list[Any]:
    path = tmp_path / "records"
    path.write_bytes(data)
    return msr.read_events(path)


def as_tuple(x: Any) -> tuple[Any, ...]:
    return x if type(x) is tuple else (x,)


@pytest.mark.parametrize(
    "layout", ["one tag", "steps change width", "several scalars a step", "mixed"]
)
@pytest.mark.parametrize("n", [1, MIN_SCALAR_BATCH - 1, MIN_SCALAR_BATCH, 1000, 3001])
@pytest.mark.parametrize("queued", [False, True], ids=["tuples", "queued rows"])
def test_batched_rows_are_the_events_of_the_per_record_path_in_call_order(
    tmp_path: Path, layout: str, n: int, queued: bool
) -> None:
    rows = rows_of(layout, n, seed=n)
    key = row_key(encode_scalar_rows)
    batch = [(key, *row) for row in rows]
    data = encode_scalar_rows(QueuedRows(list(chain(*batch))) if queued else batch)
    assert data == b"".join(frame(scalar_event(*row)) for row in rows)
    events = parse(data, tmp_path)
    assert len(events) == n
    for event, (tags, step, wall, values) in zip(events, rows):
        assert (event.wall_time, event.step) == (wall, step)
        assert [v.tag for v in event.summary.value] == list(as_tuple(tags))
        got = np.array([v.scalar_value for v in event.summary.value], dtype=np.float32)
        expected = np.array([f32(v) for v in as_tuple(values)], dtype=np.float32)
        np.testing.assert_array_equal(got, expected)


def test_many_steps_of_scalars_reach_the_file_in_order_with_their_values(logdir: Path) -> None:
    rng = np.random.default_rng(1)
    expected = []
    start = time.time()
    with SummaryRecord(logdir) as record:
        for i in range(4000):
            step = i * 7  # the step's varint grows from one to three bytes
            value = float(rng.normal())
            record.add_value("scalar", "loss", np.float32(value))
            if i % 5 == 0:  # several scalars in some steps: one Event, in add order
                record.add_value("scalar", "lr", np.float64(i))
                expected.append((step, ["loss", "lr"], [f32(value), f32(i)]))
            else:
                expected.append((step, ["loss"], [f32(value)]))
            record.record(step)
    end = time.time()
    events = [e for e in msr.read_events(only(logdir)) if e.HasField("summary")]
    got = [
        (e.step, [v.tag for v in e.summary.value], [f32(v.scalar_value) for v in e.summary.value])
        for e in events
    ]
    assert got == expected
    walls = [e.wall_time for e in events]
    assert walls == sorted(walls) and start <= walls[0] and walls[-1] <= end


def test_scalar_steps_between_image_and_histogram_steps_keep_call_order(logdir: Path) -> None:
    rng = np.random.default_rng(2)
    expected = []
    with SummaryRecord(logdir) as record:
        for step in range(300):
            if step % 7 == 3:
                record.add_value("image", "im", rng.random((1, 3, 8, 8), dtype=np.float32))
                record.add_value("scalar", "loss", np.float32(step))
                expected += [(step, "im", "image"), (step, "loss", "scalar_value")]
            elif step % 11 == 5:
                record.add_value("scalar", "loss", np.float32(step))
                record.add_value("histogram", "h", rng.normal(size=50))
                expected += [(step, "loss", "scalar_value"), (step, "h", "histogram")]
            else:
                record.add_value("scalar", "loss", np.float32(step))
                expected.append((step, "loss", "scalar_value"))
            record.record(step)
    got = msr.values(only(logdir))
    assert [(step, tag, kind) for step, tag, kind, _ in got] == expected
    scalars = [(step, value) for step, _, kind, value in got if kind == "scalar_value"]
    assert scalars == [(step, float(step)) for step in range(300)]


def test_the_same_scalar_twice_in_a_step_is_written_twice_with_mindspores_warning(
    logdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with SummaryRecord(logdir) as record, caplog.at_level(logging.WARNING):
        record.add_value("scalar", "loss", np.float32(1))
        record.add_value("scalar", "loss", np.float32(2))
        record.record(4)
    assert [(s, t, v) for s, t, _, v in msr.values(only(logdir))] == [
        (4, "loss", 1.0),
        (4, "loss", 2.0),
    ]
    assert "'loss/scalar' has duplicate values" in caplog.text


def test_flush_writes_every_queued_scalar_step(logdir: Path) -> None:
    record = SummaryRecord(logdir)
    try:
        for step in range(2500):
            record.add_value("scalar", "loss", float(step))
            record.record(step)
        record.flush()
        steps = [e.step for e in msr.read_events(only(logdir)) if e.HasField("summary")]
        assert steps == list(range(2500))
    finally:
        record.close()


def test_max_file_size_still_stops_the_file_at_the_first_step_that_does_not_fit(
    logdir: Path,
) -> None:
    version = len(version_event(0.0)) + 16  # record sizes as framed
    one_step = len(scalar_event("loss", 0, 0.0, 0.0)) + 16
    with SummaryRecord(logdir, max_file_size=version + 3 * one_step + one_step // 2) as record:
        for step in range(10):
            record.add_value("scalar", "loss", float(step))
            record.record(step)
    path = only(logdir)
    events = msr.read_events(path)
    assert [e.step for e in events if e.HasField("summary")] == [0, 1, 2]
    assert path.stat().st_size == version + 3 * one_step


WRITE_ERROR = """
import resource, signal, sys
from tallyboard import SummaryRecord
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
record = SummaryRecord(sys.argv[1], raise_exception=sys.argv[2] == "1")
try:
    for step in range(1000):  # about 57 bytes a step: the limit falls within a batch
        record.add_value("scalar", "loss", float(step))
        record.record(step)
    record.flush()
    record.add_value("scalar", "loss", 1.0)
    record.record(1000)
    record.close()
except OSError as exc:
    print("raised", type(exc).__name__)
else:
    print("no error")
"""


@pytest.mark.parametrize(("raise_exception", "expected"), [("1", "raised"), ("0", "no error")])
def test_a_write_error_of_batched_steps_follows_raise_exception(
    logdir: Path, raise_exception: str, expected: str
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", WRITE_ERROR, str(logdir), raise_exception],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == (
        ["raised", "OSError"] if expected == "raised" else ["no", "error"]
    )
    if expected == "no error":
        assert "failed" in out.stderr  # logged, not raised
    # what reached the file is well framed: the first steps, in order, none torn
    steps = [e.step for e in msr.read_events(only(logdir)) if e.HasField("summary")]
    assert 0 < len(steps) < 1000 and steps == list(range(len(steps)))


def test_forked_child_neither_writes_nor_duplicates_the_parents_queued_steps(
    tmp_path: Path,
) -> None:
    parent, child = tmp_path / "parent", tmp_path / "child"
    code = f"""
        import os
        from tallyboard import SummaryRecord
        record = SummaryRecord({str(parent)!r})
        for step in range(50):
            record.add_value("scalar", "loss", float(step))
            record.record(step)
        pid = os.fork()
        if pid == 0:
            assert record.closed and record.record(99) is False
            with SummaryRecord({str(child)!r}) as mine:
                for step in range(20):
                    mine.add_value("scalar", "child", float(step))
                    mine.record(step)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        for step in range(50, 100):
            record.add_value("scalar", "loss", float(step))
            record.record(step)
        record.close()
    """
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert [(s, t, v) for s, t, _, v in msr.values(only(parent))] == [
        (s, "loss", float(s)) for s in range(100)
    ]
    assert [(s, t, v) for s, t, _, v in msr.values(only(child))] == [
        (s, "child", float(s)) for s in range(20)
    ]


def test_exit_without_close_writes_the_queued_steps(logdir: Path) -> None:
    code = (
        "import sys\nfrom tallyboard import SummaryRecord\nr = SummaryRecord(sys.argv[1])\n"
        "for s in range(3000):\n    r.add_value('scalar', 'loss', float(s))\n    r.record(s)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(logdir)], check=True, timeout=60)
    steps = [e.step for e in msr.read_events(only(logdir)) if e.HasField("summary")]
    assert steps == list(range(3000))


@pytest.mark.parametrize("raise_exception", [True, False])
def test_a_nearly_full_disk_stops_batched_steps_as_mindspore_does(
    logdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    raise_exception: bool,
) -> None:
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    # room for the version event (51 bytes framed, 32 times over), not for a step of scalars
    free = 51 * 32 + 100
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - free, free))
    record = SummaryRecord(logdir, raise_exception=raise_exception)
    record.add_value("scalar", "loss", 1.0)
    with caplog.at_level(logging.ERROR):
        if raise_exception:
            with pytest.raises(RuntimeError, match="disk space may be soon exhausted"):
                record.record(1)
        else:
            assert record.record(1) is True
    assert "disk space may be soon exhausted" in caplog.text
    monkeypatch.undo()
    record.add_value("scalar", "loss", 2.0)
    record.record(2)  # the file is stopped for good: nothing more is written
    record.close()
    assert [e.HasField("version") for e in msr.read_events(only(logdir))] == [True]
