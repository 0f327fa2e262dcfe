"""``SummaryRecord.add_value`` takes MindSpore's own ``lineage_pb2`` / ``summary_pb2`` messages.

MindSpore's ``SummaryCollector`` and users' code build lineage and loss-landscape values with
MindSpore's message classes. The scenario gives the same messages to MindSpore 2.10's
``SummaryRecord`` (``ms``) and tallyboard's (``tb``, and ``tb_own`` built from tallyboard's classes
instead) in one MindSpore child (``mindspore_support``); the tests compare the records written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mindspore_reader as msr
import numpy as np
import pytest
from mindspore_support import Results, error_of, note, run_scenarios, scenario

LINEAGE_FIELDS = ("train_lineage", "evaluation_lineage", "dataset_graph", "user_defined_info")

# -- the MindSpore child ---------------------------------------------------------------------


def _messages(module: Any, tensor_class: Any) -> dict[str, Any]:
    """One message per plugin, with nested, repeated and map fields set, from ``module``'s classes."""
    train = module.TrainLineage()
    train.hyper_parameters.learning_rate = 0.01
    train.hyper_parameters.optimizer = "Momentum"
    train.hyper_parameters.epoch = 3
    train.hyper_parameters.batch_size = 4
    train.train_dataset.train_dataset_size = 64
    train.algorithm.network = "LeNet5"
    train.algorithm.loss = 0.25
    train.model.path = '{"ckpt": null}'
    evaluation = module.EvaluationLineage()
    evaluation.metric = '{"acc": 0.5}'
    evaluation.valid_dataset.valid_dataset_size = 16
    graph = module.DatasetGraph()
    child = graph.children.add()
    child.parameter.mapStr["op_type"] = "GeneratorDataset"
    child.parameter.mapInt["num_parallel_workers"] = 1
    child.parameter.mapBool["shuffle"] = False
    child.parameter.mapStrList["column_names"].strValue.extend(["image", "label"])
    op = graph.operations.add()
    op.operationParam.mapDouble["scale"] = 0.5
    op.size.extend([32, 32])
    graph.parameter.mapStr["op_type"] = "BatchDataset"
    graph.parameter.mapInt["batch_size"] = 4
    custom = module.UserDefinedInfo()
    for key, field, value in [("lr", "map_double", 0.1), ("epochs", "map_int32", 3)]:
        getattr(custom.user_info.add(), field)[key] = value
    custom.user_info.add().map_str["note"] = "hi"
    landscape = module.LossLandscape()
    for axis, values in [("x", [0.0, 1.0]), ("y", [1.0, 2.0]), ("z", [3.0, 4.0])]:
        point = getattr(landscape.landscape, axis)
        point.dims.extend([2])
        point.data_type = 11
        point.float_data.extend(values)
    landscape.metadata.decomposition = "PCA"
    landscape.metadata.unit = "step"
    landscape.metadata.step_per_epoch = 4
    landscape.loss_path.intervals.extend([1, 2, 3])
    return {
        "train_lineage": train,
        "eval_lineage": evaluation,
        "dataset_graph": graph,
        "custom_lineage_data": custom,
        "landscape": landscape,
    }


@scenario
def mindspore_messages(out: Path) -> None:
    import mindspore
    import tallyboard
    from mindspore.train import anf_ir_pb2, lineage_pb2, summary_pb2

    class MindSporeMessages:  # the classes MindSpore users build values from
        TrainLineage = lineage_pb2.TrainLineage
        EvaluationLineage = lineage_pb2.EvaluationLineage
        DatasetGraph = lineage_pb2.DatasetGraph
        UserDefinedInfo = lineage_pb2.UserDefinedInfo
        LossLandscape = summary_pb2.LossLandscape

    theirs = _messages(MindSporeMessages, anf_ir_pb2.TensorProto)
    ours = _messages(tallyboard, None)
    for name, record_class, messages in [
        ("ms", mindspore.SummaryRecord, theirs),
        ("tb", tallyboard.SummaryRecord, theirs),
        ("tb_own", tallyboard.SummaryRecord, ours),
    ]:
        with record_class(str(out / name)) as record:
            for plugin, message in messages.items():
                record.add_value(plugin, "surface" if plugin == "landscape" else plugin, message)
                record.record(1)
            # a MindSpore message of another class is refused as a value of the wrong class
            note(
                f"{name} wrong class",
                error_of(
                    lambda r=record: r.add_value("train_lineage", "x", theirs["eval_lineage"])
                ),
            )
            note(
                f"{name} not a message",
                error_of(lambda r=record: r.add_value("eval_lineage", "x", b"")),
            )


# -- the tests -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Results:
    return run_scenarios(__file__, tmp_path_factory.mktemp("ms_messages"))


def _file(path: Path, suffix: str) -> Path:
    (found,) = [p for p in path.iterdir() if p.name.endswith(suffix)]
    return found


def lineage_records(path: Path) -> list[tuple[str, bytes]]:
    """(field, serialized message) of every lineage event, wall times aside."""
    out = []
    for event in msr.read_lineage(_file(path, "_lineage")):
        assert not event.HasField("step")
        (field,) = [f for f in LINEAGE_FIELDS if event.HasField(f)]
        out.append((field, getattr(event, field).SerializeToString()))
    return out


@pytest.mark.parametrize("name", ["tb", "tb_own"])
def test_lineage_messages_are_written_as_mindspore_writes_them(runs: Results, name: str) -> None:
    path = runs["mindspore_messages"].path
    expected = lineage_records(path / "ms")
    assert [field for field, _ in expected] == list(LINEAGE_FIELDS)
    assert lineage_records(path / name) == expected
    train = msr.TrainLineage.FromString(expected[0][1])
    assert (train.algorithm.network, train.hyper_parameters.epoch) == ("LeNet5", 3)
    graph = msr.DatasetGraph.FromString(expected[2][1])
    assert list(graph.children[0].parameter.mapStrList["column_names"].strValue) == [
        "image",
        "label",
    ]


@pytest.mark.parametrize("name", ["tb", "tb_own"])
def test_a_mindspore_loss_landscape_is_written_as_mindspore_writes_it(
    runs: Results, name: str
) -> None:
    path = runs["mindspore_messages"].path

    def landscapes(run: str) -> list[tuple[int, str, bytes]]:
        return [
            (step, tag, value.SerializeToString())
            for step, tag, kind, value in msr.values(_file(path / run, "_MS"))
            if kind == "loss_landscape"
        ]

    expected = landscapes("ms")
    assert [(step, tag) for step, tag, _ in expected] == [(1, "surface")]
    assert landscapes(name) == expected
    (_, _, data) = expected[0]
    landscape = msr.LossLandscape.FromString(data)
    assert np.array_equal(landscape.landscape.z.float_data, [3.0, 4.0])
    assert landscape.metadata.decomposition == "PCA"


def test_a_message_of_another_class_is_refused_as_mindspore_refuses_it(runs: Results) -> None:
    notes = runs["mindspore_messages"].notes
    expected = ["TypeError", "Plugin 'train_lineage' expects a TrainLineage value."]
    assert (
        notes["ms wrong class"]
        == notes["tb wrong class"]
        == notes["tb_own wrong class"]
        == expected
    )
    assert notes["tb not a message"] == [
        "TypeError",
        "Plugin 'eval_lineage' expects a EvaluationLineage value.",
    ]
    assert notes["tb not a message"] == notes["ms not a message"]
