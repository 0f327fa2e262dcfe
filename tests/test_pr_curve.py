"""The pr_curve kind: torch's numbers, TensorBoard's layout and plugin data."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import load_run, raw_events
from tallyboard import SummaryWriter
from tensorboard.plugins.pr_curve import plugin_data_pb2
from tensorboard.util import tensor_util
from torch.utils.tensorboard import summary as torch_summary


def read_curve(logdir, tag="pr"):
    (value,) = [
        v
        for e in raw_events(logdir)
        if e.HasField("summary")
        for v in e.summary.value
        if v.tag == tag
    ]
    assert value.metadata.plugin_data.plugin_name == "pr_curves"
    content = plugin_data_pb2.PrCurvePluginData.FromString(value.metadata.plugin_data.content)
    return tensor_util.make_ndarray(value.tensor), content, value.metadata.plugin_data.content


def test_worked_values(logdir):
    with SummaryWriter(logdir) as w:
        w.add_pr_curve("pr", [1, 0, 1, 0], [0.9, 0.2, 0.6, 0.7], 1, num_thresholds=3)
        w.add_pr_curve(
            "prw", np.array([1, 0, 1, 0]), torch.tensor([0.9, 0.2, 0.6, 0.7]), 1, 3, [2, 1, 1, 1]
        )
    data, content, raw = read_curve(logdir)
    assert data.dtype == np.float32 and data.shape == (6, 3)
    np.testing.assert_allclose(
        data, [[2, 2, 0], [2, 1, 0], [0, 1, 2], [0, 0, 2], [0.5, 2 / 3, 0], [1, 1, 0]], rtol=1e-6
    )
    assert content.num_thresholds == 3 and content.version == 0
    data, _, _ = read_curve(logdir, "prw")
    np.testing.assert_allclose(
        data, [[3, 3, 0], [2, 1, 0], [0, 1, 2], [0, 0, 3], [0.6, 0.75, 0], [1, 1, 0]], rtol=1e-6
    )


def test_plugin_content_bytes_and_clamp(logdir):
    with SummaryWriter(logdir) as w:
        w.add_pr_curve("pr", [1, 0], [0.3, 0.8], num_thresholds=11)
        w.add_pr_curve("big", [1, 0], [0.3, 0.8], num_thresholds=500)
    assert read_curve(logdir)[2] == b"\x10\x0b"
    data, content, _ = read_curve(logdir, "big")
    assert content.num_thresholds == 127 and data.shape == (6, 127)


@pytest.mark.parametrize("weights", [None, "random", 2.5])
def test_values_equal_torch(logdir, weights):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 5000)
    preds = rng.random(5000) * 1.2 - 0.1  # some outside [0, 1]: dropped, as in torch
    if weights == "random":
        weights = rng.random(5000)
    with SummaryWriter(logdir) as w:
        w.add_pr_curve("pr", labels, preds, num_thresholds=50, weights=weights)
    ours, _, _ = read_curve(logdir)
    theirs = torch_summary.pr_curve("pr", labels, preds, 50, weights).value[0].tensor
    np.testing.assert_array_equal(ours, tensor_util.make_ndarray(theirs))


def test_raw_and_add_value(logdir):
    rows = [[5, 3, 0], [4, 1, 0], [0, 3, 4], [0, 2, 5], [0.55, 0.75, 1.0], [1.0, 0.6, 0.0]]
    with SummaryWriter(logdir) as w:
        w.add_pr_curve_raw("pr", *rows, global_step=2, num_thresholds=3, weights=[9])
        w.add_value(
            "pr_curve", "v", {"labels": [1, 0], "predictions": [0.9, 0.1], "num_thresholds": 5}, 3
        )
    data, content, _ = read_curve(logdir)
    np.testing.assert_allclose(data, rows, rtol=1e-7)
    assert content.num_thresholds == 3
    acc = load_run(logdir)
    assert acc.Tensors("pr")[0].step == 2 and acc.Tensors("v")[0].step == 3
    assert tensor_util.make_ndarray(acc.Tensors("v")[0].tensor_proto).shape == (6, 5)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (([1, 0, 1], [0.1, 0.2]), {}, ValueError, "labels and predictions"),
        (([1, 0], [0.1, 0.2]), {"weights": [1, 2, 3]}, ValueError, "weights"),
        (([], []), {}, ValueError, "labels is empty"),
        (([1], ["a"]), {}, TypeError, "predictions"),
        (([1], [1j]), {}, TypeError, "predictions"),
        (([1], [0.5]), {"num_thresholds": 1}, ValueError, "num_thresholds"),
        (([1], [0.5]), {"num_thresholds": 2.0}, TypeError, "num_thresholds"),
    ],
)
def test_bad_input(logdir, args, kwargs, error, match):
    with SummaryWriter(logdir) as w, pytest.raises(error, match=match):
        w.add_pr_curve("pr", *args, **kwargs)
    assert load_run(logdir).Tags()["tensors"] == []


@pytest.mark.parametrize(
    ("rows", "error", "match"),
    [
        ([[1, 2]] * 5 + [[1]], ValueError, "one length"),
        ([[1, 2]] * 5 + [[[1, 2]]], ValueError, "recall must be 1-D"),
        ([[1, 2]] * 5 + [[]], ValueError, "recall is empty"),
        ([["x", "y"]] + [[1, 2]] * 5, TypeError, "true_positive_counts"),
    ],
)
def test_raw_bad_input(logdir, rows, error, match):
    with SummaryWriter(logdir) as w, pytest.raises(error, match=match):
        w.add_pr_curve_raw("pr", *rows)
