"""Decoders return their kind's payload, not a dict: text, audio, scalar, graphs and lineage
(issue 50 item 1).

Files are written with TensorBoard's own protos or tallyboard's writers, read back with
``tallyboard.read``, the decoders as registered, and TensorBoard's EventAccumulator.
"""

from __future__ import annotations

import io
import json
import math
import warnings
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import load_run
from tallyboard import Kind, SummaryWriter, convert, read
from tallyboard.plugin.registry import get_registry
from tensorboard.compat.proto import summary_pb2
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.util import tensor_util


def _decoder(fmt: str, kind: str) -> Any:
    return get_registry().decoders[(fmt, kind)]


def _value(tag: str, meta: Any, array: Any) -> Any:
    from tallyboard_tfevents.proto import SummaryValue

    proto = summary_pb2.Summary.Value(
        tag=tag, metadata=meta, tensor=tensor_util.make_tensor_proto(array)
    )
    return SummaryValue.FromString(proto.SerializeToString())


def _wav(samples: list[int], rate: int = 8000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.array(samples, "<i2").tobytes())
    return out.getvalue()


def test_the_scalar_decoder_gives_a_float_and_a_tensor_form_zero_is_read(tmp_path: Path) -> None:
    meta = scalar_metadata.create_summary_metadata("", "")
    decode = _decoder("tfevents", "scalar")
    assert decode(_value("x", meta, np.float32(0.25)), 0, 0.0) == 0.25
    assert type(decode(_value("x", meta, np.float64(0.0)), 0, 0.0)) is float
    with SummaryWriter(tmp_path) as w:  # TF2's form: a rank-0 tensor, 0.0 among the values
        for step, x in enumerate([0.0, 1.5, 0.0]):
            value = summary_pb2.Summary.Value(
                tag="loss", metadata=meta, tensor=tensor_util.make_tensor_proto(np.float32(x))
            )
            w.add_summary(summary_pb2.Summary(value=[value]), step)
    df = read(str(tmp_path))
    assert df[["tag", "step", "value"]].values.tolist() == [
        ["loss", 0, 0.0],
        ["loss", 1, 1.5],
        ["loss", 2, 0.0],
    ]


def test_the_text_decoder_gives_a_read_only_table_whose_row_read_shows(tmp_path: Path) -> None:
    table = np.array([["epoch", "acc"], ["1", "0.91"]])
    meta = text_metadata.create_summary_metadata("", "")
    payload = _decoder("tfevents", "text")(_value("t", meta, table.astype(object)), 0, 0.0)
    assert isinstance(payload, np.ndarray) and payload.shape == (2, 2)
    assert not payload.flags.writeable
    assert payload.tolist() == table.tolist()
    text = get_registry().kinds["text"]
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "hello", 3)
        w.add_summary(
            summary_pb2.Summary(
                value=[
                    summary_pb2.Summary.Value(tag="t", metadata=meta, tensor=payload_proto(table))
                ]
            ),
            4,
        )
    df = read(str(tmp_path), kind="text")
    rows = {r["tag"]: r for _, r in df.iterrows()}
    assert (rows["notes/text_summary"]["value"], rows["notes/text_summary"]["shape"]) == (
        "hello",
        [1],
    )
    want = text.to_row(payload)
    assert rows["t"]["value"] == want["value"] == "epoch\nacc\n1\n0.91"
    assert rows["t"]["shape"] == want["shape"] == [2, 2]
    assert "__payload__" not in df.columns


def payload_proto(table: Any) -> Any:
    return tensor_util.make_tensor_proto(table.astype(object))


