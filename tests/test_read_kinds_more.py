"""tallyboard.read for pr_curve, mesh, custom_scalars and graph: tallyboard, torch, tensorboardX files,
each compared with what TensorBoard's EventAccumulator, plugin protos and tensor_util give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import load_run
from tallyboard import SummaryWriter, read


def _writers() -> list[tuple[str, type]]:
    import tensorboardX
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    return [
        ("tallyboard", SummaryWriter),
        ("torch", TorchWriter),
        ("tbx", tensorboardX.SummaryWriter),
    ]


def _write_all(tmp_path: Path, log: Any) -> list[str]:
    names = []
    for name, cls in _writers():
        w = cls(str(tmp_path / name))
        log(w)
        w.close()
        names.append(name)
    return names


def test_pr_curves_match_tensor_util_and_pr_curves_layout(tmp_path: Path) -> None:
    from tensorboard.plugins.pr_curve import plugin_data_pb2
    from tensorboard.util import tensor_util

    rng = np.random.default_rng(1)
    labels, preds = rng.integers(0, 2, 50), rng.random(50)

    def log(w: Any) -> None:
        for step in (1, 4):
            w.add_pr_curve("pr", labels, preds, step, num_thresholds=11)

    names = _write_all(tmp_path, log)
    df = read(str(tmp_path), kind="pr_curve")
    assert sorted(df["run"].unique()) == sorted(names)
    for name in names:
        acc = load_run(tmp_path / name)
        want = acc.Tensors("pr")
        got = df[df.run == name].sort_values("step")
        assert got["step"].tolist() == [e.step for e in want] == [1, 4]
        meta = plugin_data_pb2.PrCurvePluginData.FromString(
            acc.SummaryMetadata("pr").plugin_data.content
        )
        for (_, row), ev in zip(got.iterrows(), want):
            data = tensor_util.make_ndarray(ev.tensor_proto)
            assert data.shape == (6, 11)
            assert row["num_thresholds"] == meta.num_thresholds == 11
            np.testing.assert_array_equal(row["thresholds"], np.linspace(0, 1, 11))
            for i, col in enumerate(
                (
                    "true_positives",
                    "false_positives",
                    "true_negatives",
                    "false_negatives",
                    "precision",
                    "recall",
                )
            ):
                np.testing.assert_array_equal(row[col], data[i], err_msg=f"{name} {col}")
            # the counts are counts: TP + FN is the number of positive labels at every threshold
            np.testing.assert_array_equal(
                row["true_positives"] + row["false_negatives"], labels.sum()
            )
            assert row["wall_time"] == ev.wall_time
    # pr curves never leak into the scalar or tensor tables
    assert read(str(tmp_path)).empty
    assert read(str(tmp_path), kind="tensor").empty


def test_meshes_one_row_per_mesh_match_mesh_plugin_data(tmp_path: Path) -> None:
    import torch
    from tensorboard.plugins.mesh import plugin_data_pb2
    from tensorboard.util import tensor_util

    verts = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.5]]])
    faces = torch.tensor([[[0, 1, 2], [0, 2, 3]]])
    colors = torch.tensor([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [9, 8, 7]]])
    config = {"camera": {"cls": "PerspectiveCamera", "fov": 75}}

    def log(w: Any) -> None:
        w.add_mesh(
            "m", vertices=verts, faces=faces, colors=colors, global_step=2, config_dict=config
        )
        w.add_mesh("cloud", vertices=verts + 1, global_step=3)

    names = _write_all(tmp_path, log)
    df = read(str(tmp_path), kind="mesh")
    for name in names:
        acc = load_run(tmp_path / name)
        got = df[df.run == name].set_index("tag")
        assert sorted(got.index) == ["cloud", "m"]
        m, cloud = got.loc["m"], got.loc["cloud"]
        assert (m["step"], cloud["step"]) == (2, 3)
        # tags differ by writer (m_VERTEX, tensorboardX's m_1): find them by their metadata
        parts = {}
        for tag in acc.Tags()["tensors"]:
            meta = plugin_data_pb2.MeshPluginData.FromString(
                acc.SummaryMetadata(tag).plugin_data.content
            )
            if meta.name == "m":
                parts[meta.content_type] = (tag, meta)
        Data = plugin_data_pb2.MeshPluginData
        for col, content_type, dtype in (
            ("vertices", Data.VERTEX, np.float32),
            ("faces", Data.FACE, np.int32),
            ("colors", Data.COLOR, np.uint8),
        ):
            tag, meta = parts[content_type]
            ev = acc.Tensors(tag)[0]
            want = tensor_util.make_ndarray(ev.tensor_proto)
            assert list(meta.shape) == list(m[col].shape) == list(want.shape)
            assert m[col].dtype == dtype
            np.testing.assert_array_equal(m[col], want.astype(dtype), err_msg=f"{name} {col}")
            assert m["wall_time"] == ev.wall_time
        assert m["config"] == config
        np.testing.assert_array_equal(cloud["vertices"], (verts + 1).numpy())
        assert cloud["faces"] is None and cloud["colors"] is None


def test_custom_scalars_layout_matches_layout_proto_and_logs_again(tmp_path: Path) -> None:
    from tensorboard.plugins.custom_scalar import layout_pb2
    from tensorboard.util import tensor_util

    layout = {
        "Taiwan": {"twse": ["Multiline", ["twse/0050", "twse/2330"]]},
        "USA": {
            "dow": ["Margin", ["dow/aaa", "dow/bbb", "dow/ccc"]],
            "nasdaq": ["Multiline", ["nasdaq/.*"]],
        },
    }
    names = _write_all(tmp_path, lambda w: w.add_custom_scalars(layout))
    df = read(str(tmp_path), kind="custom_scalars")
    for name in names:
        (row,) = [r for _, r in df[df.run == name].iterrows()]
        ev = load_run(tmp_path / name).Tensors("custom_scalars__config__")[0]
        want = layout_pb2.Layout.FromString(tensor_util.make_ndarray(ev.tensor_proto).item())
        assert layout_pb2.Layout.FromString(row["data"]) == want
        assert row["layout"] == layout
        assert (row["tag"], row["step"]) == ("custom_scalars__config__", ev.step)
    # the read layout is what add_custom_scalars takes: logging it again gives the same proto
    with SummaryWriter(str(tmp_path / "again")) as w:
        w.add_custom_scalars(df.iloc[0]["layout"])
    again = read(str(tmp_path), runs="again", kind="custom_scalars").iloc[0]
    assert again["data"] == df.iloc[0]["data"]


def test_graphs_and_run_metadata_match_event_accumulator(tmp_path: Path) -> None:
    import torch
    from tensorboard.compat.proto import config_pb2, graph_pb2

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)

        def forward(self, x: Any) -> Any:
            return torch.relu(self.fc(x))

    names = _write_all(tmp_path, lambda w: w.add_graph(Net(), torch.rand(1, 3)))
    graphs = read(str(tmp_path), kind="graph")
    metas = read(str(tmp_path), kind="run_metadata")
    for name in names:
        acc = load_run(tmp_path / name)
        (row,) = [r for _, r in graphs[graphs.run == name].iterrows()]
        want = acc.Graph()
        assert graph_pb2.GraphDef.FromString(row["graph_def"]) == want
        assert row["num_nodes"] == len(want.node) > 3
        assert any("Linear" in n.name for n in want.node)
        assert row["tag"] == "__run_graph__"
        (meta_tag,) = acc.Tags()["run_metadata"]
        (meta,) = [r for _, r in metas[metas.run == name].iterrows()]
        assert meta["tag"] == meta_tag
        assert config_pb2.RunMetadata.FromString(meta["run_metadata"]) == acc.RunMetadata(meta_tag)
    assert read(str(tmp_path)).empty


def test_event_field_decoders_see_events_and_summary_decoders_never_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decoder naming an ``event_field`` gets whole Events of that field, nothing else."""
    from tallyboard.plugin.registry import get_registry
    from tallyboard.reading.runs import RunReader

    seen: list[str] = []

    def log_messages(event: Any, step: int, wall_time: float) -> dict[str, Any] | None:
        seen.append(event.WhichOneof("what"))
        return {"tag": "log", "message": event.log_message.message}

    log_messages.event_field = "log_message"  # type: ignore[attr-defined]
    from tallyboard_tfevents.proto import Event

    with SummaryWriter(str(tmp_path)) as w:
        w.add_text("t", "hello", 1)
        w.add_scalar("s", 1.0, 1)
        w.add_event(Event(step=7, log_message={"level": 1, "message": "hi"}))
    monkeypatch.setitem(get_registry().decoders, ("tfevents", "log_messages"), log_messages)
    (_, batch), *_ = RunReader(str(tmp_path)).read()
    assert seen == ["log_message"]
    assert [(r["tag"], r["step"], r["message"]) for r in batch.rows["log_messages"]] == [
        ("log", 7, "hi")
    ]
    assert [r["value"] for r in batch.rows["text"]] == ["hello"]


