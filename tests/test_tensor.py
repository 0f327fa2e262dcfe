"""The tensor kind: every dtype round-trips through TensorBoard's tensor_util.make_ndarray."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
from conftest import load_run, raw_events
from tallyboard import SummaryWriter
from tensorboard.util import tensor_util

NUMPY_CASES = [
    np.array([[1.5, -2.25], [3.0, np.inf]], dtype=np.float32),
    np.array([0.1, np.nan, -0.0], dtype=np.float64),
    np.array([1.0009765625, 65504.0, -6.1e-5], dtype=np.float16),
    np.arange(-4, 4, dtype=np.int8).reshape(2, 2, 2),
    np.array([-32768, 32767], dtype=np.int16),
    np.array([-(2**31), 2**31 - 1], dtype=np.int32),
    np.array([-(2**63), 2**63 - 1], dtype=np.int64),
    np.array([0, 200, 255], dtype=np.uint8),
    np.array([0, 65535], dtype=np.uint16),
    np.array([0, 2**32 - 1], dtype=np.uint32),
    np.array([0, 2**64 - 1], dtype=np.uint64),
    np.array([True, False, True]),
    np.array([1 + 2j, -3.5j], dtype=np.complex64),
    np.array([[1e300 + 1e-300j]], dtype=np.complex128),
    np.array(7.5),
    np.array([1.0, 2.0], dtype=">f8"),
]


@pytest.mark.parametrize("arr", NUMPY_CASES, ids=lambda a: f"{a.dtype}-{a.shape}")
def test_numpy_dtypes_round_trip(logdir, arr):
    with SummaryWriter(logdir) as w:
        w.add_tensor("t", arr, 4)
    (ev,) = load_run(logdir).Tensors("t")
    back = tensor_util.make_ndarray(ev.tensor_proto)
    assert ev.step == 4
    assert back.dtype == arr.dtype.newbyteorder("=") and back.shape == arr.shape
    np.testing.assert_array_equal(back, arr)


@pytest.mark.parametrize(
    "t",
    [
        torch.tensor([1.5, -2.0], dtype=torch.float16),
        torch.tensor([[0, 128, 255]], dtype=torch.uint8),
        torch.tensor([1 + 1j], dtype=torch.complex64),
        torch.tensor([True, False]),
        torch.arange(6, dtype=torch.int64).reshape(2, 3),
        torch.randn(3, 2).t(),
    ],
    ids=lambda t: str(t.dtype),
)
def test_torch_tensors_round_trip(logdir, t):
    with SummaryWriter(logdir) as w:
        w.add_tensor("t", t)
    (ev,) = load_run(logdir).Tensors("t")
    np.testing.assert_array_equal(tensor_util.make_ndarray(ev.tensor_proto), t.numpy())


def test_float16_is_dt_half_and_bfloat16_is_exact_float32(logdir):
    bf = torch.tensor([1.0078125, -3.140625, 1e38], dtype=torch.bfloat16)
    jax_like = np.array([0.5, 2.0], dtype=ml_dtypes.bfloat16)
    with SummaryWriter(logdir) as w:
        w.add_tensor("half", np.array([1.0], dtype=np.float16))
        w.add_tensor("bf", bf)
        w.add_tensor("bfnp", jax_like)
    events = {
        e.summary.value[0].tag: e.summary.value[0]
        for e in raw_events(logdir)
        if e.HasField("summary")
    }
    assert events["half"].tensor.dtype == 19  # DT_HALF
    assert events["half"].metadata.plugin_data.plugin_name == "tensor"
    assert events["bf"].tensor.dtype == 1  # DT_FLOAT, exact upcast
    back = tensor_util.make_ndarray(events["bf"].tensor)
    assert back.dtype == np.float32 and back.tolist() == bf.float().tolist()
    assert tensor_util.make_ndarray(events["bfnp"].tensor).tolist() == [0.5, 2.0]


def test_strings_and_add_value(logdir):
    with SummaryWriter(logdir) as w:
        w.add_tensor("s", np.array([["a", "héllo"]]))
        w.add_value("tensor", "v", [1, 2, 3], 9)
    acc = load_run(logdir)
    assert tensor_util.make_ndarray(acc.Tensors("s")[0].tensor_proto).tolist() == [
        [b"a", "héllo".encode()]
    ]
    (ev,) = acc.Tensors("v")
    assert ev.step == 9 and tensor_util.make_ndarray(ev.tensor_proto).tolist() == [1, 2, 3]


def test_later_mutation_does_not_change_what_is_written(logdir):
    arr = np.zeros(3, dtype=np.float32)
    with SummaryWriter(logdir) as w:
        w.add_tensor("t", arr)
        arr[:] = 5
    assert tensor_util.make_ndarray(load_run(logdir).Tensors("t")[0].tensor_proto).tolist() == [
        0,
        0,
        0,
    ]


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (np.zeros((0, 2)), ValueError, "tensor is empty"),
        ([], ValueError, "tensor is empty"),
        (np.array([1.0], dtype=np.longdouble), TypeError, "tensor has unsupported dtype"),
        (
            np.array(["2020-01-01"], dtype="datetime64[D]"),
            TypeError,
            "tensor has unsupported dtype",
        ),
        (np.array([object()]), TypeError, "tensor"),
        ("text", TypeError, "tensor"),
        (None, TypeError, "tensor"),
    ],
)
def test_bad_input_raises_in_caller(logdir, value, error, match):
    with SummaryWriter(logdir) as w:
        w.add_tensor("ok", [1.0])
        with pytest.raises(error, match=match):
            w.add_tensor("bad", value)
    assert load_run(logdir).Tags()["tensors"] == ["ok"]
