"""A kind's facts live once: its payload and row, the dtype table, the name of the scalar kind.

A kind that declares its payload type and ``to_row`` may have decoders that return the payload
itself: ``read`` shows ``to_row``'s fields, ``convert`` and the board write the payload as it is,
no ``from_row`` needed.

The histogram's fields (statistics, ``bucket_limit``, ``bucket``) are declared by the histogram
plugin and used as they are by the tfevents decoder, the JSONL line and its decoder; the numpy
to ``TensorProto`` dtype table is one table, read and written by the tfevents plugin's tensor
helpers and equal to TensorBoard's; and core names the scalar kind in one place, the reader
contract whose columns hold it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from tallyboard import Kind, SummaryWriter, convert, hookimpl, read
from tallyboard.board import serve
from tallyboard.plugin.readers import SCALAR_KIND
from tallyboard.plugin.registry import add_plugin, remove_plugin
from tallyboard_histogram.compute import ROW_FIELDS, from_row, histogram_of
from tallyboard_tfevents.tensors import DTYPES, from_ndarray, to_ndarray
from tensorboard.data.proto import data_provider_pb2 as pb
from tensorboard.data.proto import data_provider_pb2_grpc as pb_grpc
from tensorboard.util import tensor_util

CORE = Path(__file__).parent.parent / "core" / "tallyboard"


def test_a_jsonl_histogram_line_holds_the_kinds_own_fields(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path, sinks=["jsonl"]) as w:
        w.add_histogram("h", np.array([0.1, 1 / 3, 2.0]), 0)
    [line] = [json.loads(x) for x in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert list(line["value"]) == list(ROW_FIELDS)
    row = read(tmp_path, kind="histogram").iloc[0]
    assert row["min"] == 0.1 and row["num"] == 3.0
    h = histogram_of(np.array([0.1, 1 / 3, 2.0]))
    assert row["bucket_limit"] == h.bucket_limits.tolist()
    assert from_row(h.to_row()).to_row() == h.to_row()


def test_a_jsonl_line_written_with_the_old_names_reads_the_same(tmp_path: Path) -> None:
    names = ("min", "max", "num", "sum", "sum_squares", "bucket_limits", "bucket_counts")
    old = dict(zip(names, (0.0, 2.0, 3.0, 3.0, 5.0, [1.0, 2.0], [1.0, 2.0])))
    line = {"wall_time": 1.0, "step": 4, "tag": "h", "kind": "histogram", "value": old}
    (tmp_path / "records.jsonl").write_text(json.dumps(line) + "\n")
    row = read(tmp_path, kind="histogram").iloc[0]
    assert (row["bucket_limit"], row["bucket"], row["sum_squares"]) == ([1.0, 2.0], [1.0, 2.0], 5.0)


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_the_dtype_table_is_tensorboards_and_round_trips(name: str) -> None:
    arr = (np.arange(6) % 2).astype(name).reshape(2, 3)
    proto = from_ndarray(arr)
    assert proto.dtype == tensor_util.make_tensor_proto(arr).dtype == DTYPES[name]
    back = to_ndarray(proto)
    assert back is not None and back.dtype == arr.dtype and back.tolist() == arr.tolist()


def test_strings_are_utf8_in_string_val() -> None:
    proto = from_ndarray(np.array([["é", "b"]]))
    assert list(proto.string_val) == ["é".encode(), b"b"]
    assert to_ndarray(proto).tolist() == [["é".encode(), b"b"]]


def test_core_names_the_scalar_kind_only_in_the_reader_contract() -> None:
    assignment = re.compile(r"^\w+\s*=\s*\"scalar\"\s*$", re.M)
    places = [
        str(path.relative_to(CORE))
        for path in sorted(CORE.rglob("*.py"))
        if assignment.search(path.read_text(encoding="utf-8"))
    ]
    assert places == ["plugin/readers.py"]
    assert SCALAR_KIND == "scalar"


@dataclass(frozen=True)
class Point:
    """A third-party kind's payload: a point, shown as a tensor ``[x, y]``."""

    x: float
    y: float


