"""Images and float64 histograms read from MindSpore and JSONL files reach the board and
``convert`` whole: every image of one tag and step (several values in the file) is served in
one images summary, byte for byte the file's PNGs, and histograms keep float64.

Checked with TensorBoard's own readers (the data provider's blobs and tensors over gRPC, the
EventAccumulator of what ``convert`` wrote) against the bytes and doubles in the source files
(MindSpore's read by tests/mindspore_reader.py, which checks framing and CRCs).
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mindspore_reader as msr
import numpy as np
import pytest
from board_support import provider_stub
from tallyboard import SummaryRecord, SummaryWriter, convert
from tallyboard.reading.sync import sync
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.proto import summary_pb2
from tensorboard.data.proto import data_provider_pb2 as pb
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.util import tensor_util


def _png(seed: int) -> bytes:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 255, (4, 3, 3), np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


PNGS = [_png(seed) for seed in range(3)]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``events`` (three images in one TF2 summary), ``jsonl`` and ``ms`` converted from it
    (three lines and three MindSpore values of one tag and step), ``hist`` (MindSpore float64
    histograms) and ``hist_jsonl`` converted from it."""
    root = tmp_path_factory.mktemp("row_road")
    src = tmp_path_factory.mktemp("row_road_src")
    with SummaryWriter(src / "events") as w:
        value = summary_pb2.Summary.Value(
            tag="img",
            metadata=image_metadata.create_summary_metadata("", "", converted_to_tensor=True),
            tensor=tensor_util.make_tensor_proto([b"3", b"4", *PNGS]),
        )
        w.add_summary(summary_pb2.Summary(value=[value]), 5)
    assert convert(src / "events", root / "jsonl", to="jsonl").converted == {"image": 3}
    assert convert(src / "events", root / "ms", to="mindspore").converted == {"image": 3}
    rng = np.random.default_rng(0)
    (root / "hist").mkdir()
    with SummaryRecord(str(root / "hist")) as record:
        for step in (1, 2):
            record.add_value("histogram", "w", rng.normal(size=500) / 3)
            record.record(step)
    assert convert(root / "hist", src / "hist_jsonl", to="jsonl").converted == {"histogram": 2}
    (src / "hist_jsonl").rename(root / "hist_jsonl")
    return root


def _ms_file(run: Path) -> Path:
    [path] = [p for p in run.iterdir() if "summary" in p.name]
    return path


def _ms_images(run: Path) -> list[bytes]:
    return [
        v.image.encoded_image
        for e in msr.read_events(_ms_file(run))
        if e.HasField("summary")
        for v in e.summary.value
    ]


def _ms_histograms(run: Path) -> list[tuple[int, Any]]:
    return [
        (e.step, v.histogram)
        for e in msr.read_events(_ms_file(run))
        if e.HasField("summary")
        for v in e.summary.value
    ]


@pytest.fixture(scope="module")
def stub(root: Path) -> Iterator[Any]:
    with provider_stub(root) as stub:
        yield stub


def _blobs(stub: Any, run: str, tag: str) -> list[tuple[int, list[bytes]]]:
    req = pb.ReadBlobSequencesRequest()
    req.plugin_filter.plugin_name = "images"
    req.run_tag_filter.runs.names.append(run)
    req.run_tag_filter.tags.names.append(tag)
    req.downsample.num_points = 100
    [r] = stub.ReadBlobSequences(req).runs
    [t] = r.tags
    out = []
    for step, seq in zip(t.data.step, t.data.values):
        blobs = [
            b"".join(p.data for p in stub.ReadBlob(pb.ReadBlobRequest(blob_key=ref.blob_key)))
            for ref in seq.blob_refs
        ]
        out.append((step, blobs))
    return out


def test_jsonl_lines_hold_the_event_files_pngs_as_they_are(root: Path) -> None:
    blobs = sorted((root / "jsonl" / "blobs").iterdir())
    assert [p.read_bytes() for p in blobs] == PNGS


def test_the_board_serves_every_image_of_a_step_of_jsonl_byte_for_byte(stub: Any) -> None:
    assert _blobs(stub, "jsonl", "img") == [(5, [b"3", b"4", *PNGS])]


def test_the_board_serves_every_image_of_a_step_of_mindspore_byte_for_byte(
    stub: Any, root: Path
) -> None:
    pngs = _ms_images(root / "ms")
    assert len(pngs) == 3 and all(p.startswith(b"\x89PNG") for p in pngs)
    [(step, blobs)] = _blobs(stub, "ms", "img")
    assert step == 5 and blobs[2:] == pngs


@pytest.mark.parametrize("run", ["jsonl", "ms"])
def test_convert_to_event_files_keeps_every_image_of_a_step(
    root: Path, tmp_path: Path, run: str
) -> None:
    summary = convert(root / run, tmp_path / "out", to="tfevents")
    assert summary.converted == {"image": 3} and summary.not_converted == {}
    acc = event_accumulator.EventAccumulator(str(tmp_path / "out"), size_guidance={"tensors": 0})
    acc.Reload()
    [event] = acc.Tensors("img")
    want = PNGS if run == "jsonl" else _ms_images(root / run)
    assert event.step == 5 and list(event.tensor_proto.string_val[2:]) == want
    meta = acc.SummaryMetadata("img")
    assert meta.plugin_data.plugin_name == "images"


