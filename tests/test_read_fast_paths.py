"""The tfevents scalar fast path on realistic logs: tags of different lengths logged in a cycle,
steps crossing varint sizes, files from torch and tensorboardX, add_scalars sub-runs, records
the slow path decodes mixed in, and damaged or torn files. Every result is checked value for
value against TensorBoard's own reader (raw events and EventAccumulator) and against the slow
(protobuf) path of our reader."""

from __future__ import annotations

import random
import struct
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import event_files, load_run, raw_events
from tallyboard import SummaryWriter, read
from tallyboard.plugin.readers import Batch, ReadWarning
from tallyboard.reading.runs import RunReader
from tallyboard.records.framing import frame

Row = tuple[str, int, float, float]
TAGS = ("loss", "acc", "lr", "grad_norm/λ")  # different lengths, one not ASCII
# steps crossing the varint sizes 1 -> 2 -> 3 -> 4 bytes mid-run
STEPS = [*range(120, 136), *range(16375, 16392), *range(2**21 - 6, 2**21 + 6)]


def _write_cycle(path: Path, steps: list[int] = STEPS, tags: tuple[str, ...] = TAGS) -> None:
    with SummaryWriter(str(path)) as w:
        for step in steps:
            for k, tag in enumerate(tags):
                w.add_scalar(tag, step * 0.25 + k, step)


def _rows(df: Any) -> list[Row]:
    return list(zip(df["tag"].astype(str), df["step"], df["wall_time"], df["value"]))


def _tb_rows(run: Path) -> list[Row]:
    """Every simple_value in file order, as TensorBoard's own reader parses the files."""
    return [
        (v.tag, e.step, e.wall_time, v.simple_value)
        for e in raw_events(run)
        for v in e.summary.value
        if v.HasField("simple_value")
    ]


def _slow_rows(run: Path) -> list[Row]:
    """The same files decoded record by record by the reader's protobuf (slow) path."""
    from tallyboard.plugin.readers import PayloadRows
    from tallyboard.plugin.registry import get_registry
    from tallyboard_tfevents.reader import EventFileReader

    reg = get_registry()
    decoders = {  # as readers are given them: payload decoders give rows
        k: PayloadRows.of(reg.kinds.get(k), fn)
        for (fmt, k), fn in reg.decoders.items()
        if fmt == "tfevents"
    }
    out: list[Row] = []
    for f in event_files(run):
        data, pos = f.read_bytes(), 0
        reader, batch = EventFileReader(None, str(f), decoders), Batch()
        while pos < len(data):
            n = struct.unpack_from("<Q", data, pos)[0]
            reader._slow(data[pos + 12 : pos + 12 + n], pos, batch)
            pos += n + 16
        out += zip(batch.tags, batch.steps, batch.wall_times, batch.values)
    return out


