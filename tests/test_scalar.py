"""Scalars: what TensorBoard reads back, byte-exact encoding, torch parity, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import load_run, raw_events
from tallyboard import SummaryWriter


def test_add_scalar_reads_back_in_tensorboard(logdir):
    with SummaryWriter(logdir) as w:
        for step in range(5):
            w.add_scalar("loss", 1.0 / (step + 1), step)
    events = load_run(logdir).Scalars("loss")
    assert [e.step for e in events] == [0, 1, 2, 3, 4]
    assert [e.value for e in events] == pytest.approx([1.0, 0.5, 1 / 3, 0.25, 0.2], rel=1e-6)


@pytest.mark.parametrize(
    "step",
    [None, 0, 1, 127, 128, 300, 16383, 16384, 2097151, 2097152, 10**12, -1, 2**63 - 1, -(2**63)],
)
@pytest.mark.parametrize("tag", ["loss", "a/b", "é" * 70, "t" * 200])
def test_hand_packed_scalar_event_equals_protobuf_encoding(step, tag):
    from tallyboard_scalar.tfevents import encode
    from tensorboard.compat.proto import event_pb2, summary_pb2

    wall = 1700000000.25
    got = encode(tag, step, wall, 0.1)
    want = event_pb2.Event(
        wall_time=wall,
        summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=0.1)]),
    )
    if step is not None:
        want.step = step
    assert got == want.SerializeToString()


def test_values_beyond_float32_become_infinity_like_protobuf(logdir):
    with SummaryWriter(logdir) as w:
        w.add_scalar("big", 1e39, 0)
        w.add_scalar("nan", float("nan"), 0)
        w.add_scalar("neg", -1e39, 0)
    acc = load_run(logdir)
    assert acc.Scalars("big")[0].value == math.inf
    assert acc.Scalars("neg")[0].value == -math.inf
    assert math.isnan(acc.Scalars("nan")[0].value)


def test_missing_step_reads_back_as_zero_and_walltime_is_kept(logdir):
    with SummaryWriter(logdir) as w:
        w.add_scalar("x", 3, walltime=1234.5)
    (event,) = load_run(logdir).Scalars("x")
    assert (event.step, event.wall_time, event.value) == (0, 1234.5, 3.0)


@pytest.mark.parametrize(
    "value",
    [
        2,
        2.0,
        True,
        np.float32(2.0),
        np.int64(2),
        np.array(2.0),
        np.array([2.0]),
        torch.tensor(2.0),
        torch.tensor([[2]]),
        [2.0],
    ],
    ids=lambda v: type(v).__name__,
)
def test_numbers_arrays_and_tensors_are_accepted(logdir, value):
    with SummaryWriter(logdir) as w:
        w.add_scalar("x", value, 0)
    assert load_run(logdir).Scalars("x")[0].value == (1.0 if value is True else 2.0)


def test_torch_bfloat16_and_numpy_step_and_tensor_step(logdir):
    with SummaryWriter(logdir) as w:
        w.add_scalar("x", torch.tensor(1.5, dtype=torch.bfloat16), np.int64(3))
        w.add_scalar("x", 2.5, torch.tensor(4))
    events = load_run(logdir).Scalars("x")
    assert [(e.step, e.value) for e in events] == [(3, 1.5), (4, 2.5)]


def test_same_scalars_as_torch_writer(tmp_path):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    ours, theirs = tmp_path / "ours", tmp_path / "torch"
    values = [0.1, -3.5, 1e-8, 12345.678]
    for cls, d in ((SummaryWriter, ours), (TorchWriter, theirs)):
        w = cls(str(d))
        for i, v in enumerate(values):
            w.add_scalar("m", v, i, walltime=100.0 + i)
        w.close()
    a, b = load_run(ours).Scalars("m"), load_run(theirs).Scalars("m")
    assert [(e.wall_time, e.step, e.value) for e in a] == [
        (e.wall_time, e.step, e.value) for e in b
    ]


def test_new_style_writes_a_rank0_tensor_for_the_scalars_plugin(logdir):
    from tensorboard.util import tensor_util

    with SummaryWriter(logdir) as w:
        w.add_scalar("f", 0.1, 1, new_style=True)
        w.add_scalar("d", 0.1, 1, new_style=True, double_precision=True)
    acc = load_run(logdir)
    f = tensor_util.make_ndarray(acc.Tensors("f")[0].tensor_proto)
    d = tensor_util.make_ndarray(acc.Tensors("d")[0].tensor_proto)
    assert f.shape == () and f.dtype == np.float32 and f == np.float32(0.1)
    assert d.dtype == np.float64 and d == 0.1
    assert acc.SummaryMetadata("f").plugin_data.plugin_name == "scalars"


def test_add_scalars_writes_one_sub_run_per_key_like_torch(logdir):
    with SummaryWriter(logdir) as w:
        w.add_scalars("group/main", {"a": 1, "b": 2}, 1)
    assert sorted(p.name for p in logdir.iterdir() if p.is_dir()) == [
        "group_main_a",
        "group_main_b",
    ]
    for key, value in (("a", 1.0), ("b", 2.0)):
        (event,) = load_run(logdir / f"group_main_{key}").Scalars("group/main")
        assert (event.step, event.value) == (1, value)
    assert "group/main" not in load_run(logdir).Tags()["scalars"]


def test_add_scalars_uses_one_walltime_for_all_keys(logdir):
    with SummaryWriter(logdir) as w:
        w.add_scalars("m", {"a": 1, "b": 2, "c": 3}, 0)
    times = {load_run(logdir / f"m_{k}").Scalars("m")[0].wall_time for k in "abc"}
    assert len(times) == 1


@pytest.mark.parametrize("key", ["../../../ESC1", "/../../x", "a/../../x", "a\0b", "x//y"])
def test_add_scalars_keys_cannot_escape_log_dir(tmp_path, key):
    logdir = tmp_path / "a" / "b" / "logdir"
    with SummaryWriter(logdir) as w:
        with pytest.raises(ValueError, match="log_dir"):
            w.add_scalars("m", {key: 1.0}, 0)
        w.add_scalar("kept", 1.0, 0)
    outside = [
        p
        for p in tmp_path.rglob("*")
        if p not in (tmp_path / "a", tmp_path / "a" / "b") and logdir not in (p, *p.parents)
    ]
    assert outside == []
    assert load_run(logdir).Scalars("kept")[0].value == 1.0


def test_add_value_reaches_the_scalar_kind(logdir):
    with SummaryWriter(logdir) as w:
        w.add_value("scalar", "v", np.float64(4.5), global_step=2)
    assert [(e.step, e.value) for e in load_run(logdir).Scalars("v")] == [(2, 4.5)]


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"tag": 5}, TypeError, "tag must be a str"),
        ({"scalar_value": "1.0"}, TypeError, "scalar_value"),
        ({"scalar_value": None}, TypeError, "scalar_value"),
        ({"scalar_value": [1.0, 2.0]}, ValueError, "scalar_value must hold exactly one element"),
        ({"scalar_value": 1 + 2j}, TypeError, "scalar_value"),
        ({"global_step": 1.7}, TypeError, "global_step must be an int"),
        ({"global_step": "3"}, TypeError, "global_step"),
        ({"global_step": 2**63}, ValueError, "global_step .* int64"),
        ({"walltime": float("nan")}, ValueError, "walltime must be finite"),
        ({"walltime": float("inf")}, ValueError, "walltime must be finite"),
        ({"walltime": "now"}, TypeError, "walltime"),
        ({"tag": "a\ud800"}, ValueError, "UTF-8"),
    ],
)
def test_bad_input_raises_in_the_caller_and_keeps_earlier_data(logdir, kwargs, exc, match):
    args = {"tag": "x", "scalar_value": 1.0, "global_step": 1, "walltime": None}
    args.update(kwargs)
    with SummaryWriter(logdir) as w:
        w.add_scalar("x", 0.5, 0)
        with pytest.raises(exc, match=match):
            w.add_scalar(**args)
        w.add_scalar("x", 0.75, 2)
    assert [(e.step, e.value) for e in load_run(logdir).Scalars("x")] == [(0, 0.5), (2, 0.75)]


def test_unknown_kind_names_the_installed_kinds(logdir):
    with SummaryWriter(logdir) as w, pytest.raises(ValueError, match="unknown kind 'nope'.*scalar"):
        w.add_value("nope", "t", 1)


def test_every_event_in_the_file_has_a_finite_walltime(logdir):
    with SummaryWriter(logdir) as w:
        w.add_scalar("x", 1.0, 0)
    assert all(math.isfinite(e.wall_time) for e in raw_events(logdir))
