"""tallyboard.read and the readers: round trips, damaged and live files, fsspec URLs, bad input."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest
from conftest import event_files, load_run
from tallyboard import SummaryWriter, read
from tallyboard.plugin.readers import Batch, ReadWarning
from tallyboard.reading.runs import RunReader
from tallyboard.records.framing import frame

pytest_plugins = ["tallyboard.testing"]


def _write(path: Path, n: int = 100, tags: tuple[str, ...] = ("loss", "acc")) -> None:
    with SummaryWriter(str(path)) as w:
        for i in range(n):
            for k, tag in enumerate(tags):
                w.add_scalar(tag, i * 0.5 + k, i)


def test_tallyboard_scalars_round_trip_match_event_accumulator(tmp_path: Path) -> None:
    _write(tmp_path / "a")
    _write(tmp_path / "b" / "seed1", n=10, tags=("loss",))
    df = read(str(tmp_path))
    assert len(df) == 210
    assert sorted(df["run"].unique()) == ["a", "b/seed1"]
    acc = load_run(tmp_path / "a")
    for tag in ("loss", "acc"):
        got = df[(df.run == "a") & (df.tag == tag)]
        want = acc.Scalars(tag)
        assert got["step"].tolist() == [e.step for e in want]
        assert got["value"].tolist() == [e.value for e in want]
        assert got["wall_time"].tolist() == [e.wall_time for e in want]
    only = read(str(tmp_path), runs="b/seed1", tags=["loss"])
    assert only["step"].tolist() == list(range(10))
    assert only["value"].tolist() == [i * 0.5 for i in range(10)]


def test_torch_and_tensorboardx_scalars_read_back(tmp_path: Path) -> None:
    import tensorboardX
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    for name, cls in (("torch", TorchWriter), ("tbx", tensorboardX.SummaryWriter)):
        w = cls(str(tmp_path / name))
        for i in range(50):
            w.add_scalar("x", float(i) / 3, i * 2)
        w.add_scalar("big", 1.5, 2**40)
        w.close()
    df = read(str(tmp_path))
    for name in ("torch", "tbx"):
        x = df[(df.run == name) & (df.tag == "x")]
        assert x["step"].tolist() == [i * 2 for i in range(50)]
        assert np.allclose(x["value"], [np.float32(i / 3) for i in range(50)])
        big = df[(df.run == name) & (df.tag == "big")]
        assert big["step"].tolist() == [2**40] and big["value"].tolist() == [1.5]


def test_tensor_style_scalar_decoded_by_scalar_kind(tmp_path: Path) -> None:
    from tallyboard_tfevents import proto

    run = tmp_path / "tf2"
    run.mkdir()
    events = []
    for step, (dtype, field, v) in enumerate(
        [(1, "float_val", 0.25), (2, "double_val", 2.5), (9, "int64_val", 7)]
    ):
        tensor = proto.TensorProto(dtype=dtype, tensor_shape=proto.TensorShapeProto())
        getattr(tensor, field).append(v)
        value = proto.SummaryValue(tag="t", tensor=tensor, metadata=proto.metadata("scalars"))
        event = proto.Event(wall_time=1.0 + step, step=step, summary=proto.Summary(value=[value]))
        events.append(frame(event.SerializeToString()))
    (run / "events.out.tfevents.1.host").write_bytes(b"".join(events))
    df = read(str(tmp_path))
    assert df["value"].tolist() == [0.25, 2.5, 7.0] and df["step"].tolist() == [0, 1, 2]


def test_truncated_tail_left_for_next_read_and_live_run_yields_only_new(tmp_path: Path) -> None:
    _write(tmp_path, n=100, tags=("x",))
    (path,) = event_files(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    reader = RunReader(str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (first,) = reader.read()
    assert _steps(first[1]) == list(range(99))
    path.write_bytes(data + frame(_scalar_event("x", 100, 7.0)))
    (second,) = reader.read()
    assert _steps(second[1]) == [99, 100] and second[1].scalars()[3][-1] == 7.0
    (third,) = reader.read()
    assert _steps(third[1]) == []


def _steps(batch: Batch) -> list[int]:
    """Steps of a batch's scalars, bulk-decoded columns first, in file order."""
    return [int(s) for c in batch.columns for s in c[2]] + batch.steps


def _scalar_event(tag: str, step: int, value: float) -> bytes:
    from tallyboard_tfevents import proto

    return proto.Event(
        wall_time=5.0,
        step=step,
        summary=proto.Summary(value=[proto.SummaryValue(tag=tag, simple_value=value)]),
    ).SerializeToString()