def test_text_read_under_its_suffix_is_written_back_under_the_logged_tag(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path / "src") as w:
        w.add_text("notes", "**bold**", 2)
    summary = convert(tmp_path / "src", tmp_path / "jsonl", to="jsonl")
    assert summary.converted.get("text") == 1, summary
    lines = [json.loads(line) for line in (tmp_path / "jsonl" / "records.jsonl").open()]
    assert [(r["tag"], r["kind"], r["value"]) for r in lines] == [("notes", "text", "**bold**")]
    convert(tmp_path / "jsonl", tmp_path / "back", to="tfevents")
    acc = load_run(tmp_path / "back")
    assert acc.Tags()["tensors"] == ["notes/text_summary"]  # not notes/text_summary/text_summary
    (event,) = acc.Tensors("notes/text_summary")
    assert tensor_util.make_ndarray(event.tensor_proto).tolist() == [b"**bold**"]


def test_a_kind_refuses_a_log_tag_that_is_not_callable() -> None:
    with pytest.raises(TypeError, match="log_tag must be callable"):
        Kind(name="k", convert=str, log_tag="tag")  # type: ignore[arg-type]


def test_the_audio_decoder_gives_encoded_clips(tmp_path: Path) -> None:
    from tallyboard_audio.encoded import EncodedAudio
    from tallyboard_tfevents.proto import SummaryValue

    wav = _wav([0, 1000, -1000, 32767])
    proto = summary_pb2.Summary.Value(
        tag="a",
        audio=summary_pb2.Summary.Audio(
            sample_rate=8000, num_channels=1, length_frames=4, encoded_audio_string=wav,
            content_type="audio/wav",
        ),
    )  # fmt: skip
    (clip,) = _decoder("tfevents", "audio")(
        SummaryValue.FromString(proto.SerializeToString()), 0, 0.0
    )
    assert isinstance(clip, EncodedAudio)
    assert (clip.data, clip.sample_rate, clip.num_channels, clip.length) == (wav, 8000, 1, 4)
    assert clip.samples.ravel().tolist() == [0, 1000, -1000, 32767]
    ogg = EncodedAudio(b"OggS\x00\x02", "audio/ogg", 48000.0, 2, 10)
    with pytest.raises(ValueError, match="only WAV audio has samples"):
        ogg.samples  # noqa: B018


def test_a_jsonl_clip_reaches_event_files_as_the_side_file_holds_it(tmp_path: Path) -> None:
    sound = np.sin(np.linspace(0, 20, 800)) * 0.5
    with SummaryWriter(tmp_path / "src", sinks=["jsonl"]) as w:
        w.add_audio("voice", sound, 7, sample_rate=8000)
    (side,) = (tmp_path / "src" / "blobs").iterdir()
    df = read(str(tmp_path / "src"), kind="audio")
    assert df["data"].tolist() == [side.read_bytes()]
    assert df["path"].tolist() == [str(side)]
    summary = convert(tmp_path / "src", tmp_path / "back", to="tfevents")
    assert summary.converted.get("audio") == 1, summary
    (event,) = load_run(tmp_path / "back").Audio("voice")
    assert event.encoded_audio_string == side.read_bytes()
    assert (event.step, event.sample_rate, event.length_frames) == (7, 8000, 800)


def test_a_keras_model_is_its_json_text_and_reaches_jsonl_by_its_row(tmp_path: Path) -> None:
    config = json.dumps({"class_name": "Sequential", "config": {"name": "m", "layers": []}})
    with SummaryWriter(tmp_path / "src") as w:
        w.add_value("keras_model", "model", config, 0)
    df = read(str(tmp_path / "src"), kind="keras_model")
    assert df[["tag", "config"]].values.tolist() == [["model", config]]
    summary = convert(
        tmp_path / "src", tmp_path / "jsonl", to="jsonl"
    )  # no JSONL encoder of its own
    assert summary.converted.get("keras_model") == 1, summary
    line = json.loads((tmp_path / "jsonl" / "records.jsonl").read_text())
    assert (line["kind"], line["value"]) == ("keras_model", {"config": config})
    convert(tmp_path / "jsonl", tmp_path / "back", to="tfevents")
    again = read(str(tmp_path / "back"), kind="keras_model")
    assert again[["tag", "step", "config"]].values.tolist() == [["model", 0, config]]


