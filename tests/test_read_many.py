"""Many event files decoded in one pass (``EventFileReader.read_many``) give, file by file, what
reading each alone gives: the same values in the same order, the same warnings (file and offset),
the same offsets left for the next read. Checked over the world fixtures (TF1, TF2, Keras, torch,
tensorboardX) and over hand-built files: torn tails, damaged records, scalars decoded both ways
in one file, steps whose varint is longer than the fast path reads, layouts that change from
file to file, and files too large to be read whole.
"""

from __future__ import annotations

import shutil
import struct
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tallyboard.plugin.readers import Batch
from tallyboard.reading.runs import RunReader
from tallyboard.records.framing import frame

WORLD = Path(__file__).parent / "fixtures" / "world"


def _event(tag: str, step: int, value: float, wall: float | None = None) -> bytes:
    from tallyboard_tfevents import proto

    return frame(
        proto.Event(
            wall_time=1000.0 + step if wall is None else wall,
            step=step,
            summary=proto.Summary(value=[proto.SummaryValue(tag=tag, simple_value=value)]),
        ).SerializeToString()
    )


def _tensor_scalar(tag: str, step: int, value: float) -> bytes:
    """A TF2-style scalar: a float tensor with the scalars plugin's metadata (no simple_value)."""
    from tallyboard_tfevents import proto

    tensor = proto.TensorProto(dtype=1, tensor_shape=proto.TensorShapeProto())
    tensor.float_val.append(value)
    value_ = proto.SummaryValue(tag=tag, tensor=tensor, metadata=proto.metadata("scalars"))
    return frame(
        proto.Event(
            wall_time=2000.0 + step, step=step, summary=proto.Summary(value=[value_])
        ).SerializeToString()
    )


def _header() -> bytes:
    from tallyboard_tfevents import proto

    return frame(proto.Event(wall_time=999.0, file_version="brain.Event:2").SerializeToString())


def _sweep_of_files(root: Path) -> None:
    """Files of many shapes, one run each."""
    tags3 = ("loss", "accuracy", "lr")
    plain = _header() + b"".join(
        _event(t, s, s * 0.25 + k) for s in range(200) for k, t in enumerate(tags3)
    )
    runs: dict[str, bytes] = {
        "a": plain,
        "b": plain,  # the same layout again: bounds taken from the guess
        "c": _header() + b"".join(_event(t, s, -s) for s in range(90) for t in ("x", "yy")),
        "d": b"",
        "e": _header(),
        "f": plain[: len(plain) - 5],  # torn last record
        "g": plain[:1000] + b"\x00" * 40 + plain[1000:1500],  # bad length CRC
        "h": _header()
        + b"".join(
            _event("loss", s, s) + _tensor_scalar("t2", s, -s) + _event("acc", s, 2 * s)
            for s in range(40)
        ),  # scalars decoded both ways, interleaved
        "i": _header()
        + _event("big", 2**60, 1.0)
        + _event("neg", -5, 2.0)
        + b"".join(_event("loss", s, s) for s in range(30)),
        "j": _header() + b"".join(_event(t, s, s) for s in range(5) for t in ("a", "b")),
        "k": plain[:-1] + bytes([plain[-1] ^ 1]),  # bad data CRC on the last record
        "l": plain + _header() + plain[len(_header()) :],  # a second header mid-file
        "m": _header()
        + b"".join(_event(f"t{s % 40}", s, s) for s in range(400)),  # many tags, cycle of 40
    }
    for name, data in runs.items():
        (root / name).mkdir(parents=True)
        (root / name / "events.out.tfevents.1.host").write_bytes(data)
    with_hist = root / "n"
    from tallyboard import SummaryWriter

    with SummaryWriter(str(with_hist)) as w:
        for s in range(20):
            w.add_scalar("loss", 1.0 / (s + 1), s)
            w.add_histogram("w", np.arange(8.0) + s, s)
            w.add_text("note", f"step {s}", s)


def _readers(root: Path) -> list[Any]:
    from tallyboard_tfevents.reader import EventFileReader

    readers = [r for _, r in RunReader(str(root), formats="tfevents").discover()]
    assert readers and all(type(r) is EventFileReader for r in readers)
    return readers


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if hasattr(a, "__dataclass_fields__"):  # a payload a decoder gave (Kind.to_row), by field
        fields = a.__dataclass_fields__
        return type(a) is type(b) and all(_same_value(getattr(a, f), getattr(b, f)) for f in fields)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and a != a:
        return bool(b != b)
    return bool(a == b)


def _assert_same(got: Batch, want: Batch, where: str) -> None:
    for x, y, what in zip(got.scalars(), want.scalars(), ("tag", "step", "wall_time", "value")):
        assert x.dtype == y.dtype, (where, what)
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), (where, what, x, y)
    assert _same_value(got.rows, want.rows), where
    assert got.undecoded == want.undecoded, where