def _point(value: Any) -> Point:
    x, y = (float(v) for v in value)
    return Point(x, y)


def _point_row(p: Point) -> dict[str, Any]:
    return {"x": p.x, "y": p.y}


def _encode_point(tag: str, step: int | None, wall_time: float, p: Point) -> bytes:
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import DATA_CLASS_TENSOR, SummaryValue, metadata

    tensor = from_ndarray(np.array([p.x, p.y]))
    meta = metadata("point", data_class=DATA_CLASS_TENSOR)
    return summary_event(step, wall_time, [SummaryValue(tag=tag, metadata=meta, tensor=tensor)])


def _decode_point(value: Any, step: int, wall_time: float) -> Point | None:
    """Returns the payload itself, no dict."""
    if value.metadata.plugin_data.plugin_name != "point":
        return None
    x, y = to_ndarray(value.tensor).tolist()
    return Point(x, y)


def _decode_point_jsonl(value: Any, step: int, wall_time: float) -> tuple[str, Point] | None:
    return None if not isinstance(value, dict) else ("moved", Point(value["x"], value["y"]))


class PointPlugin:
    """A kind with no from_row: its decoders give payloads, its rows come from to_row."""

    @hookimpl
    def register_kinds(self, register: Any) -> None:
        register(Kind(name="point", convert=_point, payload=Point, to_row=_point_row))

    @hookimpl
    def register_encoders(self, register: Any) -> None:
        from tallyboard_jsonl import encoder_for

        register("point", "tfevents", _encode_point)
        register("point", "jsonl", encoder_for("point", _point_row))

    @hookimpl
    def register_decoders(self, register: Any) -> None:
        register("tfevents", "point", _decode_point)
        register("jsonl", "point", _decode_point_jsonl)


@pytest.fixture
def points(tmp_path: Path) -> Iterator[Path]:
    add_plugin(PointPlugin(), "point-test")
    try:
        for sink in ("tfevents", "jsonl"):
            with SummaryWriter(tmp_path / sink, sinks=[sink]) as w:
                w.add_value("point", "p", (1.5, -2.0), 3)
        yield tmp_path
    finally:
        remove_plugin("point-test")


def test_a_decoder_may_return_the_kinds_payload(points: Path) -> None:
    df = read(points / "tfevents", kind="point")
    assert df.columns.tolist() == ["run", "tag", "step", "wall_time", "x", "y"]
    assert df[["tag", "step", "x", "y"]].values.tolist() == [["p", 3, 1.5, -2.0]]
    moved = read(points / "jsonl", kind="point")  # (tag, payload): read under that tag
    assert moved[["tag", "x", "y"]].values.tolist() == [["moved", 1.5, -2.0]]


def test_convert_and_the_board_write_the_payload_a_decoder_gave(
    points: Path, tmp_path: Path
) -> None:
    summary = convert(points / "jsonl", tmp_path / "out", to="tfevents")  # no from_row
    assert summary.converted == {"point": 1} and not summary.not_converted
    assert read(tmp_path / "out", kind="point")[["tag", "x"]].values.tolist() == [["moved", 1.5]]
    with serve(str(points / "jsonl"), reload=0) as server:  # the row road: no from_row either
        assert server.wait_loaded(60)
        channel = grpc.insecure_channel(server.address)
        req = pb.ReadTensorsRequest(downsample=pb.Downsample(num_points=10))
        req.plugin_filter.plugin_name = "point"
        res = pb_grpc.TensorBoardDataProviderStub(channel).ReadTensors(req)
        channel.close()
        assert not server.loader.problems
    [run] = res.runs
    [tag] = run.tags
    assert tag.tag_name == "moved"
    assert tensor_util.make_ndarray(tag.data.value[0]).tolist() == [1.5, -2.0]


