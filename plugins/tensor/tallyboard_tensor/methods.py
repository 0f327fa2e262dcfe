"""torch's ``add_tensor`` on the writer, for any array of any numeric, bool or string dtype."""

from __future__ import annotations

from typing import Any

import numpy as np
from tallyboard.values import (
    check_utf8_array,
    defer_call,
    on_device,
    raise_if_swapped,
    to_array,
)

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
    """Log a whole array under ``tag``, to read back later with its dtype and shape.

    TensorBoard has no dashboard for these (``plugin_name`` ``tensor``); :func:`tallyboard.read`
    with ``kind="tensor"`` and TensorBoard's readers give the array back with its dtype and
    shape. Unlike torch, which takes torch tensors only, any array works, and float16, bfloat16
    (stored as the exactly equal float32, since TensorBoard cannot decode bfloat16 without
    TensorFlow) and uint8 read back right; arrays of str or bytes become string tensors.

    Args:
        tag: The tensor's name, a str.
        tensor: Any array of any shape: NumPy, torch (any device), list, ``__array__``/DLPack,
            of a bool, integer, float (16, 32, 64 bits, bfloat16), complex, str or bytes dtype,
            at least one element and under 2 GiB (protobuf's limit).
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: An unsupported dtype (object, datetime, ...), or a str ``tensor`` beside a
            non-str ``tag`` (the message says they look swapped).
        ValueError: ``tensor`` is empty or 2 GiB or more; a str element holds a lone surrogate.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/tensor") as writer:
        ...     writer.add_tensor("confusion", np.array([[50, 2], [3, 45]], dtype=np.int64), 0)
    """
    if on_device(tensor):  # a jax.Array, a CUDA tensor: converted on the writer's side
        defer_call(
            writer, "tensor", tag, tensor, global_step, walltime,
            lambda w, host: add_tensor(w, tag, host, global_step, walltime),
        )  # fmt: skip
        return
    try:
        arr = to_tensor(tensor, "tensor")
    except TypeError:
        raise_if_swapped("add_tensor", tag, tensor, "tensor")
        raise
    writer.emit("tensor", tag, arr, global_step, walltime)