def test_malformed_pr_curve_tensor_is_not_a_pr_curve(tmp_path: Path) -> None:
    from tallyboard_pr_curve.tfevents import PrCurvePluginData
    from tallyboard_tfevents.proto import (
        DT_FLOAT,
        Event,
        SummaryValue,
        TensorProto,
        metadata,
        shape,
    )

    content = PrCurvePluginData(num_thresholds=3).SerializeToString()
    bad = TensorProto(dtype=DT_FLOAT, tensor_shape=shape([5, 3]), float_val=[0.0] * 15)
    good = TensorProto(dtype=DT_FLOAT, tensor_shape=shape([6, 3]), float_val=range(18))
    with SummaryWriter(str(tmp_path)) as w:
        for tag, tensor in (("bad", bad), ("good", good)):
            value = SummaryValue(tag=tag, metadata=metadata("pr_curves", content), tensor=tensor)
            w.add_event(Event(step=1, summary={"value": [value]}))
    df = read(str(tmp_path), kind="pr_curve")
    assert df["tag"].tolist() == ["good"]
    np.testing.assert_array_equal(df.iloc[0]["recall"], [15, 16, 17])


def test_embeddings_match_projector_config_and_tensor_files(tmp_path: Path) -> None:
    import torch
    from google.protobuf import text_format
    from tensorboard.plugins.projector import projector_config_pb2
    from tensorboard.plugins.projector.projector_plugin import _read_tensor_tsv_file

    mat = np.random.default_rng(0).normal(size=(6, 4))
    imgs = torch.rand(6, 3, 8, 8)
    labels = [[1, "x"], [2, "y"], [3, "z"], [4, "w"], [5, "v"], [6, "u"]]

    def log(w: Any) -> None:
        w.add_embedding(mat, metadata=list("abcdef"), label_img=imgs, global_step=3, tag="feat")
        w.add_embedding(mat * 2, metadata=labels, metadata_header=["n", "l"], global_step=4)

    names = _write_all(tmp_path, log)
    df = read(str(tmp_path), kind="embedding")
    for name in names:
        run = tmp_path / name
        config = text_format.Parse(
            (run / "projector_config.pbtxt").read_text(), projector_config_pb2.ProjectorConfig()
        )
        got = df[df.run == name].sort_values("step")
        assert len(config.embeddings) == len(got) == 2
        for (_, row), info in zip(got.iterrows(), config.embeddings):
            assert f"{row['tag']}:{row['step']:05d}" == info.tensor_name
            want = _read_tensor_tsv_file(str(run / info.tensor_path))
            assert row["tensor"].dtype == np.float32
            np.testing.assert_array_equal(row["tensor"], want)
            np.testing.assert_allclose(row["tensor"], mat * (1 if row["step"] == 3 else 2), 1e-5)
        feat, default = got.iloc[0], got.iloc[1]
        assert (feat["tag"], default["tag"]) == ("feat", "default")
        assert feat["metadata"] == list("abcdef") and feat["metadata_header"] is None
        assert default["metadata"] == [[str(n), s] for n, s in labels]
        assert default["metadata_header"] == ["n", "l"]
        sprite = config.embeddings[0].sprite
        assert (
            feat["sprite"] == (run / sprite.image_path).read_bytes()
            and feat["sprite"][:4] == b"\x89PNG"
        )
        assert feat["sprite_dim"] == list(sprite.single_image_dim) == [8, 8]
        assert default["sprite"] is None