def test_to_row_needs_a_payload_type() -> None:
    with pytest.raises(TypeError, match="to_row must be callable, and given with payload"):
        Kind(name="bad", convert=_point, to_row=_point_row)
    kind = Kind(name="p", convert=_point, payload=Point, to_row=_point_row)
    assert kind.rebuild({"tag": "t", "step": 1, "x": 1.0, "y": 2.0}) == ("t", Point(1.0, 2.0))
    with pytest.raises(ValueError, match="the row is no Point"):
        kind.rebuild({"tag": "t", "z": 1.0})
    bare = Kind(name="b", convert=float)
    with pytest.raises(ValueError, match="holds no payload and there is no from_row"):
        bare.rebuild({"tag": "t", "value": 1.0})


class Segment:
    """A payload that is no dataclass: rebuilt by its kind's from_row."""

    def __init__(self, points: Any, label: bytes) -> None:
        self.points, self.label = np.asarray(points, np.float64), label


class RowsOnlyPlugin:
    """Kinds that declare their rows and nothing for JSONL: the format writes and reads them."""

    @hookimpl
    def register_kinds(self, register: Any) -> None:
        register(Kind(name="spot", convert=_point, payload=Point, to_row=_point_row))
        register(
            Kind(
                name="segment",
                convert=lambda v: Segment(*v),
                payload=Segment,
                to_row=lambda s: {"points": s.points, "label": s.label},
                from_row=lambda row: (row["tag"], Segment(row["points"], row["label"])),
            )
        )
        register(Kind(name="opaque", convert=float))  # no row: JSONL cannot write it

    @hookimpl
    def register_encoders(self, register: Any) -> None:
        register("spot", "tfevents", _encode_point)

    @hookimpl
    def register_decoders(self, register: Any) -> None:
        register("tfevents", "spot", _decode_point)


def test_jsonl_writes_and_reads_any_kind_that_declares_its_row(tmp_path: Path) -> None:
    add_plugin(RowsOnlyPlugin(), "rows-test")
    try:
        with SummaryWriter(tmp_path / "run", sinks=["jsonl"]) as w:
            w.add_value("spot", "s", (0.5, 4.0), 2)
            w.add_value("segment", "seg", ([[0, 1], [2, 3.5]], b"\x00label"), 2)
            with pytest.warns(UserWarning, match="cannot encode kind 'opaque'"):
                w.add_value("opaque", "o", 1.0, 2)
        spot = read(tmp_path, kind="spot")
        assert spot[["tag", "step", "x", "y"]].values.tolist() == [["s", 2, 0.5, 4.0]]
        seg = read(tmp_path, kind="segment").iloc[0]
        assert seg["points"] == [[0.0, 1.0], [2.0, 3.5]] and seg["label"] == b"\x00label"
        summary = convert(tmp_path, tmp_path.parent / "events", to="tfevents")
        assert summary.converted == {"spot": 1}  # rebuilt from the row's fields (a dataclass)
        back = read(tmp_path.parent / "events", kind="spot")
        assert back[["tag", "step", "x", "y"]].values.tolist() == [["s", 2, 0.5, 4.0]]
    finally:
        remove_plugin("rows-test")


def test_a_payload_named_by_its_path_is_imported_on_first_use() -> None:
    kind = Kind(name="lazy", convert=float, payload="fractions:Fraction")
    assert "payload_types" not in vars(kind)  # nothing imported yet
    from fractions import Fraction

    assert kind.payload_types == (Fraction,)
    half = Fraction(1, 2)
    assert kind.payload_of(half) is half
    with pytest.raises(TypeError, match="payload 'fractions:nothing' names no class"):
        _ = Kind(name="bad", convert=float, payload="fractions:nothing").payload_types
    with pytest.raises(TypeError, match="payload must be a type or a tuple of types"):
        Kind(name="bad", convert=float, payload="no path")


