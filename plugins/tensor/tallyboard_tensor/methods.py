"""torch's ``add_tensor`` on the writer, for any array of any numeric, bool or string dtype."""

from __future__ import annotations

from typing import Any

import numpy as np
from tallyboard.faces.hints import raise_if_swapped
from tallyboard.values import check_utf8_array, to_array

#: protobuf messages cannot exceed 2 GiB (torch raises the same way)
MAX_BYTES = 1 << 31
#: numeric and bool dtypes written as they are; str and bytes arrays become DT_STRING
SUPPORTED_DTYPES = frozenset(
    [
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
        "complex64",
        "complex128",
    ]
)


def to_tensor(value: Any, arg: str = "tensor") -> np.ndarray:
    """A private copy of ``value`` as a NumPy array of a dtype TensorBoard can read back."""
    if isinstance(value, np.ndarray) and value.dtype.name == "bfloat16":  # ml_dtypes (JAX)
        value = value.astype(np.float32)  # exact
    if isinstance(value, np.ndarray) and value.dtype.kind in "SU":
        arr = value.copy()
    elif (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, (str, bytes)) for v in value)
    ):
        arr = np.array(value)
    else:
        arr = to_array(value, arg, allow_empty=True)
    if arr.dtype.name not in SUPPORTED_DTYPES and arr.dtype.kind not in "SU":
        raise TypeError(f"{arg} has unsupported dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{arg} is empty (shape {tuple(arr.shape)})")
    if arr.nbytes >= MAX_BYTES:
        raise ValueError(f"{arg} is {arr.nbytes} bytes, over protobuf's 2 GiB limit")
    return check_utf8_array(arr, arg)


def add_tensor(
    writer: Any, tag: str, tensor: Any, global_step: Any = None, walltime: Any = None
) -> None:
    """Log a whole array under ``tag`` (read back with ``tensor_util.make_ndarray``)."""
    try:
        arr = to_tensor(tensor, "tensor")
    except TypeError:
        raise_if_swapped("add_tensor", tag, tensor, "tensor")
        raise
    writer.emit("tensor", tag, arr, global_step, walltime)