def _offsets(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        out.append(pos)
        pos += 16 + struct.unpack_from("<Q", data, pos)[0]
    return out


def test_bit_flip_in_data_skips_that_record_and_warns_with_offset(tmp_path: Path) -> None:
    _write(tmp_path, n=100, tags=("x",))
    (path,) = event_files(tmp_path)
    data = bytearray(path.read_bytes())
    offset = _offsets(bytes(data))[51]  # header + steps 0..49 before it
    data[offset + 14] ^= 0x04
    path.write_bytes(bytes(data))
    with pytest.warns(
        ReadWarning, match=f"{path.name}: bad data CRC; record skipped at offset {offset}"
    ):
        df = read(str(tmp_path))
    assert df["step"].tolist() == [s for s in range(100) if s != 50]


def test_bad_length_crc_skips_rest_of_file_and_other_files_still_read(tmp_path: Path) -> None:
    _write(tmp_path / "r", n=100, tags=("x",))
    _write(tmp_path / "s", n=5, tags=("x",))
    (path,) = event_files(tmp_path / "r")
    data = bytearray(path.read_bytes())
    offset = _offsets(bytes(data))[51]
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.warns(
        ReadWarning, match=f"bad length CRC; the rest of the file is skipped at offset {offset}"
    ):
        df = read(str(tmp_path))
    assert df[df.run == "r"]["step"].tolist() == list(range(50))
    assert df[df.run == "s"]["step"].tolist() == list(range(5))


def test_memory_url_and_arrow_table(tmp_path: Path) -> None:
    _write(tmp_path, n=20, tags=("loss",))
    fs = fsspec.filesystem("memory")
    (path,) = event_files(tmp_path)
    fs.pipe_file(f"/read-tests/run1/{path.name}", path.read_bytes())
    t = read("memory://read-tests", table="arrow")
    assert t.column_names == ["run", "tag", "step", "wall_time", "value"]
    assert t.num_rows == 20
    assert t.column("run").to_pylist() == ["run1"] * 20
    assert t.column("value").to_pylist() == [i * 0.5 for i in range(20)]


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="table must be one of"):
        read(str(tmp_path), table="xls")
    with pytest.raises(TypeError, match="runs must be None"):
        read(str(tmp_path), runs=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="is not a directory"):
        read(str(tmp_path / "missing"))
    with pytest.raises(TypeError, match="logdir must be"):
        read(None)  # type: ignore[arg-type]