def test_the_histogram_decoders_return_the_kinds_payload(tmp_path: Path) -> None:
    from tallyboard.plugin.registry import get_registry
    from tallyboard_histogram.compute import Histogram
    from tallyboard_histogram.tfevents import decode
    from tensorboard.compat.proto import summary_pb2

    kind = get_registry().kinds["histogram"]
    assert kind.payload_types == (Histogram,) and kind.to_row is not None
    h = histogram_of(np.arange(10.0))
    proto = summary_pb2.HistogramProto(
        min=h.min, max=h.max, num=h.num, sum=h.sum, sum_squares=h.sum_squares
    )
    proto.bucket_limit.extend(h.bucket_limits.tolist())
    proto.bucket.extend(h.bucket_counts.tolist())
    got = decode(summary_pb2.Summary.Value(tag="h", histo=proto), 1, 0.0)
    assert isinstance(got, Histogram) and got.to_row() == h.to_row()
    with SummaryWriter(tmp_path, sinks=["jsonl"]) as w:  # no encoder of its own: its row
        w.add_histogram("h", np.arange(10.0), 1)
    [row] = read(tmp_path, kind="histogram").to_dict("records")
    assert {k: row[k] for k in ROW_FIELDS} == h.to_row()


def test_tensors_go_to_jsonl_as_their_row_and_come_back_with_their_dtype(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing import event_accumulator

    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    with SummaryWriter(tmp_path / "src") as w:
        w.add_tensor("ints", ints, 2)
    with SummaryWriter(tmp_path / "src" / "words") as w:
        w.add_tensor("words", np.array(["ab", "cde"]), 2)
    summary = convert(tmp_path / "src", tmp_path / "jsonl", to="jsonl")
    assert summary.converted == {"tensor": 2} and not summary.not_converted
    back = convert(tmp_path / "jsonl" / "words", tmp_path / "words", to="tfevents")
    assert back.converted == {"tensor": 1}, back.reasons
    [words] = read(tmp_path / "words", kind="tensor")["value"]
    assert words.tolist() == ["ab", "cde"]
    [line] = (tmp_path / "jsonl" / "records.jsonl").read_text().splitlines()
    assert json.loads(line)["value"] == {"dtype": "int32", "shape": [2, 3], "value": ints.tolist()}
    assert convert(tmp_path / "jsonl", tmp_path / "back", to="tfevents").converted == {"tensor": 2}
    acc = event_accumulator.EventAccumulator(str(tmp_path / "back"))
    acc.Reload()
    [event] = acc.Tensors("ints")
    got = tensor_util.make_ndarray(event.tensor_proto)
    assert got.dtype == np.int32 and got.tolist() == ints.tolist()


def test_pr_curves_go_to_jsonl_as_their_row_and_come_back_the_same(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing import event_accumulator

    rng = np.random.default_rng(3)
    with SummaryWriter(tmp_path / "src") as w:
        w.add_pr_curve("pr", rng.integers(0, 2, 50), rng.random(50), 4, num_thresholds=7)
    [before] = read(tmp_path / "src", kind="pr_curve").to_dict("records")
    assert convert(tmp_path / "src", tmp_path / "jsonl", to="jsonl").converted == {"pr_curve": 1}
    [line] = (tmp_path / "jsonl" / "records.jsonl").read_text().splitlines()
    assert json.loads(line)["value"]["num_thresholds"] == 7
    [after] = read(tmp_path / "jsonl", kind="pr_curve").to_dict("records")
    assert after["precision"] == before["precision"].tolist()
    assert convert(tmp_path / "jsonl", tmp_path / "back", to="tfevents").converted == {
        "pr_curve": 1
    }
    tensors = []
    for run in ("src", "back"):
        acc = event_accumulator.EventAccumulator(str(tmp_path / run))
        acc.Reload()
        [event] = acc.Tensors("pr")
        tensors.append(tensor_util.make_ndarray(event.tensor_proto))
    assert tensors[0].dtype == tensors[1].dtype == np.float32
    np.testing.assert_array_equal(tensors[0], tensors[1])
