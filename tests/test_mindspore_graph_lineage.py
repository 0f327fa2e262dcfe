"""MindSpore graphs and lineage for TensorBoard without MindSpore: what tallyboard's own
``SummaryRecord`` writes, converted with ``tallyboard convert`` (and mirrored with
``tensorboard=True``), read back with TensorBoard's ``EventAccumulator`` and protos. The real
``Model.train`` runs are in ``test_mindspore_tensorboard.py``; these are the shapes a run rarely
has (duplicate names, control edges, a pipeline of several operations) and damaged input.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import tallyboard
from tallyboard import DatasetGraph, SummaryRecord, TrainLineage, UserDefinedInfo
from tallyboard.records.framing import frame
from tallyboard.records.wire import field_bytes
from tallyboard.warn import ReadWarning
from tallyboard_mindspore import wire
from tallyboard_mindspore.graphs import messages
from tallyboard_mindspore.tensorboard import metrics_of


def _accumulator(path: Path) -> Any:
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea

    acc = pea.EventAccumulator(str(path), size_guidance={pea.TENSORS: 0})
    acc.Reload()
    return acc


def _graph(acc: Any) -> dict[str, Any]:
    from tensorboard.compat.proto import graph_pb2

    return {n.name: n for n in graph_pb2.GraphDef.FromString(acc.SerializedGraph()).node}


def _model_bytes() -> bytes:
    """A ModelProto whose graph has a parameter, a constant, two operations of one full name,
    one without a full name, a control edge and an input it does not define."""
    g = messages()["anf.GraphProto"]()
    g.parameters.add(name="w").type.tensor_type.shape.dim.add(size=3)
    c = g.const_vals.add(key="cst1")
    c.value.dtype, c.value.int_val = 5, 7  # DT_INT64
    a = g.node.add(
        name="1", op_type="Mul", scope="Default/net-Net", full_name="Default/net-Net/Mul-op0"
    )
    a.input.add(name="w")
    a.input.add(name="cst1")
    a.output_type.tensor_type.shape.dim.add(size=3)
    a.attribute.add(name="pad").value.values.add(int_val=1)
    b = g.node.add(
        name="2", op_type="Mul", scope="Default/net-Net", full_name="Default/net-Net/Mul-op0"
    )
    b.input.add(name="1")
    d = g.node.add(name="3", op_type="Depend", scope="Default")
    d.input.add(name="2")
    d.input.add(name="1", type=1)  # a control edge
    d.input.add(name="other")  # a node of another graph
    return field_bytes(4, g.SerializeToString())


def test_a_network_graph_converts_with_unique_names_control_edges_and_constants(
    tmp_path: Path,
) -> None:
    with SummaryRecord(str(tmp_path / "ms")) as record:
        record.add_value("graph", "net", _model_bytes())
        record.record(1)
    summary = tallyboard.convert(str(tmp_path / "ms"), str(tmp_path / "tb"), to="tfevents")
    assert summary.converted == {"anf_graph": 1}, summary.not_converted_line()
    nodes = _graph(_accumulator(tmp_path / "tb"))
    assert sorted(nodes) == [
        "Default/Depend-3",
        "Default/net-Net/Mul-op0",
        "Default/net-Net/Mul-op0_1",
        "Default/net-Net/cst1",
        "Default/net-Net/w",
        "Default/other",
    ]
    assert list(nodes["Default/net-Net/Mul-op0"].input) == [
        "Default/net-Net/w",
        "Default/net-Net/cst1",
    ]
    assert list(nodes["Default/Depend-3"].input) == [
        "Default/net-Net/Mul-op0_1",
        "^Default/net-Net/Mul-op0",
        "Default/other",
    ]
    assert nodes["Default/net-Net/cst1"].attr["value"].s == b"7"
    assert nodes["Default/net-Net/Mul-op0"].attr["pad"].s == b"(1,)"
    assert nodes["Default/net-Net/w"].op == "Parameter"
    assert nodes["Default/other"].op == "Input"
    assert [
        d.size for d in nodes["Default/net-Net/w"].attr["_output_shapes"].list.shape[0].dim
    ] == [3]


def test_the_tensorboard_mirror_holds_the_network_graph(tmp_path: Path) -> None:
    with SummaryRecord(str(tmp_path), tensorboard=True) as record:
        record.add_value("graph", "net", _model_bytes())
        record.record(1)
    assert "Default/net-Net/Mul-op0" in _graph(_accumulator(tmp_path))


def _pipeline() -> Any:
    source = DatasetGraph()
    source.parameter.mapStr["op_type"] = "ImageFolderDataset"
    source.parameter.mapStr["dataset_dir"] = "/data/images"
    source.sampler.operationParam.mapStr["sampler_name"] = "RandomSampler"
    mapped = DatasetGraph()
    mapped.parameter.mapStr["op_type"] = "Map"
    for name, size in [("Decode", None), ("Resize", 32)]:
        op = mapped.operations.add()
        op.operationParam.mapStr["tensor_op_name"] = name
        if size:
            op.operationParam.mapInt["size"] = size
    mapped.children.append(source)
    root = DatasetGraph()
    root.parameter.mapStr["op_type"] = "Batch"
    root.parameter.mapInt["batch_size"] = 32
    root.parameter.mapBool["drop_remainder"] = True
    root.children.append(mapped)
    return root


def test_a_dataset_pipeline_converts_to_a_graph_tagged_dataset_graph(tmp_path: Path) -> None:
    from tensorboard.compat.proto import config_pb2
    from tensorboard.util import tensor_util

    with SummaryRecord(str(tmp_path / "ms")) as record:
        record.add_value("dataset_graph", "train_dataset", _pipeline())
        record.record(1)
    tallyboard.convert(str(tmp_path / "ms"), str(tmp_path / "tb"), to="tfevents")
    (event,) = _accumulator(tmp_path / "tb").Tensors("dataset_graph")
    (blob,) = tensor_util.make_ndarray(event.tensor_proto).reshape(-1)
    (function,) = config_pb2.RunMetadata.FromString(blob).function_graphs
    nodes = {n.name: n for n in function.pre_optimization_graph.node}
    assert list(nodes) == ["dataset/ImageFolderDataset", "dataset/Map", "dataset/Batch"]
    assert list(nodes["dataset/Batch"].input) == ["dataset/Map"]
    assert list(nodes["dataset/Map"].input) == ["dataset/ImageFolderDataset"]
    attrs = {k: v.s.decode() for k, v in nodes["dataset/Batch"].attr.items()}
    assert attrs == {"batch_size": "32", "drop_remainder": "True"}
    assert nodes["dataset/Map"].attr["operations"].s == b"Decode(); Resize(size=32)"
    source = nodes["dataset/ImageFolderDataset"]
    assert source.attr["sampler"].s == b"RandomSampler()"
    assert source.attr["dataset_dir"].s == b"/data/images"


def test_eval_metrics_are_the_numbers_of_their_json() -> None:
    got = metrics_of('{"acc": 0.5, "top": {"k1": 1, "k5": 2}, "name": "x", "flag": true, "v": [1]}')
    assert got == {"acc": 0.5, "top/k1": 1.0, "top/k5": 2.0}
    assert metrics_of("not json") == {} and metrics_of("[1, 2]") == {} and metrics_of("") == {}


def _lineage_file(path: Path, messages_: list[tuple[int, bytes]]) -> None:
    path.mkdir(parents=True)
    name = path / "events.out.events.summary.1700000000.0.host_lineage"
    name.write_bytes(
        b"".join(frame(wire.lineage_event(1.7e9 + i, f, m)) for i, (f, m) in enumerate(messages_))
    )


def test_hparams_join_the_custom_lineage_written_before_the_train_lineage(tmp_path: Path) -> None:
    custom = UserDefinedInfo()
    custom.user_info.add().map_str["note"] = "first"
    late = UserDefinedInfo()
    late.map_double["late"] = 1.0
    train = TrainLineage()
    train.hyper_parameters.learning_rate = 0.1
    train.hyper_parameters.optimizer = "Adam"
    _lineage_file(
        tmp_path / "run",
        [
            (10, custom.SerializeToString()),
            (6, train.SerializeToString()),
            (10, late.SerializeToString()),
        ],
    )
    table = tallyboard.read(str(tmp_path), kind="hparams")
    assert table.drop(columns="run").to_dict("records") == [
        {"learning_rate": 0.1, "optimizer": "Adam", "custom/note": "first"}
    ]
    # converted, these come first (TensorBoard keeps a run's first hyper-parameters), before
    # the train lineage's own
    tallyboard.convert(str(tmp_path / "run"), str(tmp_path / "tb"), to="tfevents")
    assert _session_hparams(_accumulator(tmp_path / "tb")) == {
        "learning_rate": 0.1,
        "optimizer": "Adam",
        "custom/note": "first",
    }


def _session_hparams(acc: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = acc.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    data = plugin_data_pb2.HParamsPluginData.FromString(content)
    return {k: MessageToDict(v) for k, v in data.session_start_info.hparams.items()}


def test_the_tensorboard_mirror_holds_the_train_lineage_as_hyper_parameters(
    tmp_path: Path,
) -> None:
    custom = UserDefinedInfo()
    custom.map_str["note"] = "mirror"
    train = TrainLineage()
    train.hyper_parameters.batch_size = 8
    train.algorithm.loss = 0.25
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every lineage kind reaches the mirror: no warning
        with SummaryRecord(str(tmp_path), tensorboard=True) as record:
            record.add_value("custom_lineage_data", "custom", custom)
            record.record(1)
            record.add_value("train_lineage", "train_lineage", train)
            record.record(2)
    acc = _accumulator(tmp_path)
    assert _session_hparams(acc) == {"batch_size": 8.0}  # the custom lineage: its TEXT table
    (loss,) = acc.Tensors("lineage/loss")
    assert loss.tensor_proto.float_val[0] == 0.25
    assert b"| note | mirror |" in acc.Tensors("lineage/custom")[0].tensor_proto.string_val[0]


def test_a_damaged_train_lineage_is_reported_and_the_rest_is_read(tmp_path: Path) -> None:
    custom = UserDefinedInfo()
    custom.map_int32["k"] = 3
    _lineage_file(tmp_path / "run", [(10, custom.SerializeToString()), (6, b"\x0a\x05ab")])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert tallyboard.read(str(tmp_path), kind="hparams").empty
    said = [str(w.message) for w in caught if w.category is ReadWarning]
    assert any("a train_lineage message is not parsable" in m for m in said), said
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadWarning)
        (data,) = tallyboard.read(str(tmp_path), kind="custom_lineage_data")["data"]
    assert UserDefinedInfo.FromString(data).map_int32["k"] == 3


def test_custom_lineage_converts_to_a_text_table(tmp_path: Path) -> None:
    custom = UserDefinedInfo()
    custom.user_info.add().map_str["note"] = "first"
    custom.user_info.add().map_int32["width"] = 3
    with SummaryRecord(str(tmp_path / "ms")) as record:
        record.add_value("custom_lineage_data", "custom", custom)
        record.record(1)
    summary = tallyboard.convert(str(tmp_path / "ms"), str(tmp_path / "tb"), to="tfevents")
    assert summary.converted == {"custom_lineage_data": 1}, summary.not_converted_line()
    acc = _accumulator(tmp_path / "tb")
    (text,) = acc.Tensors("lineage/custom")
    assert text.tensor_proto.string_val[0].decode().splitlines() == [
        "| custom lineage | value |",
        "|---|---|",
        "| note | first |",
        "| width | 3.0 |",
    ]


def test_damaged_graphs_and_lineage_never_raise_in_read_or_convert(tmp_path: Path) -> None:
    """Bit flips and cuts in the graph and every lineage message: ``read`` and ``convert`` go on
    (damage is a ReadWarning or a value counted as not converted), never an exception."""
    import random

    from tallyboard_lineage.messages import EvaluationLineage

    train = TrainLineage()
    train.hyper_parameters.optimizer = "Adam"
    train.algorithm.loss = 0.5
    evaluation = EvaluationLineage(metric='{"acc": 0.5}')
    custom = UserDefinedInfo()
    custom.user_info.add().map_str["note"] = "x"
    good = [
        (6, train.SerializeToString()),
        (7, evaluation.SerializeToString()),
        (9, _pipeline().SerializeToString()),
        (10, custom.SerializeToString()),
    ]
    graph = wire.model_graph(_model_bytes())  # the GraphProto inside
    rnd = random.Random(0)

    def damaged(data: bytes) -> bytes:
        data = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
        return bytes(data[: rnd.randint(1, len(data))]) if rnd.random() < 0.3 else bytes(data)

    for case in range(60):
        run = tmp_path / f"case{case}"
        _lineage_file(run, [(f, damaged(m)) for f, m in good])
        summary = run / "events.out.events.summary.1700000000.0.host_MS"
        summary.write_bytes(
            frame(wire.version_event(1.7e9)) + frame(wire.graph_event(1.7e9, damaged(graph)))
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for kind in ("hparams", "anf_graph", "dataset_graph", "eval_lineage"):
                tallyboard.read(str(run), kind=kind)
            done = tallyboard.convert(str(run), str(tmp_path / f"out{case}"), to="tfevents")
        assert sum(done.converted.values()) + sum(done.not_converted.values()) >= 1