def test_hparams_metadata_only_values_are_not_scalars(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    w = TorchWriter(str(tmp_path))
    w.add_hparams({"lr": 0.1}, {"m": 2.0}, run_name="hp")
    w.close()
    df = read(str(tmp_path))
    assert df[["run", "tag"]].astype(str).values.tolist() == [["hp", "m"]]
    assert df["value"].tolist() == [2.0]


def _frames(events: list[tuple[str, int, float]]) -> bytes:
    return b"".join(frame(_scalar_event(tag, step, value)) for tag, step, value in events)


def test_bulk_decoded_runs_keep_steps_of_every_varint_size_and_non_ascii_tags(
    tmp_path: Path,
) -> None:
    # runs of same-length records (decoded at once) for steps of 1..10 varint bytes, negatives too
    steps = [0, 1, 127, 128, 2**14, 2**21, 2**28, 2**35, 2**42, 2**49, 2**56, 2**62, -1, -(2**40)]
    events = [(tag, s + i, i / 8) for s in steps for i in range(40) for tag in ("λoss", "acc€")]
    (tmp_path / "events.out.tfevents.1.x").write_bytes(_frames(events))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = read(str(tmp_path))
    assert list(zip(df.tag, df.step, df.value)) == events
    assert (df.wall_time == 5.0).all()


def test_records_straddling_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tallyboard_tfevents import reader

    events = [(f"t{i % 3}", i, float(i)) for i in range(500)]
    (tmp_path / "events.out.tfevents.1.x").write_bytes(_frames(events))
    monkeypatch.setattr(
        reader.EventFileReader, "chunk_size", 1000
    )  # not a multiple of the record size
    df = read(str(tmp_path))
    assert list(zip(df.tag, df.step, df.value)) == events


def test_bit_flip_inside_a_bulk_run_reports_that_record_only(tmp_path: Path) -> None:
    events = [("x", i, float(i)) for i in range(1000)]
    path = tmp_path / "events.out.tfevents.1.x"
    data = bytearray(_frames(events))
    offset = _offsets(bytes(data))[700]
    data[offset + 20] ^= 0x10  # inside wall_time: only the data CRC can tell
    path.write_bytes(bytes(data))
    with pytest.warns(ReadWarning, match=f"bad data CRC; record skipped at offset {offset}$"):
        df = read(str(tmp_path))
    assert df["step"].tolist() == [i for i in range(1000) if i != 700]


def test_scalar_table_peak_memory_is_under_twice_the_table(tmp_path: Path) -> None:
    """1,000,000 scalars (issue 11's size): the read holds one 4 MiB chunk and the table's parts
    plus one output column at a time, never the parts plus the whole table."""
    import tracemalloc

    tags = ("loss", "acc", "lr", "grad")
    with SummaryWriter(str(tmp_path)) as w:
        add = w.add_scalar
        for i in range(1_000_000):
            add(tags[i & 3], i * 0.5, i >> 2)
    read(str(tmp_path))  # imports and caches outside the measured call
    tracemalloc.start()
    try:
        df = read(str(tmp_path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    table = int(df.memory_usage(deep=True).sum())
    assert len(df) == 1_000_000
    assert peak <= 2 * table, f"peak {peak} bytes for a {table}-byte table"


def test_a_decoder_that_raises_is_reported_and_the_read_goes_on(
    tmp_path: Path, register_plugin: Any
) -> None:
    from tallyboard import hookimpl
    from tallyboard_tfevents.proto import Event, SummaryValue, metadata

    class BrokenDecoder:
        @hookimpl
        def register_decoders(self, register: Any) -> None:
            def decode(value: Any, step: int, wall_time: float) -> None:
                if value.metadata.plugin_data.plugin_name == "stars":
                    raise RuntimeError("cannot parse this")

            register("tfevents", "stars", decode)

    register_plugin(BrokenDecoder(), "broken-decoder")
    with SummaryWriter(str(tmp_path)) as w:
        w.add_event(
            Event(
                step=1, summary={"value": [SummaryValue(tag="r", metadata=metadata("stars", b"5"))]}
            )
        )
        w.add_text("notes", "kept", 2)
        w.add_scalar("loss", 0.5, 3)
    with pytest.warns(
        ReadWarning, match=r"the stars decoder failed .*cannot parse this.* at offset \d+"
    ):
        assert read(str(tmp_path), kind="stars").empty
    assert read(str(tmp_path), kind="text")["value"].tolist() == ["kept"]
    assert read(str(tmp_path))["value"].tolist() == [0.5]


def test_a_record_longer_than_a_chunk_is_read_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from tallyboard_tfevents import reader

    text = "x" * 50_000
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("a", 1.0, 0)
        w.add_text("long", text, 1)
        w.add_scalar("a", 2.0, 2)
    sizes: list[int] = []

    class CountingFile(io.FileIO):
        def read(self, size: int | None = -1) -> bytes:
            sizes.append(-1 if size is None else size)
            return super().read(size)

    class CountingFS:
        def open(self, path: str, mode: str) -> CountingFile:
            return CountingFile(path, mode[0])

    monkeypatch.setattr(reader.EventFileReader, "chunk_size", 1000)
    ((_, file_reader),) = RunReader(str(tmp_path)).discover()
    file_reader.fs = CountingFS()  # type: ignore[attr-defined]
    batch = file_reader.read_new()
    assert batch.rows["text"][0]["value"] == text and _steps(batch) == [0, 2]
    assert max(sizes) > 49_000 and len(sizes) < 8, sizes  # one read for it, not 50


def test_files_written_under_the_old_name_are_read(tmp_path):
    """Before its rename tallyboard stamped its event files with another writer name; the name
    is metadata only and such files read back whole."""
    from tensorboard.compat.proto.event_pb2 import Event, SourceMetadata
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    old_name = "plug" + "board"  # spelled apart: the old name appears nowhere else in the tree
    writer = EventFileWriter(str(tmp_path))
    writer.add_event(Event(wall_time=1.0, source_metadata=SourceMetadata(writer=old_name)))
    for step in range(3):
        value = Summary.Value(tag="loss", simple_value=float(step))
        writer.add_event(Event(wall_time=2.0 + step, step=step, summary=Summary(value=[value])))
    writer.close()
    df = read(str(tmp_path))
    assert df["step"].tolist() == [0, 1, 2] and df["value"].tolist() == [0.0, 1.0, 2.0]