def _read_both(root: Path) -> tuple[list[Any], list[Any], list[Batch], list[Batch], Any, Any]:
    from tallyboard_tfevents.reader import EventFileReader

    one, many = _readers(root), _readers(root)
    with warnings.catch_warnings(record=True) as alone:
        warnings.simplefilter("always")
        want = [r.read_new() for r in one]
    with warnings.catch_warnings(record=True) as together:
        warnings.simplefilter("always")
        got = EventFileReader.read_many(many).split()
    return one, many, want, got, alone, together


def _check(root: Path) -> tuple[list[Any], list[Any]]:
    one, many, want, got, alone, together = _read_both(root)
    assert [str(w.message) for w in together] == [str(w.message) for w in alone]
    for r1, r2, b1, b2 in zip(one, many, want, got):
        _assert_same(b2, b1, r1.path)
        assert (r2.offset, r2.dead) == (r1.offset, r1.dead), r1.path
    return one, many


def test_the_world_fixtures_read_together_as_each_alone() -> None:
    _check(WORLD)


def test_hand_built_files_read_together_as_each_alone(tmp_path: Path) -> None:
    _sweep_of_files(tmp_path)
    one, many, want, got, alone, together = _read_both(tmp_path)
    messages = [str(w.message) for w in alone]
    assert any("g/events" in m and "bad length CRC" in m for m in messages)
    assert any("k/events" in m and "bad data CRC" in m for m in messages)
    _check(tmp_path)


def test_files_grown_after_a_read_together_read_on_from_their_offsets(tmp_path: Path) -> None:
    from tallyboard_tfevents.reader import EventFileReader

    _sweep_of_files(tmp_path)
    one, many = _check(tmp_path)
    for run in ("a", "c", "f", "h", "i"):
        with open(tmp_path / run / "events.out.tfevents.1.host", "ab") as fh:
            fh.write(b"".join(_event("loss", 5000 + s, s) for s in range(20)))
    with warnings.catch_warnings(record=True) as alone:
        warnings.simplefilter("always")
        want = [r.read_new() for r in one]
    with warnings.catch_warnings(record=True) as together:
        warnings.simplefilter("always")
        got = EventFileReader.read_many(many).split()
    assert [str(w.message) for w in together] == [str(w.message) for w in alone]
    for r1, r2, b1, b2 in zip(one, many, want, got):
        _assert_same(b2, b1, r1.path)
        assert r2.offset == r1.offset
    assert got[0].scalars()[1].tolist() == list(range(5000, 5020))


def test_a_file_larger_than_the_whole_read_limit_is_read_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tallyboard_tfevents.reader import EventFileReader

    _sweep_of_files(tmp_path)
    monkeypatch.setattr(EventFileReader, "whole_limit", 4000)
    monkeypatch.setattr(EventFileReader, "chunk_size", 3000)
    _check(tmp_path)


def test_read_gives_the_same_table_through_the_pool_and_here(tmp_path: Path) -> None:
    """``read`` groups small files into tasks: the table is the one file-by-file reading gave."""
    from tallyboard import read

    _sweep_of_files(tmp_path)
    for run in "abcdefg":  # more runs of the same layout, so tasks hold several files
        for copy in range(3):
            shutil.copytree(tmp_path / run, tmp_path / f"{run}{copy}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        here = read(str(tmp_path), workers=1)
        pooled = read(str(tmp_path), workers=2)
        expected = [
            (run, b)
            for run, b in ((run, r.read_new()) for run, r in RunReader(str(tmp_path)).discover())
        ]
    assert here.equals(pooled)
    tags, steps = [], []
    for _, b in expected:
        t, s, _, _ = b.scalars()
        tags.extend(t.tolist())
        steps.extend(s.tolist())
    assert here["tag"].astype(str).tolist() == tags and here["step"].tolist() == steps


def test_guessed_bounds_stop_where_a_file_differs(tmp_path: Path) -> None:
    """A file laid out like the one before it up to a point: the guess is taken up to the first
    record whose head differs, the rest walked."""
    from tallyboard_tfevents.reader import EventFileReader

    base = _header() + b"".join(_event("loss", s, s) for s in range(100))
    other = (
        _header()
        + b"".join(_event("loss", s, s) for s in range(50))
        + b"".join(_event("longer_tag", s, s) for s in range(50, 60))
    )
    for name, data in (("a", base), ("b", other), ("c", base + base[len(_header()) :])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "events.out.tfevents.1.host").write_bytes(data)
    readers = _readers(tmp_path)
    batches = EventFileReader.read_many(readers).split()
    assert batches[1].scalars()[1].tolist() == list(range(60))
    assert batches[1].scalars()[0].tolist() == ["loss"] * 50 + ["longer_tag"] * 10
    assert batches[2].scalars()[1].tolist() == list(range(100)) * 2
    _check(tmp_path)


def test_a_record_head_naming_a_huge_record_is_reported_as_alone(tmp_path: Path) -> None:
    big = struct.pack("<Q", 3 << 31)
    from hostile_files import masked_crc

    head = big + struct.pack("<I", masked_crc(big))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "events.out.tfevents.1.host").write_bytes(
            _header() + _event("loss", 1, 1.0) + head + b"\x00" * 30
        )
    one, many = _check(tmp_path)
    assert all(r.dead for r in many)