def test_a_mindspore_histogram_keeps_its_counts_of_no_finite_value_through_convert(
    tmp_path: Path,
) -> None:
    import mindspore_reader as msr
    from tallyboard import SummaryRecord
    from tallyboard_mindspore.decoders import MindSporeHistogram

    with SummaryRecord(str(tmp_path / "src")) as record:
        record.add_value("histogram", "out", np.array([0.5, np.nan, np.inf, -np.inf, 1.5]))
        record.add_value("histogram", "all_nan", np.array([np.nan, np.nan]))
        record.record(1)
    decoders = get_registry().decoders
    (summary,) = (tmp_path / "src").glob("*_MS")
    from tallyboard_mindspore.reader import MindSporeValue

    got = {}
    for _, tag, _, h in msr.values(summary):
        value = MindSporeValue(tag, 5, 9, h.SerializeToString())
        got[tag] = decoders[("mindspore", "histogram")](value, 1, 0.0)
    assert isinstance(got["out"], MindSporeHistogram)
    assert (got["out"].nan_count, got["out"].pos_inf_count, got["out"].neg_inf_count) == (1, 1, 1)
    assert isinstance(got["all_nan"], dict) and got["all_nan"]["nan_count"] == 2  # no bucket
    result = convert(tmp_path / "src", tmp_path / "dst", to="mindspore")
    assert result.converted.get("histogram") == 1, result  # the bucketless one is no Histogram
    (again,) = (tmp_path / "dst").glob("*_MS")
    ((_, tag, _, h),) = msr.values(again)
    assert tag == "out"
    assert (h.nan_count, h.pos_inf_count, h.neg_inf_count, h.count) == (1, 1, 1, 5)


