"""The mesh kind: torch's tags, plugin data and component bitmask, read back with TensorBoard's protos."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import load_run, raw_events
from tallyboard import SummaryWriter
from tensorboard.plugins.mesh import plugin_data_pb2
from tensorboard.util import tensor_util
from torch.utils.tensorboard import summary as torch_summary

VERTICES = np.array([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]], dtype=np.float32)
COLORS = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]]], dtype=np.uint8)
FACES = np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], dtype=np.int32)
CONFIG = {"camera": {"cls": "PerspectiveCamera", "fov": 75}, "lights": [{"cls": "AmbientLight"}]}


def values_by_tag(logdir):
    return {v.tag: v for e in raw_events(logdir) if e.HasField("summary") for v in e.summary.value}


def test_full_mesh_matches_torch(logdir):
    with SummaryWriter(logdir) as w:
        w.add_mesh(
            "m",
            torch.from_numpy(VERTICES),
            colors=COLORS,
            faces=FACES,
            config_dict=CONFIG,
            global_step=2,
        )
    ours = values_by_tag(logdir)
    theirs = {v.tag: v for v in torch_summary.mesh("m", VERTICES, COLORS, FACES, CONFIG).value}
    assert list(ours) == ["m_VERTEX", "m_FACE", "m_COLOR"] == list(theirs)
    for tag, value in ours.items():
        assert value.metadata.plugin_data.plugin_name == "mesh"
        assert value.metadata.plugin_data.content == theirs[tag].metadata.plugin_data.content
        ours_arr = tensor_util.make_ndarray(value.tensor)
        assert ours_arr.dtype == np.float32
        np.testing.assert_array_equal(ours_arr, tensor_util.make_ndarray(theirs[tag].tensor))
    data = plugin_data_pb2.MeshPluginData.FromString(ours["m_COLOR"].metadata.plugin_data.content)
    assert data.name == "m" and data.content_type == plugin_data_pb2.MeshPluginData.COLOR
    assert data.components == 14 and list(data.shape) == [1, 4, 3]
    assert (
        data.json_config
        == '{"camera": {"cls": "PerspectiveCamera", "fov": 75}, "lights": [{"cls": "AmbientLight"}]}'
    )
    assert [e.step for e in load_run(logdir).Tensors("m_FACE")] == [2]


def test_vertices_only_and_add_value(logdir):
    with SummaryWriter(logdir) as w:
        w.add_mesh("points", VERTICES)
        w.add_value("mesh", "cloud", {"vertices": VERTICES, "colors": COLORS}, 5)
    values = values_by_tag(logdir)
    assert set(values) == {"points_VERTEX", "cloud_VERTEX", "cloud_COLOR"}
    points = plugin_data_pb2.MeshPluginData.FromString(
        values["points_VERTEX"].metadata.plugin_data.content
    )
    assert points.components == 2 and points.json_config == "{}"
    cloud = plugin_data_pb2.MeshPluginData.FromString(
        values["cloud_COLOR"].metadata.plugin_data.content
    )
    assert cloud.components == (1 << 1) | (1 << 3)
    np.testing.assert_array_equal(
        tensor_util.make_ndarray(values["cloud_COLOR"].tensor), COLORS.astype(np.float32)
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"vertices": VERTICES[0]}, ValueError, "vertices must have shape"),
        ({"vertices": np.zeros((1, 4, 2))}, ValueError, "vertices must have shape"),
        ({"vertices": None}, TypeError, "vertices"),
        ({"vertices": np.zeros((1, 0, 3))}, ValueError, "vertices is empty"),
        (
            {"vertices": VERTICES, "colors": COLORS[:, :2]},
            ValueError,
            "colors must have one colour per vertex",
        ),
        ({"vertices": VERTICES, "colors": COLORS * -1.0}, ValueError, "colors must be in 0..255"),
        (
            {"vertices": VERTICES, "faces": FACES + 4},
            ValueError,
            "faces must hold integer vertex indices",
        ),
        ({"vertices": VERTICES, "faces": FACES[0]}, ValueError, "faces must have shape"),
        (
            {"vertices": VERTICES, "faces": np.concatenate([FACES, FACES])},
            ValueError,
            "faces must have the batch size",
        ),
        ({"vertices": VERTICES, "config_dict": "fov=75"}, TypeError, "config_dict"),
        ({"vertices": VERTICES, "config_dict": {"x": object()}}, TypeError, "config_dict"),
        ({"vertices": VERTICES.astype(np.complex64)}, TypeError, "vertices"),
    ],
)
def test_bad_input(logdir, kwargs, error, match):
    with SummaryWriter(logdir) as w, pytest.raises(error, match=match):
        w.add_mesh("m", **kwargs)
    assert load_run(logdir).Tags()["tensors"] == []
