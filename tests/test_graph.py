"""add_graph / add_onnx_graph: GraphDefs read back with TensorBoard's graph_pb2, compared with torch's."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import raw_events
from nets import Net
from tallyboard import SummaryWriter
from tensorboard.compat.proto import config_pb2, graph_pb2
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2)
        )
        self.head = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


class TwoInOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.a(x) + y
        return h, h.sum(dim=1)


class DictOut(nn.Module):
    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"y": x * 2}


def _graph(run: Path) -> tuple[Any, Any]:
    events = raw_events(run)
    (graph_ev,) = [e for e in events if e.graph_def]
    (meta_ev,) = [e for e in events if e.HasField("tagged_run_metadata")]
    return graph_pb2.GraphDef.FromString(graph_ev.graph_def), meta_ev


def _torch_graph(tmp_path: Path, model: nn.Module, inputs: Any) -> Any:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with TorchWriter(tmp_path / "torch") as tw:
            tw.add_graph(model, inputs)
    return _graph(tmp_path / "torch")[0]


def test_linear_relu_nodes(logdir: Path) -> None:
    with SummaryWriter(logdir) as w:
        w.add_graph(Net(), torch.zeros(2, 3))
    graph, meta = _graph(logdir)
    nodes = {n.name: n for n in graph.node}
    assert sorted(nodes) == sorted(
        [
            "input/x",
            "output/output.1",
            "Net/Linear[l]/bias/bias",
            "Net/Linear[l]/weight/weight",
            "Net/Linear[l]/input",
        ]
        + [n for n in nodes if n.startswith("Net/ReLU[act]/")]
    )
    assert len(nodes) == 6 and graph.versions.producer == 22
    assert (
        nodes["input/x"].op == "IO Node"
        and nodes["Net/Linear[l]/weight/weight"].op == "prim::GetAttr"
    )
    linear = nodes["Net/Linear[l]/input"]
    assert linear.op == "aten::linear"
    assert list(linear.input) == [
        "input/x",
        "Net/Linear[l]/weight/weight",
        "Net/Linear[l]/bias/bias",
    ]
    assert [d.size for d in linear.attr["_output_shapes"].list.shape[0].dim] == [2, 5]
    (relu,) = [n for n in graph.node if n.op == "aten::relu"]
    assert nodes["output/output.1"].input == [relu.name]
    assert meta.tagged_run_metadata.tag == "step1"
    run_meta = config_pb2.RunMetadata.FromString(meta.tagged_run_metadata.run_metadata)
    assert [d.device for d in run_meta.step_stats.dev_stats] == ["/device:CPU:0"]


@pytest.mark.parametrize(
    ("model", "inputs"),
    [
        (Net(), torch.zeros(2, 3)),
        (SmallCNN(), torch.zeros(1, 3, 8, 8)),
        (TwoInOut(), (torch.zeros(2, 4), torch.zeros(2, 4))),
        (nn.LSTM(4, 8, batch_first=True), torch.zeros(1, 5, 4)),
    ],
)
@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")  # the LSTM's own size checks
def test_same_graph_as_torch(tmp_path: Path, model: nn.Module, inputs: Any) -> None:
    with SummaryWriter(tmp_path / "pb") as w:
        w.add_graph(model, inputs)
    ours, theirs = _graph(tmp_path / "pb")[0], _torch_graph(tmp_path, model, inputs)
    assert ours == theirs
    assert ours.SerializeToString() == theirs.SerializeToString()  # byte for byte


def test_no_deprecation_warning_and_mode_restored(logdir: Path) -> None:
    model = SmallCNN().train()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with SummaryWriter(logdir) as w:
            w.add_graph(model, torch.zeros(1, 3, 8, 8))
    assert model.training
    graph, _ = _graph(logdir)
    assert any(n.op == "aten::batch_norm" for n in graph.node)


def test_trace_errors_propagate_and_log_nothing(logdir: Path) -> None:
    with SummaryWriter(logdir) as w:
        with pytest.raises(RuntimeError) as info:
            w.add_graph(Net(), torch.zeros(2, 4))  # wrong input size
        assert "no graph was logged" in "".join(getattr(info.value, "__notes__", []))
        with pytest.raises(TypeError, match="torch.nn.Module"):
            w.add_graph(lambda x: x, torch.zeros(1))
    assert not [e for e in raw_events(logdir) if e.graph_def]


def test_strict_tracing_is_passed_through(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path / "a") as w, pytest.raises(RuntimeError):
        w.add_graph(DictOut(), torch.zeros(2))
    with SummaryWriter(tmp_path / "b") as w:
        w.add_graph(DictOut(), torch.zeros(2), use_strict_trace=False)
    graph, _ = _graph(tmp_path / "b")
    assert any(n.op == "aten::mul" for n in graph.node)


def test_verbose_prints_the_graph(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with SummaryWriter(logdir) as w:
        w.add_graph(Net(), torch.zeros(2, 3), verbose=True)
    assert "aten::linear" in capsys.readouterr().out


def test_add_value_with_a_ready_graph_def(logdir: Path) -> None:
    ready = graph_pb2.GraphDef()
    ready.node.add(name="a", op="Const")
    ready.node.add(name="b", op="Identity", input=["a"])
    with SummaryWriter(logdir) as w:
        w.add_value("graph", "__run_graph__", ready)
        w.add_value("graph", "__run_graph__", ready.SerializeToString())
        with pytest.raises(TypeError, match="GraphDef"):
            w.add_value("graph", "__run_graph__", config_pb2.RunMetadata())
    graphs = [graph_pb2.GraphDef.FromString(e.graph_def) for e in raw_events(logdir) if e.graph_def]
    assert graphs == [ready, ready]


def test_onnx_graph(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]))
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    for source in (path, str(path), model, model.SerializeToString()):
        run = tmp_path / f"run{type(source).__name__}"
        with SummaryWriter(run) as w:
            w.add_onnx_graph(source)
        graph = graph_pb2.GraphDef.FromString(
            [e for e in raw_events(run) if e.graph_def][0].graph_def
        )
        assert [(n.name, n.op) for n in graph.node] == [
            ("x", "Variable"),
            ("y", "Variable"),
            ("y", "Softmax"),
        ]
        assert (
            graph.node[0].attr["dtype"].type == TensorProto.FLOAT and graph.versions.producer == 22
        )
        assert [d.size for d in graph.node[0].attr["shape"].shape.dim] == [1, 3]
        assert (
            graph.node[2].name == "y"
            and graph.node[2].op == "Softmax"
            and list(graph.node[2].input) == ["x"]
        )
        assert graph.node[2].attr["parameters"].s == b"axis = 1 = 2"
    with SummaryWriter(tmp_path / "bad") as w, pytest.raises(TypeError, match="prototxt"):
        w.add_onnx_graph(42)


def test_onnx_graph_matches_torch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import onnx
    from onnx import TensorProto, helper
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    nodes = [
        helper.make_node("Relu", ["x"], ["h"]),
        helper.make_node("Transpose", ["h"], ["y"], perm=[0, 1]),
    ]
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y])), str(path))
    with TorchWriter(tmp_path / "t") as tw:
        tw.add_onnx_graph(str(path))
    with SummaryWriter(tmp_path / "p") as w:
        w.add_onnx_graph(str(path))
    ours = [e for e in raw_events(tmp_path / "p") if e.graph_def][0].graph_def
    theirs = [e for e in raw_events(tmp_path / "t") if e.graph_def][0].graph_def
    assert graph_pb2.GraphDef.FromString(ours) == graph_pb2.GraphDef.FromString(theirs)