def test_embeddings_read_again_yield_only_new_entries(tmp_path: Path) -> None:
    from tallyboard.reading.runs import RunReader

    mat = np.eye(3)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_embedding(mat, global_step=1)
        reader = RunReader(str(tmp_path))
        first = [r["step"] for _, b in reader.read() for r in b.rows.get("embedding", [])]
        w.add_embedding(mat * 3, global_step=2)
        second = [r for _, b in reader.read() for r in b.rows.get("embedding", [])]
    assert first == [1]
    assert [r["step"] for r in second] == [2]
    np.testing.assert_array_equal(second[0]["tensor"], mat * 3)
    assert [b.rows for _, b in reader.read()] == [{}, {}]


def test_embedding_with_missing_tensor_file_is_reported_and_others_read(tmp_path: Path) -> None:
    from tallyboard.plugin.readers import ReadWarning

    with SummaryWriter(str(tmp_path)) as w:
        w.add_embedding(np.eye(2), global_step=1)
        w.add_embedding(np.eye(2), global_step=2)
    (tmp_path / "00001" / "default" / "tensors.tsv").unlink()
    with pytest.warns(ReadWarning, match="tensors.tsv' of 'default' is missing"):
        df = read(str(tmp_path), kind="embedding")
    assert df["step"].tolist() == [2]


