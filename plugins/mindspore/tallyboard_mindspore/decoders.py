"""Decoders ``("mindspore", kind)``: MindSpore summary values back into the rows of ``tallyboard.read``.

Each decoder is called as ``decode(value, step, wall_time)`` with a
:class:`~tallyboard_mindspore.reader.MindSporeValue` and returns a row (a dict), the kind's
payload where the kind declares one with its row (``Kind.to_row``: tensor; an image stays a
row: its table has no ``sample``, and ``from_row`` keeps its PNG bytes), or None when the
value is not of its kind. Rows carry the same columns as the ``tfevents`` decoders of the same
kind, so one table can hold both formats and a row can be turned back into a value.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from .wire import DATA_TYPES, fields

_unpack_d = struct.Struct("<d").unpack
_unpack_f = struct.Struct("<f").unpack_from

#: ``Summary.Value`` field of each payload, ``Event`` field of graphs.
SCALAR, IMAGE, TENSOR, HISTOGRAM, LANDSCAPE = 3, 4, 8, 9, 10
SUMMARY_EVENT_FIELD, GRAPH_EVENT_FIELD = 5, 4
#: numpy dtype name of each anf_ir ``DataType`` a summary tensor declares.
DTYPE_NAMES = {code: np.dtype(t).name for t, code in DATA_TYPES.items()}


def decode_scalar(value: Any, step: int, wall_time: float) -> float | None:
    """``scalar_value`` (a float32) as the scalar kind's payload, a float (the reader puts it
    in its scalar columns)."""
    if value.value_field != SCALAR or value.event_field != SUMMARY_EVENT_FIELD:
        return None
    if len(value.data) != 4:
        raise ValueError(f"scalar_value holds {len(value.data)} bytes, expected 4")
    return float(_unpack_f(value.data, 0)[0])


def decode_image(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """``Summary.Image`` as ``width, height, colorspace`` and ``data``: the PNG bytes
    (``PIL.Image.open(io.BytesIO(row["data"]))``)."""
    if value.value_field != IMAGE or value.event_field != SUMMARY_EVENT_FIELD:
        return None
    got: dict[int, Any] = {}
    for number, _, v in fields(value.data):
        got[number] = v
    missing = [n for n in (1, 2, 3, 4) if n not in got]
    if missing:
        raise ValueError(f"Summary.Image lacks required fields {missing}")
    return {
        "width": int(got[2]),
        "height": int(got[1]),
        "colorspace": int(got[3]),
        "data": bytes(got[4]),
    }


def decode_tensor(value: Any, step: int, wall_time: float) -> np.ndarray | None:
    """anf_ir ``TensorProto`` as the tensor kind's payload: a numpy array of the declared
    ``data_type`` (MindSpore stores every element as float32); its row holds ``dtype``,
    ``shape`` and ``value``."""
    if value.value_field != TENSOR or value.event_field != SUMMARY_EVENT_FIELD:
        return None
    dims: list[int] = []
    data_type = 0
    floats: list[bytes] = []
    for number, wire_type, v in fields(value.data):
        if number == 1:
            if wire_type == 2:  # packed dims (MindSpore writes them unpacked)
                dims.extend(_packed_varints(v))
            else:
                dims.append(v - (1 << 64) if v >= 1 << 63 else v)
        elif number == 2:
            data_type = v
        elif number == 3:
            floats.append(v)  # packed (wire type 2) or one unpacked float (5): 4-byte groups
    name = DTYPE_NAMES.get(data_type)
    if name is None:
        raise ValueError(f"TensorProto data_type {data_type} is not one MindSpore summaries write")
    flat = np.frombuffer(b"".join(floats), "<f4")
    size = math.prod(dims)
    if flat.size != size:
        raise ValueError(f"TensorProto of shape {dims} holds {flat.size} float_data elements")
    with np.errstate(invalid="ignore", over="ignore"):
        array = flat.astype(name).reshape(dims)
    return array


def decode_histogram(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """``Summary.Histogram`` in TensorBoard's convention: ``bucket_limit`` the right edges after
    the first bucket's left edge, ``bucket`` the counts after a leading 0 (the exact inverse of
    the sink's encoding of a bucketed histogram); ``sum_squares`` is NaN (MindSpore keeps none),
    ``min``, ``max`` and ``sum`` are NaN when no value was finite. ``nan_count``,
    ``pos_inf_count`` and ``neg_inf_count`` are MindSpore's own."""
    if value.value_field != HISTOGRAM or value.event_field != SUMMARY_EVENT_FIELD:
        return None
    lefts: list[float] = []
    rights: list[float] = []
    counts: list[float] = [0.0]
    nan = math.nan
    stats = {5: nan, 6: nan, 7: nan}
    ints = {2: 0, 3: 0, 4: 0, 8: 0}
    for number, _, v in fields(value.data):
        if number == 1:
            left = width = nan
            count = 0
            for n, _, b in fields(v):
                if n == 1:
                    left = _unpack_d(b)[0]
                elif n == 2:
                    width = _unpack_d(b)[0]
                elif n == 3:
                    count = b
            lefts.append(left)
            rights.append(left + width)
            counts.append(float(count))
        elif number in stats:
            stats[number] = _unpack_d(v)[0]
        elif number in ints:
            ints[number] = v
    # an edge shared by two buckets is the next bucket's left, as written: no rounding of
    # left + width creeps in; the last edge can only be left + width
    limits = [*lefts, rights[-1]] if lefts else []
    return {
        "min": stats[6],
        "max": stats[5],
        "num": float(ints[8]),
        "sum": stats[7],
        "sum_squares": nan,
        "bucket_limit": limits,
        "bucket": counts if lefts else [],
        "nan_count": ints[2],
        "pos_inf_count": ints[3],
        "neg_inf_count": ints[4],
    }


def decode_graph(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """An ``Event.graph_def`` as ``{"data": serialized anf_ir GraphProto}``."""
    if value.event_field != GRAPH_EVENT_FIELD:
        return None
    return {"data": bytes(value.data)}


def lineage_decoder(event_field: int) -> Callable[[Any, int, float], dict[str, Any] | None]:
    """A decoder of the lineage message in ``LineageEvent`` field ``event_field`` as
    ``{"data": its serialized bytes}`` (e.g. ``TrainLineage.FromString(row["data"])``)."""

    def decode(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
        if value.event_field != event_field or value.value_field:
            return None
        return {"data": bytes(value.data)}

    decode.__name__ = f"decode_lineage_{event_field}"
    return decode


def _packed_varints(data: bytes) -> list[int]:
    out = []
    result = shift = 0
    for b in data:
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            out.append(result - (1 << 64) if result >= 1 << 63 else result)
            result = shift = 0
    return out