def _check_all_readers_agree(run: Path, df: Any) -> None:
    got = _rows(df)
    assert got == _tb_rows(run)
    assert got == _slow_rows(run)
    acc = load_run(run)
    for tag in acc.Tags()["scalars"]:
        want = [(tag, e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]
        assert [r for r in got if r[0] == tag] == want


def _decoded_in_bulk(run: Path) -> int:
    """Scalars of ``run`` (its own files, not sub-runs) that the reader decoded as numpy
    columns, not one by one."""
    batches = [b for name, b in RunReader(str(run)).read() if name == "."]
    return sum(len(c[1]) for b in batches for c in b.columns)


def test_tags_of_different_lengths_in_a_cycle_are_decoded_in_bulk_and_match_tensorboard(
    tmp_path: Path,
) -> None:
    _write_cycle(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = read(str(tmp_path))
    assert len(df) == len(STEPS) * len(TAGS)
    _check_all_readers_agree(tmp_path, df)
    assert _decoded_in_bulk(tmp_path) == len(df)


def test_one_tag_with_steps_crossing_every_varint_size_up_to_ten_bytes(tmp_path: Path) -> None:
    steps = [0, *range(1, 300), *range(16300, 16500), 2**35, 2**56, 2**62, -1, -(2**40)]
    with SummaryWriter(str(tmp_path)) as w:
        for s in steps:
            w.add_scalar("x", s % 1000 / 8, s)
    df = read(str(tmp_path))
    assert df["step"].tolist() == steps
    assert _rows(df) == _tb_rows(tmp_path) == _slow_rows(tmp_path)
    assert _decoded_in_bulk(tmp_path) == len(steps)


@pytest.mark.parametrize("writer", ["torch", "tensorboardX"])
def test_torch_and_tensorboardx_files_and_add_scalars_sub_runs_take_the_fast_path(
    tmp_path: Path, writer: str
) -> None:
    if writer == "torch":
        from torch.utils.tensorboard import SummaryWriter as Writer
    else:
        from tensorboardX import SummaryWriter as Writer
    w = Writer(str(tmp_path))
    for step in range(0, 300):
        for k, tag in enumerate(("loss", "accuracy", "lr")):
            w.add_scalar(tag, step / 3 + k, step)
        w.add_scalars("grp", {"a": step * 2.0, "bbb": -step / 7}, step)
    w.close()
    runs = sorted({f.parent for f in tmp_path.rglob("*tfevents*")})
    assert len(runs) == 3  # the writer's own run and one per add_scalars key
    df = read(str(tmp_path))
    for run in runs:
        name = run.relative_to(tmp_path).as_posix() if run != tmp_path else "."
        part = df[df["run"] == name]
        assert len(part) == 300 * (3 if run == tmp_path else 1)
        _check_all_readers_agree(run, part)
        assert _decoded_in_bulk(run) == len(part)


def test_records_of_random_lengths_without_any_cycle(tmp_path: Path) -> None:
    rng = random.Random(7)
    tags = ["", "a", "é", *("t" * n for n in range(2, 110, 3))]
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(3000):
            w.add_scalar(rng.choice(tags), rng.random(), step // rng.choice((1, 2, 3)))
    df = read(str(tmp_path))
    assert len(df) == 3000
    assert _rows(df) == _tb_rows(tmp_path) == _slow_rows(tmp_path)


def test_tags_too_long_for_one_byte_lengths_are_read_right(tmp_path: Path) -> None:
    tags = ("a" * 118, "b" * 119, "c" * 126, "d" * 200)  # around the one-byte length limits
    _write_cycle(tmp_path, steps=list(range(100)), tags=tags)
    df = read(str(tmp_path))
    assert len(df) == 400
    _check_all_readers_agree(tmp_path, df)


def _tensorboard_records(n: int) -> tuple[bytes, list[Row]]:
    """A cycle of simple_value scalars with, now and then, records only the slow path reads:
    tensor-style scalars (TF2) and text. Built with TensorBoard's own protos."""
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.util import tensor_util

    frames, rows = [], []
    for i in range(n):
        step, wall = i // 3, 1000.0 + i
        value = summary_pb2.Summary.Value(tag=TAGS[i % 3], simple_value=i * 0.5)
        want: Row | None = (TAGS[i % 3], step, wall, i * 0.5)
        if i % 97 == 50:  # a scalar the slow path decodes (TF2 tensor scalar)
            meta = summary_pb2.SummaryMetadata(
                plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
            )
            proto = tensor_util.make_tensor_proto(np.float32(i))
            value = summary_pb2.Summary.Value(tag="tf2", tensor=proto, metadata=meta)
            want = ("tf2", step, wall, float(i))
        elif i % 89 == 10:  # not a scalar at all
            meta = summary_pb2.SummaryMetadata(
                plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text")
            )
            proto = tensor_util.make_tensor_proto(np.array([b"hi"]))
            value = summary_pb2.Summary.Value(tag="note", tensor=proto, metadata=meta)
            want = None
        event = event_pb2.Event(
            wall_time=wall, step=step, summary=summary_pb2.Summary(value=[value])
        )
        frames.append(frame(event.SerializeToString()))
        if want is not None:
            rows.append(want)
    return b"".join(frames), rows


def test_scalars_the_slow_path_decodes_keep_their_place_among_bulk_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tallyboard_tfevents import reader

    data, want = _tensorboard_records(3000)
    (tmp_path / "events.out.tfevents.1.x").write_bytes(data)
    assert _rows(read(str(tmp_path))) == want
    monkeypatch.setattr(
        reader.EventFileReader, "chunk_size", 1500
    )  # records straddle chunks, cycles too
    assert _rows(read(str(tmp_path))) == want
    assert _rows(read(str(tmp_path))) == _slow_rows(tmp_path)


@pytest.mark.parametrize("chunk", [333, 1000, 4096])
def test_cycles_straddling_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    from tallyboard_tfevents import reader

    _write_cycle(tmp_path)
    monkeypatch.setattr(reader.EventFileReader, "chunk_size", chunk)
    assert _rows(read(str(tmp_path))) == _tb_rows(tmp_path)


def _offsets(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        out.append(pos)
        pos += 16 + struct.unpack_from("<Q", data, pos)[0]
    return out


def test_bit_flip_inside_a_cycle_reports_that_record_only(tmp_path: Path) -> None:
    _write_cycle(tmp_path)
    (path,) = event_files(tmp_path)
    want = _tb_rows(tmp_path)
    data = bytearray(path.read_bytes())
    offsets = _offsets(bytes(data))
    for k in (70, 71, 150):  # record k holds scalar k - 1 (record 0 is the file header)
        data[offsets[k] + 30] ^= 0x01  # inside the tag or value: the data CRC alone can tell
    path.write_bytes(bytes(data))
    with pytest.warns(ReadWarning) as caught:
        df = read(str(tmp_path))
    assert [str(w.message) for w in caught] == [
        f"{path}: bad data CRC; record skipped at offset {offsets[k]}" for k in (70, 71, 150)
    ]
    assert _rows(df) == [r for i, r in enumerate(want) if i + 1 not in (70, 71, 150)]


def test_bad_length_crc_inside_a_cycle_skips_the_rest_of_the_file(tmp_path: Path) -> None:
    _write_cycle(tmp_path)
    (path,) = event_files(tmp_path)
    want = _tb_rows(tmp_path)
    data = bytearray(path.read_bytes())
    offset = _offsets(bytes(data))[101]
    data[offset + 9] ^= 0x40  # the length CRC
    path.write_bytes(bytes(data))
    with pytest.warns(
        ReadWarning, match=f"bad length CRC; the rest of the file is skipped at offset {offset}$"
    ):
        df = read(str(tmp_path))
    assert _rows(df) == want[:100]


@pytest.mark.parametrize("where", [5, 20, -2])  # inside a head, a payload, a data CRC
def test_torn_tail_inside_a_cycle_is_read_whole_on_the_next_call(
    tmp_path: Path, where: int
) -> None:
    _write_cycle(tmp_path)
    (path,) = event_files(tmp_path)
    want = _tb_rows(tmp_path)
    data = path.read_bytes()
    offsets = _offsets(data)
    cut = offsets[123] + where if where > 0 else offsets[124] + where
    path.write_bytes(data[:cut])
    reader = RunReader(str(tmp_path))

    def rows(batch: Batch) -> list[Row]:
        tags, steps, walls, values = batch.scalars()
        return list(zip(tags.tolist(), steps.tolist(), walls.tolist(), values.tolist()))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ((_, first),) = reader.read()
        assert rows(first) == want[:122]
        path.write_bytes(data)
        ((_, second),) = reader.read()
    assert rows(second) == want[122:]


def test_many_tags_of_one_length_keep_their_names(tmp_path: Path) -> None:
    tags = tuple(f"t{k:02d}" for k in range(40))  # more than are told apart one at a time
    _write_cycle(tmp_path, steps=list(range(30)), tags=tags)
    df = read(str(tmp_path))
    assert len(df) == 1200
    _check_all_readers_agree(tmp_path, df)
