"""Arrays as TensorBoard ``TensorProto``: raw little-endian ``tensor_content``, strings in ``string_val``."""

from __future__ import annotations

from typing import Any

import numpy as np
from tallyboard_tfevents.encoding import summary_event
from tallyboard_tfevents.proto import (
    DT_BOOL,
    DT_COMPLEX64,
    DT_COMPLEX128,
    DT_DOUBLE,
    DT_FLOAT,
    DT_HALF,
    DT_INT8,
    DT_INT16,
    DT_INT32,
    DT_INT64,
    DT_STRING,
    DT_UINT8,
    DT_UINT16,
    DT_UINT32,
    DT_UINT64,
    SummaryValue,
    TensorProto,
    metadata,
    shape,
)

DTYPES = {
    "float16": DT_HALF,
    "float32": DT_FLOAT,
    "float64": DT_DOUBLE,
    "int8": DT_INT8,
    "int16": DT_INT16,
    "int32": DT_INT32,
    "int64": DT_INT64,
    "uint8": DT_UINT8,
    "uint16": DT_UINT16,
    "uint32": DT_UINT32,
    "uint64": DT_UINT64,
    "bool": DT_BOOL,
    "complex64": DT_COMPLEX64,
    "complex128": DT_COMPLEX128,
}


def tensor_proto(arr: np.ndarray) -> Any:
    """A TensorProto holding ``arr`` (numeric and bool as ``tensor_content``, text as UTF-8)."""
    if arr.dtype.kind in "SU":
        flat = arr.reshape(-1).tolist()
        values = [v.encode("utf-8") if isinstance(v, str) else v for v in flat]
        return TensorProto(dtype=DT_STRING, tensor_shape=shape(arr.shape), string_val=values)
    dtype = DTYPES[arr.dtype.name]
    content = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    return TensorProto(dtype=dtype, tensor_shape=shape(arr.shape), tensor_content=content)


def encode(tag: str, step: int | None, wall_time: float, arr: np.ndarray) -> bytes:
    """One ``Event`` with ``Summary.Value(tag, tensor)``, metadata ``plugin_name='tensor'``."""
    value = SummaryValue(tag=tag, metadata=metadata("tensor"), tensor=tensor_proto(arr))
    return summary_event(step, wall_time, [value])


def decode(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """A generic tensor as ``dtype``, ``shape`` and the numpy ``value``: plugin ``tensor``
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
    return {"dtype": arr.dtype.name, "shape": list(arr.shape), "value": arr}