def _sweep_runs(root: Path, runs: int, steps: int = 60) -> list[Path]:
    """Runs of one sweep: the same tags and steps, their own wall times and values."""
    from tallyboard_tfevents import proto

    paths = []
    for r in range(runs):
        records = [_header()]
        for s in range(steps):
            for k, tag in enumerate(("loss", "accuracy", "lr")):
                event = proto.Event(
                    wall_time=1.7e9 + r * 37.25 + s * 0.125 + k * 0.001,
                    step=s,
                    summary=proto.Summary(
                        value=[proto.SummaryValue(tag=tag, simple_value=(r + 1) / (s + k + 1))]
                    ),
                )
                records.append(frame(event.SerializeToString()))
        (root / f"run{r:02d}").mkdir(parents=True)
        path = root / f"run{r:02d}" / "events.out.tfevents.1.host"
        path.write_bytes(b"".join(records))
        paths.append(path)
    return paths


def test_runs_laid_out_alike_read_together_as_each_alone_damage_included(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files laid out like the file before them (a sweep's runs) are decoded from that file's
    tags and steps, their CRCs checked against its: a damaged wall time, value or CRC byte is
    still found (warned with file and offset, the record skipped), and a damaged tag makes
    the file one decoded on its own."""
    from tallyboard_tfevents import reader

    paths = _sweep_runs(tmp_path, 8)
    checked: list[int] = []  # records whose CRCs were checked against their template's
    real = reader._template_crcs

    def counting(*args: Any) -> Any:
        ok = real(*args)
        checked.append(ok.size)
        return ok

    monkeypatch.setattr(reader, "_template_crcs", counting)
    monkeypatch.setattr(reader, "_LAST", threading.local())  # no layout of an earlier read

    def damage(path: Path, nth: int, where: int) -> None:
        from hostile_files import records

        data = bytearray(path.read_bytes())
        offset, length = records(bytes(data))[nth]
        data[offset + 12 + (where if where >= 0 else length + where)] ^= 0x01
        path.write_bytes(bytes(data))

    damage(paths[2], 40, 3)  # a wall time byte
    damage(paths[4], 41, -2)  # a value byte
    damage(paths[5], 44, 20)  # inside the tag "accuracy": no longer laid out alike
    data = bytearray(paths[6].read_bytes())
    data[-1] ^= 0x80  # the last record's stored CRC
    paths[6].write_bytes(bytes(data))
    one, many, want, got, alone, together = _read_both(tmp_path)
    messages = [str(w.message) for w in alone]
    assert [m.split("/")[-2] for m in messages] == ["run02", "run04", "run05", "run06"]
    assert all("bad data CRC" in m for m in messages)
    # runs 1-4, 6, 7 laid out like run 0 (run 5, damaged in its tag, starts anew)
    assert sum(checked) == 6 * 180
    _check(tmp_path)
    assert len(got[3].scalars()[0]) == 180 and len(got[2].scalars()[0]) == 179


def test_groups_of_other_sizes_one_after_another_read_as_each_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread keeps the buffers a group of files laid out alike is compared in for its next
    group: a group smaller than the one before (the buffer still holding that one's bytes), a
    group too large to keep (its buffers dropped after it), then a damaged small one (files
    of scalars alone, no header), each read as each of its files alone."""
    from tallyboard_tfevents import reader

    monkeypatch.setattr(reader, "_LAST", threading.local())
    monkeypatch.setattr(reader, "_SCRATCH_KEPT", 100_000)
    medium = _sweep_runs(tmp_path / "medium", 8, steps=60)
    _sweep_runs(tmp_path / "small", 8, steps=20)
    _sweep_runs(tmp_path / "large", 16, steps=100)
    damaged = _sweep_runs(tmp_path / "damaged", 8, steps=20)
    for path in damaged:  # no header record: the files hold scalars alone
        path.write_bytes(path.read_bytes()[len(_header()) :])
    data = bytearray(damaged[3].read_bytes())
    data[-6] ^= 0x01  # a byte of the last value
    damaged[3].write_bytes(bytes(data))
    _check(tmp_path / "medium")
    kept = reader._LAST.block
    assert len(kept) >= sum(p.stat().st_size for p in medium[1:])
    _check(tmp_path / "small")
    _check(tmp_path / "large")
    assert reader._LAST.block is kept  # the large group's buffer was not kept
    one, many = _check(tmp_path / "damaged")
    assert many[3].offset == one[3].offset
    assert reader._LAST.block is kept
