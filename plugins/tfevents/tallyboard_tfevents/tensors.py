"""``TensorProto`` to numpy, in every form writers use, and numpy to ``TensorProto``.

TensorFlow packs numbers in ``tensor_content`` (little-endian bytes); torch and tensorboardX use
the repeated fields (``float_val``, ``double_val``, ...); strings are always ``string_val``. As
TensorFlow's own reader does, a repeated field shorter than the shape is filled with its last
value, and an empty one means zeros (a tensor with no data field at all, such as TF's [0, 3]).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .proto import (
    DT_BFLOAT16,
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
    TensorProto,
    shape,
)

#: dtype code -> (numpy dtype of tensor_content, repeated field holding the values)
_LAYOUT: dict[int, tuple[str, str]] = {
    DT_FLOAT: ("<f4", "float_val"),
    DT_DOUBLE: ("<f8", "double_val"),
    DT_INT32: ("<i4", "int_val"),
    DT_UINT8: ("u1", "int_val"),
    DT_INT16: ("<i2", "int_val"),
    DT_INT8: ("i1", "int_val"),
    DT_UINT16: ("<u2", "int_val"),
    DT_INT64: ("<i8", "int64_val"),
    DT_UINT32: ("<u4", "uint32_val"),
    DT_UINT64: ("<u8", "uint64_val"),
    DT_BOOL: ("?", "bool_val"),
    DT_COMPLEX64: ("<c8", "scomplex_val"),
    DT_COMPLEX128: ("<c16", "dcomplex_val"),
    DT_HALF: ("<f2", "half_val"),
    DT_BFLOAT16: ("<u2", "half_val"),  # bits; widened to float32 below
}


#: numpy dtype name -> dtype code: the one table of which numpy dtype is which TensorFlow one
#: (bfloat16, which numpy lacks, is read as float32 and never written).
DTYPES: dict[str, int] = {
    np.dtype(layout).name: code for code, (layout, _) in _LAYOUT.items() if code != DT_BFLOAT16
}


def from_ndarray(arr: np.ndarray) -> Any:
    """A ``TensorProto`` holding ``arr``: numbers and bools as little-endian ``tensor_content``,
    text (str or bytes) in ``string_val`` as UTF-8. ``KeyError`` for a dtype TensorFlow has no
    code for (:data:`DTYPES`)."""
    if arr.dtype.kind in "SU":
        flat = arr.reshape(-1).tolist()
        values = [v.encode("utf-8") if isinstance(v, str) else v for v in flat]
        return TensorProto(dtype=DT_STRING, tensor_shape=shape(arr.shape), string_val=values)
    code = DTYPES[arr.dtype.name]
    content = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    return TensorProto(dtype=code, tensor_shape=shape(arr.shape), tensor_content=content)


def shape_of(tensor: Any) -> tuple[int, ...]:
    """The tensor's dimensions."""
    return tuple(int(d.size) for d in tensor.tensor_shape.dim)


def strings(tensor: Any) -> list[bytes]:
    """The ``string_val`` of a DT_STRING tensor, padded to its shape as TensorFlow does."""
    values = [bytes(s) for s in tensor.string_val]
    size = int(np.prod(shape_of(tensor), dtype=np.int64))
    if len(values) < size:
        values += [values[-1] if values else b""] * (size - len(values))
    return values


def to_ndarray(tensor: Any) -> np.ndarray | None:
    """The values of a ``TensorProto`` as a numpy array of its shape; None for a dtype numpy
    cannot hold (quantized types, resources, variants) or data that does not fit the shape.

    Strings come as an object array of ``bytes``; bfloat16 as exact float32 (numpy has no
    bfloat16), float16 as float16.
    """
    dims = shape_of(tensor)
    size = int(np.prod(dims, dtype=np.int64))
    code = int(tensor.dtype)
    if code == DT_STRING:
        out = np.empty(size, object)
        out[:] = strings(tensor)[:size] if size else []
        return out.reshape(dims)
    layout = _LAYOUT.get(code)
    if layout is None:
        return None
    dtype, field = layout
    if tensor.tensor_content:
        flat = np.frombuffer(tensor.tensor_content, dtype)
        if flat.size != size:
            return None
    else:
        raw = getattr(tensor, field)
        if code in (DT_COMPLEX64, DT_COMPLEX128):
            pairs = np.asarray(raw, "<f4" if code == DT_COMPLEX64 else "<f8")
            flat = pairs.view(dtype) if pairs.size % 2 == 0 else np.empty(0, dtype)
        elif code in (DT_HALF, DT_BFLOAT16):
            flat = np.asarray(raw, np.int64).astype("<u2").view(dtype)
        else:
            flat = np.asarray(raw, dtype)
        if flat.size == 0:
            flat = np.zeros(size, dtype)
        elif flat.size < size:
            flat = np.concatenate([flat, np.full(size - flat.size, flat[-1], dtype)])
        elif flat.size > size:
            return None
    if code == DT_BFLOAT16:
        flat = (flat.astype(np.uint32) << 16).view(np.float32)
    return flat.astype(flat.dtype.newbyteorder("="), copy=True).reshape(dims)