def _scalar_records(path: Path) -> None:
    """Tensor-form scalars (float, double, TF2's content) among plain ones, with the values
    and steps that test a byte template: NaN, infinities, -0.0, negative and large steps,
    a tag whose metadata comes later, and a tag that is once no scalar."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.plugins.text import metadata as text_meta

    scalars = scalar_metadata.create_summary_metadata("", "")
    start = plugin_data_pb2.SessionStartInfo(hparams={"lr": struct_pb2.Value(number_value=0.1)})
    hparams = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name="hparams",
            content=plugin_data_pb2.HParamsPluginData(session_start_info=start).SerializeToString(),
        )
    )
    numbers = [0.0, -0.0, 1.5, float("nan"), float("inf"), -float("inf"), 3e38, 1e-40]
    values = []
    for i in range(400):
        x = numbers[i % len(numbers)] if i % 3 else i * 0.25
        step = [i, -i, 2**40 + i][i % 3]
        values.append((step, "f32", scalars, np.float32(x)))
        values.append((step, "f64", scalars if i == 0 else None, np.float64(x)))
        values.append((step, "plain", None, x))
        if i == 200:  # the plain tag gets metadata of a plugin no kind decodes
            values.append((step, "plain", summary_pb2.SummaryMetadata(
                plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="nobody")
            ), x))  # fmt: skip
        if i == 300:
            values.append(
                (step, "f32", text_meta.create_summary_metadata("", ""), np.array([b"t"]))
            )
        # a negative step: decoded one by one; from the 250th on, the tag's remembered metadata
        # is the hparams plugin's, so its values are no scalars (as TF1's metadata rule says)
        values.append((-(i + 1), "neg", hparams if i == 250 else None, float(i)))
    from tallyboard.records.framing import frame
    from tensorboard.compat.proto import event_pb2

    frames = []  # as TensorFlow writes them: wall_time, step, summary, in field order
    for k, (step, tag, meta, x) in enumerate(values):
        if type(x) is float:
            value = summary_pb2.Summary.Value(tag=tag, simple_value=x, metadata=meta)
        else:
            value = summary_pb2.Summary.Value(
                tag=tag, metadata=meta, tensor=tensor_util.make_tensor_proto(x)
            )
        event = event_pb2.Event(
            wall_time=1e9 + k, step=step, summary=summary_pb2.Summary(value=[value])
        )
        frames.append(frame(event.SerializeToString()))
    (path / "events.out.tfevents.1.tf2").write_bytes(b"".join(frames))


def test_scalar_records_read_by_template_match_those_decoded_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tallyboard_tfevents import reader

    _scalar_records(tmp_path)
    read_by_template = []
    templated_fn = reader.EventFileReader._templated

    def counted(self: Any, payload: bytes, batch: Any) -> bool:
        read_by_template.append(templated_fn(self, payload, batch))
        return read_by_template[-1]

    monkeypatch.setattr(reader.EventFileReader, "_templated", counted)
    templated = read(str(tmp_path), workers=1)
    assert sum(read_by_template) > 790  # the tensor-form ones (plain ones are read in bulk)
    read_at_once = []  # a chunk's records matched to the templates of the chunks before it
    by_templates = reader.EventFileReader._by_templates

    def counted_at_once(self: Any, *args: Any) -> Any:
        fast, names, cols = by_templates(self, *args)
        read_at_once.append(int(fast.sum() - args[4][0].sum()))
        return fast, names, cols

    monkeypatch.setattr(reader.EventFileReader, "_by_templates", counted_at_once)
    monkeypatch.setattr(reader.EventFileReader, "chunk_size", 4096)
    chunked = read(str(tmp_path), workers=1)
    assert sum(read_at_once) > 500
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = read(str(tmp_path), kind="text")
    monkeypatch.setattr(reader, "_MAX_TEMPLATES", 0)  # every record decoded by protobuf
    one_by_one = read(str(tmp_path), workers=1)
    # f32's text value is no scalar, plain's extra value is one, neg's from the 250th are hparams
    assert len(templated) == 400 * 3 + 1 + 250
    assert len(read(str(tmp_path), kind="hparams")) == 1  # one run, its hparams
    assert text["tag"].tolist() == ["f32"]
    cols = ["tag", "step", "wall_time"]
    for got in (templated, chunked):
        assert got[cols].values.tolist() == one_by_one[cols].values.tolist()
        assert np.array_equal(got["value"], one_by_one["value"], equal_nan=True)
        signs = [math.copysign(1, v) for v in got["value"]]
        assert signs == [math.copysign(1, v) for v in one_by_one["value"]]
    acc = load_run(tmp_path)
    for tag in ("f32", "f64"):
        events = [e for e in acc.Tensors(tag) if e.tensor_proto.dtype != 7]  # not the text
        want = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in events]
        got = templated[templated.tag == tag][["step", "value"]].values.tolist()
        assert len(got) == len(want) == 400
        assert np.array_equal(np.array(got), np.array(want), equal_nan=True)


def test_read_varint_reads_what_varint_writes_and_refuses_a_truncated_one() -> None:
    from tallyboard.records.wire import read_varint, varint

    for n in (0, 1, 127, 128, 300, 2**40, -1, -(2**63)):
        data = b"\x07" + varint(n) + b"\x01"
        assert read_varint(data, 1) == (n % 2**64, len(data) - 1)
    with pytest.raises(ValueError, match="truncated or overlong varint"):
        read_varint(b"\x80\x80", 0)
    with pytest.raises(ValueError, match="truncated or overlong varint"):
        read_varint(b"\xff" * 11, 0)


_FIXTURES = Path(__file__).parent / "fixtures" / "world"


def _graph_event(**fields: Any) -> Any:
    from tallyboard_tfevents.proto import Event

    return Event(**fields)


def test_the_graph_decoders_give_the_serialized_message_and_its_tag() -> None:
    from tallyboard_tfevents.proto import TaggedRunMetadata

    graph = _decoder("tfevents", "graph")
    assert graph(_graph_event(graph_def=b"\n\x03\n\x01a"), 0, 0.0) == (
        "__run_graph__",
        b"\n\x03\n\x01a",
    )
    assert graph(_graph_event(file_version="brain.Event:2"), 0, 0.0) is None
    tagged = TaggedRunMetadata(tag="step1", run_metadata=b"\x01")
    assert _decoder("tfevents", "run_metadata")(
        _graph_event(tagged_run_metadata=tagged), 0, 0.0
    ) == ("step1", b"\x01")
    assert _decoder("tfevents", "meta_graph")(_graph_event(meta_graph_def=b"\x02"), 0, 0.0) == (
        "__meta_graph__",
        b"\x02",
    )
    rows = get_registry().kinds  # the rows are the kinds', declared once
    assert rows["graph"].to_row(b"\xff\xff") == {"graph_def": b"\xff\xff", "num_nodes": None}
    assert rows["graph"].to_row(b"\n\x03\n\x01a")["num_nodes"] == 1


@pytest.mark.parametrize("run", ["tf1", "torch"])
def test_graphs_go_to_jsonl_by_their_rows_and_back_byte_for_byte(tmp_path: Path, run: str) -> None:
    """No JSONL encoder or decoder of the graph kinds: the generic row road carries them."""
    source = _FIXTURES / run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixtures' summaries no plugin claims
        there = convert(source, tmp_path / "jsonl", to="jsonl")
        back = convert(tmp_path / "jsonl", tmp_path / "back", to="tfevents")
        before, after = load_run(source), load_run(tmp_path / "back")
    kinds = ("graph", "run_metadata", "meta_graph") if run == "tf1" else ("graph", "run_metadata")
    for kind in kinds:
        assert there.converted.get(kind) == 1 and back.converted.get(kind) == 1, (there, back)
    lines = [json.loads(x) for x in (tmp_path / "jsonl" / "records.jsonl").read_text().splitlines()]
    (graph_line,) = [x for x in lines if x["kind"] == "graph"]
    assert graph_line["value"]["graph_def"]["path"].startswith("blobs/")
    assert graph_line["value"]["num_nodes"] == len(before.Graph().node) > 0
    assert after.Graph() == before.Graph()
    (tag,) = before.Tags()["run_metadata"]
    assert after.Tags()["run_metadata"] == [tag]
    assert after.RunMetadata(tag) == before.RunMetadata(tag)
    if run == "tf1":
        assert after.MetaGraph() == before.MetaGraph()
    for kind, field in (("graph", "graph_def"), ("run_metadata", "run_metadata")):
        table, first = read(str(tmp_path / "jsonl"), kind=kind), read(str(source), kind=kind)
        assert table.columns.tolist() == first.columns.tolist()
        again = read(str(tmp_path / "back"), kind=kind)  # the bytes as the source holds them
        assert table[field].tolist() == again[field].tolist() == first[field].tolist()


def test_lineage_goes_to_jsonl_by_its_rows_and_back_to_a_lineage_file_byte_for_byte(
    tmp_path: Path,
) -> None:
    """The lineage decoders give the serialized message; its row (``data``) is the kind's, so
    JSONL holds lineage with no encoder or decoder of its own, and the lineage file written
    back (read with tests/mindspore_reader.py, framing and CRCs checked) holds the same bytes."""
    import mindspore_reader as msr
    from tallyboard import DatasetGraph, SummaryRecord, TrainLineage, UserDefinedInfo

    custom = UserDefinedInfo()
    custom.map_str["note"] = "first"
    train = TrainLineage()
    train.hyper_parameters.learning_rate = 0.1
    data = DatasetGraph()
    data.children.add()
    with SummaryRecord(str(tmp_path / "ms")) as record:
        for step, (kind, message) in enumerate(
            [("custom_lineage_data", custom), ("train_lineage", train), ("dataset_graph", data)]
        ):
            record.add_value(kind, kind, message)
            record.record(step + 1)
    kinds = ("custom_lineage_data", "train_lineage", "dataset_graph")
    there = convert(tmp_path / "ms", tmp_path / "jsonl", to="jsonl")
    back = convert(tmp_path / "jsonl", tmp_path / "back", to="mindspore")
    for kind in kinds:
        assert there.converted.get(kind) == 1 and back.converted.get(kind) == 1, (there, back)
    lines = [json.loads(x) for x in (tmp_path / "jsonl" / "records.jsonl").read_text().splitlines()]
    # the lineage file's hyper-parameters (the hparams kind's row, made by the reader) too
    assert sorted(x["kind"] for x in lines) == sorted(["hparams", *kinds])
    assert all(x["value"]["data"]["path"].startswith("blobs/") for x in lines if x["kind"] in kinds)

    def messages(run: Path) -> list[bytes]:
        (path,) = run.glob("*_lineage")
        out = []
        for event in msr.read_lineage(path):
            out += [v.SerializeToString() for f, v in event.ListFields() if f.number in (6, 9, 10)]
        return out

    written = [custom.SerializeToString(), train.SerializeToString(), data.SerializeToString()]
    assert messages(tmp_path / "ms") == messages(tmp_path / "back") == written
    for kind, message in zip(kinds, written):
        for run in ("ms", "jsonl", "back"):
            table = read(str(tmp_path / run), kind=kind)
            assert table.columns.tolist() == ["run", "tag", "step", "wall_time", "data"]
            assert table["data"].tolist() == [message], (run, kind)
    assert read(str(tmp_path / "back"), kind="hparams").drop(columns="run").to_dict("records") == [
        {"learning_rate": 0.1, "custom/note": "first"}
    ]


def test_a_custom_scalars_layout_is_its_payload_and_goes_to_jsonl_and_back_as_written(
    tmp_path: Path,
) -> None:
    """The layout's payload is a ChartLayout (its serialized Layout), which a reader cannot
    take for ``(tag, payload)`` as it could a tuple of categories; JSONL carries it by its row."""
    from tallyboard_custom_scalars.message import ChartLayout

    source = _FIXTURES / "torch"
    table = read(str(source), kind="custom_scalars")
    (data,) = table["data"].tolist()
    kind = get_registry().kinds["custom_scalars"]
    assert kind.payload_types == (ChartLayout,)
    assert kind.to_row(ChartLayout(data)) == {"layout": table["layout"][0], "data": data}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixtures' values JSONL cannot hold
        there = convert(source, tmp_path / "jsonl", to="jsonl")
        back = convert(tmp_path / "jsonl", tmp_path / "back", to="tfevents")
    assert there.converted.get("custom_scalars") == back.converted.get("custom_scalars") == 1
    again = read(str(tmp_path / "jsonl"), kind="custom_scalars")
    assert again.columns.tolist() == table.columns.tolist()
    assert again["data"].tolist() == [data] and again["layout"].tolist() == table["layout"].tolist()
    (event,) = load_run(tmp_path / "back").Tensors("custom_scalars__config__")
    assert event.tensor_proto.string_val == [data]
    with SummaryWriter(tmp_path / "logged") as w:  # logged, then read: the payload again
        w.add_value("custom_scalars", "any", {"Losses": {"both": ["Multiline", ["a", "b"]]}})
    logged = read(str(tmp_path / "logged"), kind="custom_scalars")
    assert logged["layout"].tolist() == [{"Losses": {"both": ["Multiline", ["a", "b"]]}}]
    with pytest.raises(TypeError, match="value must be a dict"):
        kind.convert(["not", "a", "layout"])


def test_an_anf_graph_goes_to_jsonl_by_its_row_and_back_to_a_mindspore_file_as_written(
    tmp_path: Path,
) -> None:
    import mindspore_reader as msr
    from tallyboard import SummaryRecord
    from tallyboard_mindspore.graphs import messages

    graph = messages()["anf.GraphProto"]()
    graph.node.add(name="1", op_type="Mul", scope="Default", full_name="Default/Mul-op0")
    data = graph.SerializeToString()
    with SummaryRecord(str(tmp_path / "ms")) as record:
        record.add_value("graph", "net", b"\x22" + bytes([len(data)]) + data)  # ModelProto.graph
        record.record(1)
    assert _decoder("mindspore", "anf_graph") is not None
    there = convert(tmp_path / "ms", tmp_path / "jsonl", to="jsonl")
    back = convert(tmp_path / "jsonl", tmp_path / "back", to="mindspore")
    assert there.converted.get("anf_graph") == back.converted.get("anf_graph") == 1
    for run in ("ms", "jsonl", "back"):
        table = read(str(tmp_path / run), kind="anf_graph")
        assert table.columns.tolist() == ["run", "tag", "step", "wall_time", "data"]
        assert table["data"].tolist() == [data], run
    (summary,) = (tmp_path / "back").glob("*_MS")
    graphs = [
        e.graph_def.SerializeToString() for e in msr.read_events(summary) if e.HasField("graph_def")
    ]
    assert graphs == [data]


def test_sync_sends_the_payloads_decoders_give(tmp_path: Path) -> None:
    """sync rebuilds a row as convert does (``Kind.rebuild``): the payload a decoder gave, as it
    is, so kinds whose decoders give payloads (layouts, text, audio, images) are sent, not
    refused by ``convert``."""
    import shutil

    from tallyboard.reading.sync import sync

    source = shutil.copytree(_FIXTURES / "torch", tmp_path / "src")  # sync's state goes there
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixture's embedding: not an event-file kind
        summary = sync(source, to=f"tfevents://{tmp_path / 'out'}")
    assert summary.not_sent == {"embedding": 1}, summary.reasons
    for kind in ("custom_scalars", "text", "audio", "image", "graph"):
        assert summary.sent.get(kind), (kind, summary)
    acc = load_run(tmp_path / "out")
    (event,) = acc.Tensors("custom_scalars__config__")
    assert (
        event.tensor_proto.string_val
        == read(str(_FIXTURES / "torch"), kind="custom_scalars")["data"].tolist()
    )


def test_hparams_are_their_payload_and_go_to_jsonl_and_back_by_their_rows(tmp_path: Path) -> None:
    """The hparams decoder gives an HParamsSummary carrying the file's plugin data; the kind's
    row (part, hparams, content) is declared once, so JSONL holds hparams with no encoder of its
    own: the experiment and session end come back byte for byte, the session start's values as
    they were."""
    from tallyboard_hparams import HParamsSummary
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea
    from tensorboard.plugins.hparams import plugin_data_pb2

    source = _FIXTURES / "torch" / "hparams_run"
    there = convert(source, tmp_path / "jsonl", to="jsonl")
    back = convert(tmp_path / "jsonl", tmp_path / "back", to="tfevents")
    assert there.converted.get("hparams") == back.converted.get("hparams") == 3, (there, back)

    def parts(run: Path) -> dict[str, Any]:
        acc = pea.EventAccumulator(str(run))
        acc.Reload()
        out = {}
        for tag, content in acc.PluginTagToContent("hparams").items():
            data = plugin_data_pb2.HParamsPluginData.FromString(content)
            out[data.WhichOneof("data")] = (tag, content, data)
        return out

    before, after = parts(source), parts(tmp_path / "back")
    assert sorted(after) == ["experiment", "session_end_info", "session_start_info"]
    for part in ("experiment", "session_end_info"):
        assert after[part][:2] == before[part][:2]
    start, start_back = before["session_start_info"][2], after["session_start_info"][2]
    assert dict(start_back.session_start_info.hparams) == dict(start.session_start_info.hparams)
    for run in (source, tmp_path / "jsonl", tmp_path / "back"):
        table = read(str(run), kind="hparams").drop(columns="run").to_dict("records")
        assert table == [{"bs": 16.0, "flag": 1.0, "lr": 0.01, "opt": "adam", "hparam/score": 0.75}]
    kind = get_registry().kinds["hparams"]
    logged = HParamsSummary("session_start_info", {"lr": 0.1, "opt": "sgd"})
    assert kind.to_row(logged)["hparams"] == {"lr": 0.1, "opt": "sgd"}
    with pytest.raises(ValueError, match="holds no experiment"):
        kind.to_row(HParamsSummary("raw", content=b""))