@pytest.mark.parametrize("run", ["jsonl", "ms"])
def test_sync_to_event_files_keeps_every_image_of_a_step_in_one_value(
    root: Path, tmp_path: Path, run: str
) -> None:
    shutil.copytree(root / run, tmp_path / run)  # sync remembers what it sent in the log dir
    out = tmp_path / "out"
    summary = sync(tmp_path / run, f"tfevents+{out.as_uri()}")
    assert summary.sent == {"image": 3}
    acc = event_accumulator.EventAccumulator(str(out), size_guidance={"tensors": 0, "images": 0})
    acc.Reload()
    assert acc.Tags()["images"] == []  # not one event per image, as before
    [event] = acc.Tensors("img")
    want = PNGS if run == "jsonl" else _ms_images(root / run)
    assert event.step == 5 and list(event.tensor_proto.string_val[2:]) == want
    assert sync(tmp_path / run, f"tfevents+{out.as_uri()}").total == 0  # nothing sent twice


def _served_histograms(stub: Any, run: str) -> list[tuple[int, np.ndarray]]:
    req = pb.ReadTensorsRequest()
    req.plugin_filter.plugin_name = "histograms"
    req.run_tag_filter.runs.names.append(run)
    req.downsample.num_points = 100
    [r] = stub.ReadTensors(req).runs
    [t] = r.tags
    return [(s, tensor_util.make_ndarray(v)) for s, v in zip(t.data.step, t.data.value)]


def _expected(h: Any) -> np.ndarray:
    """TensorBoard's loader's [left, right, count] rows of a MindSpore histogram, in float64:
    empty buckets at both ends dropped, the outer edges min and max."""
    counts = [float(b.count) for b in h.buckets]
    full = [i for i, c in enumerate(counts) if c > 0]
    start, end = full[0], full[-1]
    inner = [h.buckets[i + 1].left for i in range(start, end)]
    return np.array([[h.min, *inner], [*inner, h.max], counts[start : end + 1]]).T


@pytest.mark.parametrize("run", ["hist", "hist_jsonl"])
def test_the_board_serves_float64_histograms_of_mindspore_and_jsonl(
    stub: Any, root: Path, run: str
) -> None:
    served = _served_histograms(stub, run)
    source = _ms_histograms(root / "hist")
    assert [s for s, _ in served] == [s for s, _ in source] == [1, 2]
    for (_, got), (_, h) in zip(served, source):
        assert got.dtype == np.float64
        want = _expected(h)
        np.testing.assert_array_equal(got, want)
        assert not np.array_equal(want, want.astype(np.float32))  # float32 would differ


def test_convert_of_mindspore_histograms_keeps_their_doubles(root: Path, tmp_path: Path) -> None:
    convert(root / "hist", tmp_path / "out", to="tfevents")
    acc = event_accumulator.EventAccumulator(str(tmp_path / "out"), {"histograms": 0})
    acc.Reload()
    got = [(e.step, e.histogram_value) for e in acc.Histograms("w")]
    assert len(got) == 2
    for (step, proto), (ms_step, h) in zip(got, _ms_histograms(root / "hist")):
        assert step == ms_step
        assert (proto.min, proto.max, proto.sum) == (h.min, h.max, h.sum)
        assert list(proto.bucket_limit) == [b.left for b in h.buckets] + [
            h.buckets[-1].left + h.buckets[-1].width
        ]


def test_the_event_file_image_decoder_gives_the_kinds_payload_bytes_as_they_are() -> None:
    from tallyboard.plugin.registry import get_registry
    from tallyboard_image import decode_tfevents
    from tallyboard_image.encoded import EncodedImages

    value = summary_pb2.Summary.Value(
        tag="img",
        metadata=image_metadata.create_summary_metadata("", "", converted_to_tensor=True),
        tensor=tensor_util.make_tensor_proto([b"3", b"4", *PNGS, b"no image"]),
    )
    *images, junk = decode_tfevents(value, 1, 0.0)
    assert all(type(p) is EncodedImages for p in images)
    assert [(p.images, p.sample, p.width, p.height) for p in images] == [
        ((png,), i, 3, 4) for i, png in enumerate(PNGS)
    ]
    assert junk["data"] == b"no image" and junk["sample"] == 3  # a row: from_row reports it
    kind = get_registry().kinds["image"]
    assert kind.to_row(images[1]) == {
        "width": 3,
        "height": 4,
        "colorspace": 3,
        "data": PNGS[1],
        "sample": 1,
    }
    joined = kind.join(images)
    assert joined.images == tuple(PNGS) and kind.join([*images, junk]) is None


def test_read_gives_each_image_of_an_event_file_as_its_bytes(root: Path, tmp_path: Path) -> None:
    from tallyboard import read

    convert(root / "jsonl", tmp_path / "tb", to="tfevents")
    table = read(tmp_path / "tb", kind="image")
    assert table["data"].tolist() == PNGS and table["sample"].tolist() == [0, 1, 2]
    assert "__payload__" not in table.columns
