"""MindSpore Tensors as Python numbers and NumPy arrays, by the cheapest way MindSpore offers.

MindSpore users pass ``mindspore.Tensor`` values to ``SummaryRecord``. Measured on MindSpore 2.10
(CPU, ``bench/bench_summary_record.py``): ``Tensor.asnumpy()`` (and ``np.asarray``,
``__array__``, which call it) costs 20-40 us even for one element, ``to_dlpack()`` hundreds and
NumPy cannot import its capsule, while ``item()`` costs about 0.4 us and ``get_bytes()`` (the
elements in row-major order, a copy) 1-5 us. So one-element float Tensors become a float through
``item()`` and arrays are built on ``get_bytes()``, falling back to ``asnumpy()`` for what NumPy
has no dtype for (complex; bfloat16 is widened to float32 from its bytes). Batching the Tensors of one ``record()`` into one transfer
(``ops.stack`` then ``asnumpy``) costs milliseconds: each Tensor is converted on its own.

MindSpore is never imported here: its Tensor type is recognised by module and class name, and
dtypes by their names.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

__all__ = ["is_tensor", "is_tensor_type", "scalar", "to_numpy"]

_TENSOR_CLASSES = frozenset({"Tensor", "TensorPy"})
_types: dict[type, bool] = {}
#: id of a MindSpore dtype -> (that dtype, its NumPy dtype or None: NumPy has none).
_dtypes: dict[int, tuple[Any, np.dtype[Any] | None]] = {}
#: id -> MindSpore dtype, of those seen that are float16/32/64 (the scalar fast path's check).
_float_dtypes: dict[int, Any] = {}
_FLOATS = frozenset({np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)})
_NUMPY_NAMES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
    | {"float16", "float32", "float64"}
)


def is_tensor_type(cls: type) -> bool:
    """Whether ``cls`` is MindSpore's Tensor or a subclass (Parameter), by module and class name."""
    known = _types.get(cls)
    if known is None:
        known = any(
            base.__name__ in _TENSOR_CLASSES
            and getattr(base, "__module__", "").split(".")[0] == "mindspore"
            for base in getattr(cls, "__mro__", ())
        )
        if len(_types) < 1024:
            _types[cls] = known
    return known


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a MindSpore Tensor."""
    return is_tensor_type(type(value))


def _numpy_dtype(dtype: Any) -> np.dtype[Any] | None:
    """The NumPy dtype of a MindSpore dtype (``Float32`` -> float32), None when NumPy has none.

    Looked up by identity (MindSpore's dtypes are singletons; their ``__hash__`` is a slow Python
    call), the object kept beside its entry so that its id stays its own."""
    entry = _dtypes.get(id(dtype))
    if entry is not None and entry[0] is dtype:
        return entry[1]
    name = str(dtype).lower()
    found = np.dtype(name) if name in _NUMPY_NAMES else None
    if len(_dtypes) < 256:
        _dtypes[id(dtype)] = (dtype, found)
        if found in _FLOATS:
            _float_dtypes[id(dtype)] = dtype
    return found


def scalar(tensor: Any) -> float | None:
    """A one-element float16/32/64 Tensor as a Python float; None for anything else (the caller
    then converts it as an array, with its checks and errors).

    MindSpore 2.10's ``dtype`` and ``item()`` are Python wrappers returning ``self._dtype`` and
    ``self._item()``: the C members are used where they exist (the public ones elsewhere), which
    leaves this at about 1.2x the cost of reading the dtype and calling ``item()``."""
    try:
        dtype = tensor._dtype
    except AttributeError:
        dtype = tensor.dtype
    if _float_dtypes.get(id(dtype)) is not dtype and _numpy_dtype(dtype) not in _FLOATS:
        return None  # item() of a bfloat16 Tensor crashes MindSpore 2.10 on NumPy 2: not called
    try:
        number = tensor._item()
    except AttributeError:
        try:
            number = tensor.item()
        except ValueError:  # more than one element
            return None
    except ValueError:
        return None
    return number if type(number) is float else None


def to_numpy(tensor: Any) -> np.ndarray:
    """A NumPy copy of ``tensor`` (read-only: nothing may change a logged value afterwards).

    bfloat16, which NumPy lacks (and whose ``asnumpy()`` crashes MindSpore 2.10 on NumPy 2), is
    widened to float32 exactly: its bits are a float32's upper half. Bytes that do not fill the
    Tensor's shape (a case MindSpore should not produce) fall back to ``asnumpy()``."""
    try:
        dtype = tensor._dtype  # the C member behind the ``dtype`` property
    except AttributeError:
        dtype = tensor.dtype
    entry = _dtypes.get(id(dtype))
    found = entry[1] if entry is not None and entry[0] is dtype else _numpy_dtype(dtype)
    if not getattr(tensor, "has_init", False):
        if found is not None:
            try:  # a size that does not match raises here, in frombuffer or reshape
                array = np.frombuffer(tensor.get_bytes(), found)
                shape = tensor.shape
                if len(shape) == 1 and len(array) == shape[0]:
                    return array  # already shaped: a reshape costs a third of the rest
                return array.reshape(shape)
            except ValueError:
                pass
        elif str(dtype) == "BFloat16":
            shape = tuple(tensor.shape)
            data = tensor.get_bytes()
            if len(data) == 2 * prod(shape):
                bits = np.frombuffer(data, "<u2").astype(np.uint32) << np.uint32(16)
                return bits.view(np.float32).reshape(shape)
    return np.array(tensor.asnumpy(), copy=True)
