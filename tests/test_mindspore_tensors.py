"""MindSpore Tensors given to SummaryRecord: converted by item() and get_bytes(), never asnumpy()
where those serve, and written exactly as the same values given as NumPy.

MindSpore is a benchmark-only dependency (``bench/bench_summary_record.py`` checks the
conversion against the real ``Tensor.asnumpy()`` of MindSpore 2.10). Here a Tensor is a class of
module ``mindspore.common.tensor`` with the members the conversion uses, each behaving as
MindSpore 2.10's does: ``dtype`` (singletons printing as ``Float32``...), ``shape``, ``item()``
(ValueError beyond one element; on bfloat16 MindSpore 2.10 crashes the process, so here it
fails the test), ``get_bytes()`` (the elements in row-major order) and ``asnumpy()`` (counted).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mindspore_reader as msr
import numpy as np
import pytest
from tallyboard import SummaryRecord
from tallyboard.faces import mindspore_values


class DType:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name

    def __hash__(self) -> int:  # MindSpore's is a slow Python call; the conversion avoids it
        raise AssertionError("hashed a dtype")


DTYPES = {
    name: DType(name)
    for name in ["Bool", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32"]
    + ["UInt64", "Float16", "Float32", "Float64", "BFloat16", "Complex64"]
}


class Tensor:
    asnumpy_calls = 0

    def __init__(self, array: np.ndarray, dtype: str | None = None) -> None:
        self._array = np.array(array)
        self._name = dtype or {"bool": "Bool"}.get(
            self._array.dtype.name, self._array.dtype.name.capitalize().replace("Uint", "UInt")
        )

    @property
    def dtype(self) -> DType:
        return DTYPES[self._name]

    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    def item(self) -> object:
        assert self._name != "BFloat16", "item() of a bfloat16 Tensor crashes MindSpore 2.10"
        if self._array.size != 1:
            raise ValueError("The tensor should have only one element")
        return self._array.item()

    def get_bytes(self) -> bytes:
        if self._name == "BFloat16":  # the upper half of each float32
            return (self._array.astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
        return np.ascontiguousarray(self._array).tobytes()

    def asnumpy(self) -> np.ndarray:
        Tensor.asnumpy_calls += 1
        return self._array


Tensor.__module__ = "mindspore.common.tensor"


class Parameter(Tensor):  # MindSpore's Parameter reports module "abc"
    pass


Parameter.__module__ = "abc"


def only(path: Path) -> Path:
    (found,) = [p for p in path.iterdir() if p.name.endswith("_MS")]
    return found


def values_written(logdir: Path) -> list[tuple[int, str, str, object]]:
    return msr.values(only(logdir))


def test_tensors_are_written_as_the_same_values_given_as_numpy(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    steps = [
        [("scalar", "loss", np.array(0.25, np.float32))],
        [("scalar", f"m{i}", np.array(i / 3, np.float64)) for i in range(10)],
        [("scalar", "count", np.array(7, np.int32))],  # not a float: the general path
        [("image", "img", rng.random((1, 3, 8, 8), dtype=np.float32))],
        [("histogram", "w", rng.normal(size=300).astype(np.float16))],
        [("tensor", "t", np.arange(6, dtype=np.uint8).reshape(2, 3))],
    ]
    written = {}
    Tensor.asnumpy_calls = 0
    for how in ("numpy", "Tensor"):
        logdir = tmp_path / how
        with SummaryRecord(logdir) as record:
            for step, values in enumerate(steps):
                for plugin, tag, value in values:
                    record.add_value(plugin, tag, Tensor(value) if how == "Tensor" else value)
                record.record(step)
        written[how] = values_written(logdir)
    assert Tensor.asnumpy_calls == 0
    assert len(written["numpy"]) == 15
    assert repr(written["Tensor"]) == repr(written["numpy"])


def test_a_parameter_is_a_tensor_and_other_classes_are_not() -> None:
    assert mindspore_values.is_tensor(Parameter(np.ones(3, np.float32)))

    class Tensor2:
        pass

    Tensor2.__name__ = "Tensor"
    Tensor2.__module__ = "mytorch"
    assert not mindspore_values.is_tensor(Tensor2())
    assert not mindspore_values.is_tensor(np.ones(2))


def test_bfloat16_is_widened_to_float32_exactly_without_item() -> None:
    values = np.array([1.5, -2.25, 3.0e38, 0.0078125], np.float32)
    got = mindspore_values.to_numpy(Tensor(values, "BFloat16"))
    assert got.dtype == np.float32
    expected = (values.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    np.testing.assert_array_equal(got, expected)
    assert mindspore_values.scalar(Tensor(np.float32(1.5), "BFloat16")) is None


def test_bfloat16_scalar_through_the_face(tmp_path: Path) -> None:
    with SummaryRecord(tmp_path) as record:
        record.add_value("scalar", "bf", Tensor(np.float32(1.5), "BFloat16"))
        record.record(1)
    ((step, tag, kind, value),) = values_written(tmp_path)
    assert (step, tag, kind, value) == (1, "bf", "scalar_value", 1.5)


def test_converted_arrays_are_read_only_copies() -> None:
    source = np.arange(12, dtype=np.float32).reshape(3, 4)
    tensor = Tensor(source)
    got = mindspore_values.to_numpy(tensor)
    source[0, 0] = 99  # the Tensor's memory changes after the call: the copy does not
    assert got[0, 0] == 0 and got.shape == (3, 4) and not got.flags.writeable


def test_without_a_dtype_numpy_has_asnumpy_is_the_fallback() -> None:
    Tensor.asnumpy_calls = 0
    got = mindspore_values.to_numpy(Tensor(np.array([1 + 2j], np.complex64), "Complex64"))
    assert Tensor.asnumpy_calls == 1 and got[0] == 1 + 2j


def test_a_tensor_of_several_elements_is_not_a_scalar(tmp_path: Path) -> None:
    with SummaryRecord(tmp_path) as record:
        with pytest.raises(ValueError, match="the v rank must be less than or equal to 1"):
            record.add_value("scalar", "loss", Tensor(np.ones(3, np.float32)))
        record.add_value("scalar", "loss", Tensor(np.float32(2.0)))  # the record goes on
        record.record(0)
    assert [v[3] for v in values_written(tmp_path)] == [2.0]


def test_tallyboard_does_not_import_mindspore() -> None:
    code = (
        "import sys, numpy as np\n"
        "from tallyboard import SummaryRecord\n"
        "from tallyboard.faces import mindspore_values\n"
        "mindspore_values.to_numpy\n"
        "assert 'mindspore' not in sys.modules, sorted(m for m in sys.modules if 'mindspore' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class FastTensor(Tensor):
    """MindSpore 2.10's Tensor also has the C members its ``dtype`` and ``item()`` wrap."""

    fast_calls = 0

    @property
    def _dtype(self) -> DType:
        FastTensor.fast_calls += 1
        return DTYPES[self._name]

    def _item(self) -> object:
        FastTensor.fast_calls += 1
        return Tensor.item(self)

    def item(self) -> object:
        raise AssertionError("the wrapper is not needed")


FastTensor.__module__ = "mindspore.common.tensor"


def test_the_members_the_public_wrappers_call_are_used_where_they_exist() -> None:
    assert mindspore_values.scalar(FastTensor(np.float32(0.5))) == 0.5
    assert FastTensor.fast_calls == 2
    assert mindspore_values.scalar(FastTensor(np.float32(0.5), "BFloat16")) is None
    assert mindspore_values.scalar(Tensor(np.float64(0.25))) == 0.25  # public ones elsewhere
