"""Scalars as TensorBoard ``Event`` bytes: hand-packed for plain scalars (the hot path)."""

from __future__ import annotations

import struct

from plugboard.wire import float32, varint, wall_step
from plugboard_tfevents.encoding import summary_event

from .methods import TensorScalar

_pack_head = struct.Struct("<Bd").pack
_pack_f = struct.Struct("<f").pack
_suffixes: dict[str, bytes] = {}


def _suffix(tag: str) -> bytes:
    """Everything after wall_time and step, up to the float: the same bytes for every step."""
    tag_bytes = tag.encode("utf-8")
    value_len = 1 + len(varint(len(tag_bytes))) + len(tag_bytes) + 5
    summary_len = 1 + len(varint(value_len)) + value_len
    out = (
        b"\x2a"
        + varint(summary_len)
        + b"\x0a"
        + varint(value_len)
        + b"\x0a"
        + varint(len(tag_bytes))
        + tag_bytes
        + b"\x15"
    )
    if len(_suffixes) < 100_000:
        _suffixes[tag] = out
    return out


def encode(tag: str, step: int | None, wall_time: float, value: object) -> bytes:
    """One ``Event`` with ``Summary.Value(tag, simple_value)``, or a rank-0 tensor (new style)."""
    if type(value) is float:
        try:
            tail = (_suffixes.get(tag) or _suffix(tag)) + _pack_f(value)
        except OverflowError:
            tail = _suffixes[tag] + float32(value)
        if not step:  # None, or 0 which proto3 leaves out
            return _pack_head(9, wall_time) + tail
        return wall_step(wall_time, step) + tail
    assert isinstance(value, TensorScalar)
    from plugboard_tfevents.proto import DT_DOUBLE, DT_FLOAT, SummaryValue, TensorProto, metadata

    if value.double_precision:
        tensor = TensorProto(dtype=DT_DOUBLE, double_val=[value.value])
    else:
        tensor = TensorProto(dtype=DT_FLOAT, float_val=[value.value])
    return summary_event(
        step, wall_time, [SummaryValue(tag=tag, tensor=tensor, metadata=metadata("scalars"))]
    )


def decode(value: object, step: int, wall_time: float) -> dict[str, float] | None:
    """A tensor-style scalar (TF2 ``tf.summary.scalar``: rank-0 tensor, plugin ``scalars``)."""
    import numpy as np

    meta = getattr(value, "metadata", None)
    if meta is None or meta.plugin_data.plugin_name != "scalars":
        return None
    if not value.HasField("tensor"):  # type: ignore[attr-defined]
        return None
    tensor = value.tensor  # type: ignore[attr-defined]
    if tensor.tensor_content:
        dtype = {1: "<f4", 2: "<f8", 3: "<i4", 9: "<i8", 19: "<f2"}.get(tensor.dtype)
        if dtype is None:
            return None
        return {"value": float(np.frombuffer(tensor.tensor_content, dtype=dtype)[0])}
    for name in ("float_val", "double_val", "int_val", "int64_val"):
        vals = getattr(tensor, name)
        if len(vals):
            return {"value": float(vals[0])}
    if len(tensor.half_val):
        return {"value": float(np.array([tensor.half_val[0]], np.uint16).view(np.float16)[0])}
    return None