def test_convert_rewrites_pr_curves_layouts_and_graphs_as_tensorboard_reads_them(
    tmp_path: Path,
) -> None:
    import torch
    from tallyboard import convert
    from tensorboard.util import tensor_util
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    rng = np.random.default_rng(2)
    src, dst = tmp_path / "src", tmp_path / "dst"
    w = TorchWriter(str(src))
    for step in (1, 2):
        w.add_pr_curve("pr", rng.integers(0, 2, 40), rng.random(40), step, num_thresholds=9)
    w.add_custom_scalars({"cat": {"chart": ["Margin", ["a", "b", "c"]]}})
    w.add_graph(torch.nn.Linear(2, 2), torch.rand(1, 2))
    w.add_mesh("m", vertices=torch.rand(1, 3, 3), global_step=1)
    w.close()
    summary = convert(str(src), str(dst), "tfevents")
    assert summary.converted["pr_curve"] == 2 and summary.converted["custom_scalars"] == 1
    assert summary.converted["graph"] == summary.converted["run_metadata"] == 1
    assert summary.converted["mesh"] == 1 and summary.not_converted == {}  # vertices alone too
    before, after = load_run(src), load_run(dst)
    for tag in ("pr", "custom_scalars__config__", "m_VERTEX"):
        old, new = before.Tensors(tag), after.Tensors(tag)
        assert [(e.step, e.wall_time) for e in old] == [(e.step, e.wall_time) for e in new]
        for a, b in zip(old, new):
            np.testing.assert_array_equal(
                tensor_util.make_ndarray(a.tensor_proto), tensor_util.make_ndarray(b.tensor_proto)
            )
        assert before.SummaryMetadata(tag) == after.SummaryMetadata(tag)
    assert before.Graph() == after.Graph()
    assert before.RunMetadata("step1") == after.RunMetadata("step1")


def test_unparsable_plugin_data_never_stops_a_read(tmp_path: Path) -> None:
    from tallyboard_tfevents.proto import (
        DT_FLOAT,
        DT_STRING,
        Event,
        SummaryValue,
        TensorProto,
        metadata,
        shape,
    )

    junk = b"\xff\xff\xff"
    floats = TensorProto(dtype=DT_FLOAT, tensor_shape=shape([6, 2]), float_val=range(12))
    text = TensorProto(dtype=DT_STRING, string_val=[junk])
    values = [
        SummaryValue(tag="pr", metadata=metadata("pr_curves", junk), tensor=floats),
        SummaryValue(tag="m_VERTEX", metadata=metadata("mesh", junk), tensor=floats),
        SummaryValue(
            tag="custom_scalars__config__", metadata=metadata("custom_scalars"), tensor=text
        ),
    ]
    with SummaryWriter(str(tmp_path)) as w:
        for value in values:
            w.add_event(Event(step=1, summary={"value": [value]}))
        w.add_event(Event(step=2, graph_def=junk))
        w.add_scalar("after", 1.0, 3)
    pr = read(str(tmp_path), kind="pr_curve")
    assert pr["num_thresholds"].tolist() == [2]  # from the tensor's shape
    assert read(str(tmp_path), kind="mesh").empty
    assert read(str(tmp_path), kind="custom_scalars").empty
    graph = read(str(tmp_path), kind="graph")
    assert graph["graph_def"].tolist() == [junk] and graph["num_nodes"].isna().all()
    assert read(str(tmp_path))["tag"].tolist() == ["after"]
