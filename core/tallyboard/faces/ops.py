"""MindSpore-style summary operators: ``ScalarSummary()("loss", value)`` and friends.

As in MindSpore, an operator call puts its value into a process-wide cache under
``"<name>[:Scalar]"`` (``[:Image]``, ``[:Tensor]``, ``[:Histogram]``); a later value for the same
key replaces the earlier one. ``SummaryRecord.record()`` in ``'train'`` mode drains the cache
into the step it records; in ``'eval'`` mode it leaves the cache alone. Values are validated
when the operator is called (MindSpore checks them later, at ``record()``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from tallyboard.faces import mindspore_values
from tallyboard.values import check_utf8, to_array

__all__ = ["ScalarSummary", "ImageSummary", "TensorSummary", "HistogramSummary", "to_numpy"]

_lock = threading.Lock()
_cache: dict[str, np.ndarray] = {}
#: NumPy types MindSpore summary files can hold.
SUPPORTED_TYPES = frozenset(
    [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
    + [np.float16, np.float32, np.float64]
)


def to_numpy(
    plugin: str,
    value: Any,
    owner: str = "SummaryRecord",
    copy: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """A NumPy copy of ``value`` checked for ``plugin`` as MindSpore checks it (``copy``: how to
    copy an array, ``np.copy`` by default; the face passes :class:`~.snapshots.Snapshots`).

    Accepts MindSpore Tensors, NumPy arrays and scalars, torch tensors, Python numbers and other
    array-likes (``__array__``, DLPack); anything else is a TypeError. Shapes: scalar needs one
    element, image 4 dimensions, tensor and histogram at least one dimension (ValueError).
    """
    if type(value) is np.ndarray:
        array = value.copy() if copy is None else copy(value)
    elif mindspore_values.is_tensor(value):
        array = mindspore_values.to_numpy(value)
        if copy is not None:  # its own bytes are dropped at once
            array = copy(array)
    else:
        try:
            if isinstance(value, (dict, set, frozenset)):
                raise TypeError
            array = to_array(value, "value", allow_empty=True)
        except TypeError:
            raise TypeError(
                f'For "{owner}", the parameter "value" expect to be Tensor, but got {type(value).__name__}'
            ) from None
    if array.dtype.type not in SUPPORTED_TYPES:
        raise TypeError(
            f'For "{owner}", the parameter "value" has dtype {array.dtype}; expect one of bool, '
            "int8-int64, uint8-uint64, float16, float32, float64"
        )
    if plugin == "scalar":
        if array.size != 1:
            got = len(array) if array.ndim else array.size
            raise ValueError(
                f'For "{owner}", the v rank must be less than or equal to 1, but got {got}.'
            )
    elif plugin == "image":
        if array.ndim != 4:
            raise ValueError(f'For "{owner}", the tensor seems not to hold a valid image.')
    elif array.ndim == 0:
        raise ValueError(f'For "{owner}", the value should not be empty.')
    return array


class _SummaryOp:
    """Base of the summary operators: ``op(name, value)`` caches ``value`` for the next record."""

    type_name = ""

    def __call__(self, name: str, value: Any) -> None:
        owner = f"{self.type_name}Summary"
        if not isinstance(name, str):
            raise TypeError(
                f"For '{owner}', the type of 'name' should be 'str', but got type '{type(name).__name__}'."
            )
        if not name:
            raise ValueError(f"For '{owner}', the name must be valid string, but got '{name}'.")
        check_utf8(name, "name")
        array = to_numpy(self.type_name.lower(), value, owner)
        with _lock:
            _cache[f"{name}[:{self.type_name}]"] = array

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ScalarSummary(_SummaryOp):
    """Record a one-element value as a scalar: ``ScalarSummary()("loss", loss)``."""

    type_name = "Scalar"


class ImageSummary(_SummaryOp):
    """Record an NCHW batch of images: ``ImageSummary()("input", images)``."""

    type_name = "Image"


class TensorSummary(_SummaryOp):
    """Record a whole tensor: ``TensorSummary()("weights", w)``."""

    type_name = "Tensor"


class HistogramSummary(_SummaryOp):
    """Record a histogram of a tensor's values: ``HistogramSummary()("grads", g)``."""

    type_name = "Histogram"


def take() -> dict[str, np.ndarray]:
    """Empty the cache and return what it held (in insertion order)."""
    global _cache
    with _lock:
        data, _cache = _cache, {}
    return data


def pending() -> int:
    """How many values wait in the cache."""
    return len(_cache)
