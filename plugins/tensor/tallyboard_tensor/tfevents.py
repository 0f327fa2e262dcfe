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


_NUMPY_OF = {code: np.dtype(name).newbyteorder("<") for name, code in DTYPES.items()}


def decode(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """A ``tensor``-plugin value as ``dtype``, ``shape`` and the numpy ``value``."""
    if value.metadata.plugin_data.plugin_name != "tensor" or not value.HasField("tensor"):
        return None
    t = value.tensor
    dims = tuple(int(d.size) for d in t.tensor_shape.dim)
    if t.dtype == DT_STRING:
        arr = np.array([s.decode("utf-8", "replace") for s in t.string_val]).reshape(dims)
    elif t.dtype in _NUMPY_OF and t.tensor_content:
        arr = np.frombuffer(t.tensor_content, dtype=_NUMPY_OF[t.dtype]).reshape(dims)
    else:
        return None
    return {"dtype": arr.dtype.name, "shape": list(dims), "value": arr}
