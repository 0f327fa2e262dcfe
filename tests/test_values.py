"""Input conversion shared by every kind: arrays from anything array-like, copied at call time."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import load_run
from tallyboard import SummaryWriter
from tallyboard.values import check_step, check_walltime, to_array, to_float
from tensorboard.util import tensor_util


class DLPackOnly:
    """An array from another framework that speaks only DLPack (as JAX and CuPy arrays do)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self._t = tensor

    def __dlpack__(self, **kwargs):
        return self._t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


class ArrayLike:
    def __init__(self, data):
        self.data = np.asarray(data)

    def __array__(self, dtype=None, copy=None):
        return self.data


def test_dlpack_and_array_protocol_objects_become_arrays():
    assert to_array(DLPackOnly(torch.arange(4.0))).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert to_array(ArrayLike([[1, 2]])).shape == (1, 2)
    assert to_float(DLPackOnly(torch.tensor([2.5]))) == 2.5


def test_arrays_are_copied_so_later_mutation_is_not_written(logdir):
    data = np.zeros((2, 3))
    with SummaryWriter(logdir) as w:
        w.add_tensor("t", data, 0)
        data[:] = 7
    (event,) = load_run(logdir).Tensors("t")
    assert tensor_util.make_ndarray(event.tensor_proto).tolist() == [[0.0] * 3] * 2


def test_torch_tensors_that_require_grad_are_detached():
    t = torch.ones(3, requires_grad=True) * 2
    assert to_array(t).tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("value", ["1", b"1", None, object(), {"a": 1}])
def test_non_numeric_values_are_type_errors_naming_the_argument(value):
    with pytest.raises(TypeError, match="myarg"):
        to_array(value, "myarg")


def test_steps_and_walltimes():
    assert (
        check_step(np.int32(5)) == 5
        and check_step(torch.tensor(6)) == 6
        and check_step(None) is None
    )
    with pytest.raises(TypeError, match="global_step must be an int"):
        check_step(np.float64(1.0))
    assert check_walltime(np.float32(2.5)) == 2.5 and check_walltime(3) == 3.0
    with pytest.raises(TypeError):
        check_walltime(True)


def test_small_float_scalars_of_ml_dtypes_read_exactly():
    # jax's bfloat16 and float8 values are NumPy scalars of ml_dtypes' types on the host
    import ml_dtypes  # installed with jax (the test extra)

    assert to_float(ml_dtypes.bfloat16(2.5)) == 2.5
    assert to_float(ml_dtypes.float8_e4m3fn(-1.5)) == -1.5
    assert to_float(np.array(0.75, dtype=ml_dtypes.bfloat16)) == 0.75
    with pytest.raises(TypeError, match="x must be a real number, got complex64"):
        to_float(np.complex64(1), "x")
