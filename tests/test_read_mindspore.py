"""Reading MindSpore summary files back: tallyboard.read agrees with the independent reader.

Files are written with tallyboard's SummaryRecord (and a SummaryWriter with the mindspore sink);
every value read is compared with tests/mindspore_reader.py, which shares no code with tallyboard.
"""

from __future__ import annotations

import io
import math
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import mindspore_reader as msr
import numpy as np
import pandas as pd
import pytest
import tallyboard
from PIL import Image
from tallyboard import SummaryRecord, SummaryWriter, hookimpl
from tallyboard.faces.ops import ScalarSummary
from tallyboard.plugin.readers import ReadWarning
from tallyboard.reading.runs import RunReader
from tallyboard.records.framing import frame

pytest_plugins = ["tallyboard.testing"]


def summary_file(run: Path) -> Path:
    (path,) = [
        p for p in run.iterdir() if ".out.events.summary." in p.name and p.name.endswith("_MS")
    ]
    return path


def offsets(path: Path) -> list[int]:
    """Offset of every record of a framed file."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        out.append(pos)
        pos += 16 + int.from_bytes(data[pos : pos + 8], "little")
    return out


def write_runs(root: Path, steps: int = 40) -> None:
    """A train run (values added and from a summary operator; scalars only after step 4, so
    alike records are read in bulk) and an eval run."""
    rng = np.random.default_rng(0)
    with SummaryRecord(str(root / "train")) as record:
        for step in range(steps):
            record.add_value("scalar", "loss", np.float32(1.0 / (step + 1)))
            record.add_value("scalar", "lr", np.float64(0.1 * 0.9**step))
            ScalarSummary()("grad_norm", np.float32(step * 0.25))
            if step in (0, 2, 4):
                record.add_value("image", "input", rng.random((2, 3, 4, 5), np.float32))
                record.add_value(
                    "tensor", "w_int", np.arange(6, dtype=np.int16).reshape(2, 3) * step
                )
                record.add_value("tensor", "w", rng.standard_normal((3, 2)).astype(np.float64))
                record.add_value("tensor", "mask", np.array([True, False, step > 0]))
                record.add_value("histogram", "grads", rng.standard_normal(50 + step))
                record.add_value("histogram", "const", np.full(7, 2.0, np.float32))
            record.record(step)
    with SummaryRecord(str(root / "eval")) as record:
        record.set_mode("eval")
        for step in (10, 20, 2**40, -3):
            record.add_value("scalar", "acc", np.float32(step % 7 / 7))
            record.add_value("histogram", "out", np.array([0.5, np.nan, np.inf, -np.inf, 1.5]))
            if step == -3:  # no finite value: no buckets, no min, max or sum
                record.add_value("histogram", "all_nan", np.array([np.nan, np.nan]))
            record.record(step)


def reference(root: Path, run: str, kind: str) -> list[tuple[int, str, float, Any]]:
    """``(step, tag, wall_time, value)`` of every value of one kind, read independently."""
    out = []
    for event in msr.read_events(summary_file(root / run)):
        for value in event.summary.value if event.HasField("summary") else ():
            if value.HasField(kind):
                out.append((event.step, value.tag, event.wall_time, getattr(value, kind)))
    return out


def test_scalars_of_train_and_eval_runs_agree_with_the_independent_reader(tmp_path: Path) -> None:
    write_runs(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = tallyboard.read(str(tmp_path))
    assert list(df.columns) == ["run", "tag", "step", "wall_time", "value"]
    for run in ("train", "eval"):
        got = df[df.run == run]
        want = reference(tmp_path, run, "scalar_value")
        assert list(zip(got.step, got.tag, got.wall_time, got.value)) == want
    assert set(df[df.run == "train"].tag) == {"loss", "lr", "grad_norm"}
    assert df[df.run == "eval"].step.tolist() == [10, 20, 2**40, -3]


def test_steps_of_every_varint_size_and_non_ascii_tags_in_bulk_runs(tmp_path: Path) -> None:
    starts = [0, 100, 2**14 - 10, 2**21, 2**35, 2**62, -(2**40), -1]
    with SummaryRecord(str(tmp_path)) as record:
        for start in starts:
            for i in range(30):
                record.add_value("scalar", "λoss", np.float32(i / 8))
                record.add_value("scalar", "acc€", np.float32(-i))
                record.record(start + i)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = tallyboard.read(str(tmp_path))
    want = reference(tmp_path, ".", "scalar_value")
    assert len(want) == 480 and list(zip(df.step, df.tag, df.wall_time, df.value)) == want


def test_runs_of_alike_records_broken_anywhere_read_every_value(tmp_path: Path) -> None:
    odd = {17, 40, 41, 100, 150, 151, 152, *range(160, 200, 2)}
    with SummaryRecord(str(tmp_path)) as record:
        for step in range(400):
            record.add_value("scalar", "a", np.float32(step))
            if step in odd:
                record.add_value("scalar", "b", np.float32(-step))
            if step == 70:
                record.add_value("histogram", "h", np.arange(10.0))
            record.record(step)
    df = tallyboard.read(str(tmp_path))
    assert list(zip(df.step, df.tag, df.wall_time, df.value)) == reference(
        tmp_path, ".", "scalar_value"
    )
    assert len(df) == 400 + len(odd)


def test_images_tensors_and_histograms_agree_with_the_independent_reader(tmp_path: Path) -> None:
    write_runs(tmp_path)
    images = tallyboard.read(str(tmp_path), kind="image")
    want_images = reference(tmp_path, "train", "image")
    assert len(images) == len(want_images) == 3
    for row, (step, tag, wall, image) in zip(images.itertuples(), want_images):
        assert (row.run, row.step, row.tag, row.wall_time) == ("train", step, tag, wall)
        assert (row.width, row.height, row.colorspace) == (
            image.width,
            image.height,
            image.colorspace,
        )
        assert row.data == image.encoded_image
        assert Image.open(io.BytesIO(row.data)).size == (image.width, image.height)

    tensors = tallyboard.read(str(tmp_path), kind="tensor")
    want_tensors = reference(tmp_path, "train", "tensor")
    assert len(tensors) == len(want_tensors) == 9
    names = {v: k.lower()[3:] for k, v in msr.DATA_TYPES.items()}
    for row, (step, tag, wall, tensor) in zip(tensors.itertuples(), want_tensors):
        assert (row.step, row.tag, row.wall_time) == (step, tag, wall)
        assert row.shape == list(tensor.dims)
        assert row.dtype == names[tensor.data_type]
        assert row.value.dtype == np.dtype(row.dtype)
        expect = np.array(tensor.float_data, np.float32).astype(row.dtype).reshape(tensor.dims)
        assert np.array_equal(row.value, expect)
    ints = tensors[tensors.tag == "w_int"]
    assert [v.tolist() for v in ints.value] == [
        (np.arange(6).reshape(2, 3) * s).tolist() for s in (0, 2, 4)
    ]
    assert tensors[tensors.tag == "mask"].value.iloc[1].tolist() == [True, False, True]

    hists = tallyboard.read(str(tmp_path), kind="histogram")
    want_hists = reference(tmp_path, "train", "histogram") + reference(
        tmp_path, "eval", "histogram"
    )
    hists = pd.concat([hists[hists.run == "train"], hists[hists.run == "eval"]])
    assert len(hists) == len(want_hists) == 11
    for row, (step, tag, wall, h) in zip(hists.itertuples(), want_hists):
        assert (row.step, row.tag, row.wall_time) == (step, tag, wall)
        lefts = [b.left for b in h.buckets]
        assert row.bucket_limit == (lefts + [lefts[-1] + h.buckets[-1].width] if lefts else [])
        assert row.bucket == ([0.0] + [float(b.count) for b in h.buckets] if lefts else [])
        assert row.num == h.count
        stats = (h.min, h.max, h.sum) if h.HasField("max") else (math.nan,) * 3
        assert np.array_equal([row.min, row.max, row.sum], stats, equal_nan=True)
        assert math.isnan(row.sum_squares)
        assert (row.nan_count, row.pos_inf_count, row.neg_inf_count) == (
            h.nan_count,
            h.pos_inf_count,
            h.neg_inf_count,
        )
    empty = hists[hists.tag == "all_nan"].iloc[0]
    assert (empty.bucket_limit, empty.bucket, empty.num, empty.nan_count) == ([], [], 2.0, 2)
    assert math.isnan(empty["min"]) and math.isnan(empty["max"]) and math.isnan(empty["sum"])
    out = hists[hists.tag == "out"].iloc[0]
    assert (out.nan_count, out.pos_inf_count, out.neg_inf_count, out.num) == (1, 1, 1, 5.0)
    assert (out["min"], out["max"], out["sum"]) == (0.5, 1.5, 2.0)


def test_tfevents_and_mindspore_files_side_by_side_give_the_same_rows(tmp_path: Path) -> None:
    img = np.zeros((3, 4, 6), np.float32)
    img[1] = 1.0
    values = np.random.default_rng(1).standard_normal(200)
    with SummaryWriter(str(tmp_path), sinks=["tfevents", "mindspore"]) as w:
        for step in range(3):
            w.add_scalar("loss", 0.5 * step, step)
            w.add_histogram("h", values * (step + 1), step)
            w.add_image("img", img, step)
    # one run holding the same values twice is read once, in event files, unless asked
    scalars = tallyboard.read(str(tmp_path))
    assert scalars.step.tolist() == [0, 1, 2] and set(scalars.run) == {"."}
    assert scalars.value.tolist() == [0.0, 0.5, 1.0]
    ms_only = tallyboard.read(str(tmp_path), formats="mindspore")
    assert ms_only.value.tolist() == [0.0, 0.5, 1.0]
    both = tallyboard.read(str(tmp_path), formats=["tfevents", "mindspore"])
    assert both.step.tolist() == [0, 1, 2, 0, 1, 2]
    assert both.value.tolist() == [0.0, 0.5, 1.0] * 2

    hists = tallyboard.read(str(tmp_path), kind="histogram", formats=["tfevents", "mindspore"])
    assert len(hists) == 6
    ms = hists[
        hists.nan_count.notna()
    ]  # MindSpore's rows: its own counts besides the shared columns
    tb = hists[hists.nan_count.isna()]
    assert len(ms) == len(tb) == 3
    for a, b in zip(ms.itertuples(), tb.itertuples()):
        assert a.bucket_limit == b.bucket_limit  # the exact inverse of the sink's encoding
        assert a.bucket[1:] == b.bucket[1:] and a.bucket[0] == 0.0
        assert (a.min, a.max, a.num, a.sum, a.step) == (b.min, b.max, b.num, b.sum, b.step)

    assert len(tallyboard.read(str(tmp_path), kind="histogram")) == 3
    images = tallyboard.read(str(tmp_path), kind="image", formats=["mindspore", "tfevents"])
    assert len(images) == 6
    assert images.width.tolist() == [6] * 6 and images.height.tolist() == [4] * 6
    pixels = [np.asarray(Image.open(io.BytesIO(d)).convert("RGB")) for d in images.data]
    for p in pixels:
        assert np.array_equal(p, pixels[0]) and p[0, 0].tolist() == [0, 255, 0]


def test_graph_rows_and_a_third_party_decoder_for_landscapes(
    tmp_path: Path, register_plugin: Any
) -> None:
    from tallyboard.faces.summary_record import LossLandscape

    landscape = LossLandscape()
    landscape.landscape.x.dims.append(2)
    landscape.landscape.x.float_data.extend([1.0, 2.0])
    landscape.metadata.unit = "step"
    model = msr.ModelProto(ir_version=1)
    model.graph.name = "net"
    with SummaryRecord(str(tmp_path)) as record:
        record.add_value("graph", "", model.SerializeToString())
        record.add_value("landscape", "land", landscape)
        record.add_value("scalar", "s", np.float32(1))
        record.record(3)
    graphs = tallyboard.read(str(tmp_path), kind="anf_graph")
    assert graphs.tag.tolist() == ["graph"]
    assert msr.GraphProto.FromString(graphs.data[0]).name == "net"
    assert graphs.data[0] == model.graph.SerializeToString()
    assert tallyboard.read(str(tmp_path), kind="landscape").empty  # no decoder: not read

    class LandscapeDecoder:
        @hookimpl
        def register_decoders(self, register: Any) -> None:
            def decode(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
                if value.value_field != 10:
                    return None
                fields = [number for number, _, _ in value.fields()]
                return {
                    "unit": msr.LossLandscape.FromString(value.data).metadata.unit,
                    "fields": fields,
                }

            register("mindspore", "landscape", decode)

    register_plugin(LandscapeDecoder(), "landscape-decoder")
    rows = tallyboard.read(str(tmp_path), kind="landscape")
    assert rows[["tag", "step", "unit"]].values.tolist() == [["land", 3, "step"]]
    assert rows.fields[0] == [1, 3]
    assert tallyboard.read(str(tmp_path)).value.tolist() == [1.0]


def test_cut_file_leaves_torn_record_then_reads_only_new_rows(tmp_path: Path) -> None:
    src = tmp_path / "src"
    with SummaryRecord(str(src)) as record:
        for step in range(40):
            record.add_value("scalar", "loss", np.float32(step))
            if step == 30:
                record.add_value("histogram", "h", np.arange(20.0))
            record.record(step)
    path = summary_file(src)
    data = path.read_bytes()
    cut = offsets(path)[25] + 9  # inside the header of step 24's record
    live = tmp_path / "live" / path.name
    live.parent.mkdir()
    live.write_bytes(data[:cut])
    reader = RunReader(str(live.parent))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = [b for _, b in reader.read()]
        assert first[0].scalars()[1].tolist() == list(range(24))
        with live.open("ab") as f:
            f.write(data[cut : offsets(path)[35] + 30])  # tail torn inside a record again
        second = [b for _, b in reader.read()]
        assert second[0].scalars()[1].tolist() == list(range(24, 34))
        assert [r["step"] for r in second[0].rows["histogram"]] == [30]
        with live.open("ab") as f:
            f.write(data[offsets(path)[35] + 30 :])
        third = [b for _, b in reader.read()]
        assert third[0].scalars()[1].tolist() == list(range(34, 40)) and not third[0].rows
        assert reader.read()[0][1].scalars()[1].tolist() == []


def test_bit_flip_warns_with_offset_and_keeps_the_other_rows(tmp_path: Path) -> None:
    with SummaryRecord(str(tmp_path)) as record:
        for step in range(100):  # alike records: read in bulk, the damaged one by the loop
            record.add_value("scalar", "a", np.float32(step))
            record.add_value("scalar", "b", np.float32(-step))
            record.record(step)
    path = summary_file(tmp_path)
    data = bytearray(path.read_bytes())
    offset = offsets(path)[51]  # the version event, then steps 0..49
    data[offset + 20] ^= 0x10
    path.chmod(0o600)
    path.write_bytes(bytes(data))
    with pytest.warns(
        ReadWarning, match=f"{path.name}: bad data CRC; record skipped at offset {offset}$"
    ):
        df = tallyboard.read(str(tmp_path))
    steps = [s for s in range(100) if s != 50]
    assert df.step.tolist() == [s for s in steps for _ in "ab"]
    assert df.value.tolist() == [v for s in steps for v in (s, -s)]


def test_bad_length_crc_skips_the_rest_of_that_file_only(tmp_path: Path) -> None:
    for run, n in (("r", 60), ("s", 5)):
        with SummaryRecord(str(tmp_path / run)) as record:
            for step in range(n):
                record.add_value("scalar", "x", np.float32(step))
                record.record(step)
    path = summary_file(tmp_path / "r")
    data = bytearray(path.read_bytes())
    offset = offsets(path)[31]
    data[offset + 2] ^= 0x01
    path.chmod(0o600)
    path.write_bytes(bytes(data))
    with pytest.warns(
        ReadWarning,
        match=f"{path.name}: bad length CRC; the rest of the file is skipped at offset {offset}",
    ):
        df = tallyboard.read(str(tmp_path))
    assert df[df.run == "r"].step.tolist() == list(range(30))
    assert df[df.run == "s"].step.tolist() == list(range(5))


def test_unparsable_event_and_undecodable_value_warn_and_reading_goes_on(tmp_path: Path) -> None:
    from tallyboard_mindspore import wire

    def value_event(step: int, *values: bytes) -> bytes:
        return frame(wire.summary_event(1.5, step, list(values)))

    string_tensor = wire.tag_field("t") + wire.field_bytes(8, b"\x08\x01\x10\x0d")  # DT_STRING
    records = [
        frame(wire.version_event(1.0)),
        value_event(1, wire.scalar_value("x", 1.0)),
        frame(b"\x09" + b"\x00" * 8 + b"\x2a\x7f\x0a"),  # Summary length past the Event's end
        value_event(2, string_tensor, wire.scalar_value("x", 2.0)),
        value_event(3, wire.scalar_value("x", 3.0)),
    ]
    path = tmp_path / "a.out.events.summary.1.0.host_MS"
    path.write_bytes(b"".join(records))
    bad = sum(map(len, records[:2]))
    odd = sum(map(len, records[:3]))
    with pytest.warns(ReadWarning) as caught:
        df = tallyboard.read(str(tmp_path))
        tensors = tallyboard.read(str(tmp_path), kind="tensor")
    messages = [str(w.message) for w in caught]
    assert (
        f"{path}: unparsable Event (a field runs past the end of the Event); record skipped at offset {bad}"
        in messages
    )
    assert any(
        m.startswith(f"{path}: tensor value 't' not decodable")
        and m.endswith(f"value skipped at offset {odd}")
        for m in messages
    )
    assert df.step.tolist() == [1, 2, 3] and df.value.tolist() == [1.0, 2.0, 3.0]
    assert tensors.empty


def test_records_straddling_small_chunks_read_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tallyboard.records.record_reader import RecordFileReader

    write_runs(tmp_path, steps=30)
    whole = {
        kind: tallyboard.read(str(tmp_path), kind=kind) for kind in ("scalar", "image", "histogram")
    }
    monkeypatch.setattr(RecordFileReader, "chunk_size", 97)  # shorter than most records
    for kind, want in whole.items():
        got = tallyboard.read(str(tmp_path), kind=kind)
        assert got.drop(columns=[c for c in ("data",) if c in got]).equals(
            want.drop(columns=[c for c in ("data",) if c in want])
        )
        if kind == "image":
            assert got.data.tolist() == want.data.tolist()


def test_empty_dir_gives_empty_tables(tmp_path: Path) -> None:
    scalars = tallyboard.read(str(tmp_path))
    assert scalars.empty and list(scalars.columns) == ["run", "tag", "step", "wall_time", "value"]
    images = tallyboard.read(str(tmp_path), kind="image")
    assert images.empty and list(images.columns) == ["run", "tag", "step", "wall_time"]


def test_lineage_messages_read_back_as_rows_of_their_kinds(tmp_path: Path) -> None:
    from tallyboard.faces.summary_record import (
        DatasetGraph,
        EvaluationLineage,
        TrainLineage,
        UserDefinedInfo,
    )

    train = TrainLineage()
    train.hyper_parameters.learning_rate = 0.5
    train.algorithm.network = "ResNet"
    evaluation = EvaluationLineage(metric='{"acc": 0.9}')
    graph = DatasetGraph()
    graph.operations.add().operationParam.mapStr["op"] = "Batch"
    custom = UserDefinedInfo()
    custom.user_info.add().map_int32["epoch"] = 3
    with SummaryRecord(str(tmp_path)) as record:
        record.add_value("train_lineage", "", train)
        record.add_value("eval_lineage", "", evaluation)
        record.add_value("dataset_graph", "", graph)
        record.add_value("custom_lineage_data", "", custom)
        record.record(5)
    (path,) = list(tmp_path.iterdir())
    assert path.name.endswith("_lineage")
    events = msr.read_lineage(path)
    fields = ("train_lineage", "evaluation_lineage", "dataset_graph", "user_defined_info")
    kinds = ("train_lineage", "eval_lineage", "dataset_graph", "custom_lineage_data")
    for event, field, kind in zip(events, fields, kinds):
        rows = tallyboard.read(str(tmp_path), kind=kind)
        assert rows[["run", "tag", "step", "wall_time"]].values.tolist() == [
            [".", kind, 0, event.wall_time]
        ]
        assert rows.data[0] == getattr(event, field).SerializeToString()
    row = tallyboard.read(str(tmp_path), kind="train_lineage").iloc[0]
    again = msr.TrainLineage.FromString(row.data)
    assert (again.hyper_parameters.learning_rate, again.algorithm.network) == (0.5, "ResNet")
    assert tallyboard.read(str(tmp_path)).empty


def test_tallyboard_ls_lists_a_mindspore_log_dir(tmp_path: Path) -> None:
    write_runs(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "tallyboard", "ls", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = [ln.split()[:5] for ln in out.stdout.splitlines()]
    assert lines[0][:4] == ["run", "kind", "tag", "count"]
    for row in (
        ["train", "scalar", "loss", "40", "0..39"],
        ["train", "image", "input", "3", "0..4"],
        ["train", "tensor", "w", "3", "0..4"],
        ["train", "histogram", "grads", "3", "0..4"],
        ["eval", "scalar", "acc", "4", f"-3..{2**40}"],
    ):
        assert row in lines, out.stdout


def test_fsspec_memory_url_and_arrow_tables(tmp_path: Path) -> None:
    import fsspec

    write_runs(tmp_path / "local")
    fs = fsspec.filesystem("memory")
    for run in ("train", "eval"):
        path = summary_file(tmp_path / "local" / run)
        fs.pipe_file(f"/ms-read-tests/{run}/{path.name}", path.read_bytes())
    try:
        scalars = tallyboard.read("memory://ms-read-tests", table="arrow")
        images = tallyboard.read("memory://ms-read-tests", kind="image", table="arrow")
    finally:
        fs.rm("/ms-read-tests", recursive=True)
    local = tallyboard.read(str(tmp_path / "local"))
    assert scalars.column("value").to_pylist() == local.value.tolist()
    assert scalars.column("run").to_pylist() == local.run.tolist()
    assert images.column_names == [
        "run",
        "tag",
        "step",
        "wall_time",
        "width",
        "height",
        "colorspace",
        "data",
    ]
    assert images.num_rows == 3


def test_a_run_with_a_mirror_is_read_in_the_format_that_holds_the_kind(tmp_path: Path) -> None:
    from tallyboard.faces.summary_record import TrainLineage

    with SummaryRecord(str(tmp_path), tensorboard=True) as record:
        record.add_value("scalar", "loss", np.float32(0.25))
        record.add_value("train_lineage", "lineage", TrainLineage())
        record.record(1)
    assert tallyboard.read(str(tmp_path)).value.tolist() == [0.25]  # not twice
    lineage = tallyboard.read(str(tmp_path), kind="train_lineage")  # only MindSpore holds it
    assert lineage.tag.tolist() == ["train_lineage"]
    with pytest.raises(ValueError, match="formats: unknown format"):
        tallyboard.read(str(tmp_path), formats="nope")
    with pytest.raises(TypeError, match="formats must be"):
        tallyboard.read(str(tmp_path), formats=3)  # type: ignore[arg-type]
