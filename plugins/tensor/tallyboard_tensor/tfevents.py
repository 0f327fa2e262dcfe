"""Arrays as TensorBoard ``TensorProto``: raw little-endian ``tensor_content``, strings in ``string_val``."""

from __future__ import annotations

from typing import Any

import numpy as np
from tallyboard_tfevents.encoding import summary_event
from tallyboard_tfevents.proto import SummaryValue, metadata
from tallyboard_tfevents.tensors import DTYPES, from_ndarray

__all__ = ["DTYPES", "decode", "encode", "tensor_proto"]

#: A TensorProto holding an array (see :func:`tallyboard_tfevents.tensors.from_ndarray`).
tensor_proto = from_ndarray


def encode(tag: str, step: int | None, wall_time: float, arr: np.ndarray) -> bytes:
    """One ``Event`` with ``Summary.Value(tag, tensor)``, metadata ``plugin_name='tensor'``."""
    value = SummaryValue(tag=tag, metadata=metadata("tensor"), tensor=tensor_proto(arr))
    return summary_event(step, wall_time, [value])


def decode(value: Any, step: int, wall_time: float) -> np.ndarray | None:
    """A generic tensor as the kind's payload, the numpy array (its row: ``dtype``, ``shape``
    and ``value``): plugin ``tensor``
    (tallyboard, torch's ``add_tensor``), or no plugin name at all (``tf.summary.write``,
    ``tf.compat.v1.summary.tensor_summary``). Packed ``tensor_content`` and the repeated fields
    are both read; strings come as str (an object array of bytes when they are no UTF-8),
    bfloat16 as exact float32."""
    from tallyboard_tfevents.tensors import to_ndarray

    if value.metadata.plugin_data.plugin_name not in ("tensor", "") or not value.HasField("tensor"):
        return None
    arr = to_ndarray(value.tensor)
    if arr is None:
        return None
    if arr.dtype == object:
        try:
            arr = np.array([s.decode("utf-8") for s in arr.reshape(-1)], dtype=str).reshape(
                arr.shape
            )
        except UnicodeDecodeError:  # binary strings stay bytes
            pass
    return arr
