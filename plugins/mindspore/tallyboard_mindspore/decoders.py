"""Decoders ``("mindspore", kind)``: MindSpore summary values back into the rows of ``tallyboard.read``.

Each decoder is called as ``decode(value, step, wall_time)`` with a
:class:`~tallyboard_mindspore.reader.MindSporeValue` and returns the kind's payload (scalar: a
float, the reader's columns; tensor: a numpy array; histogram: a :class:`MindSporeHistogram`;
anf_graph and the lineage kinds: the serialized message), or a row (a dict) where no payload
fits (an image: its table has no ``sample``, and ``from_row`` keeps its PNG bytes; a histogram
of no finite value), or None when the value is not of its kind. Rows carry the same columns
as the ``tfevents`` decoders of the same kind, so one table can hold both formats and a row can
be turned back into a value.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from tallyboard_histogram.compute import Histogram, raw_histogram

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


@dataclass(frozen=True, eq=False)
class MindSporeHistogram(Histogram):
    """A histogram as a MindSpore file holds it: the histogram kind's payload with MindSpore's
    own counts of the values that are no finite number, which its row shows too and the
    ``mindspore`` sink writes back."""

    nan_count: int = 0
    pos_inf_count: int = 0
    neg_inf_count: int = 0

    def to_row(self) -> dict[str, Any]:
        """The histogram's row (:meth:`Histogram.to_row`) and MindSpore's three counts."""
        return {
            **super().to_row(),
            "nan_count": self.nan_count,
            "pos_inf_count": self.pos_inf_count,
            "neg_inf_count": self.neg_inf_count,
        }


def decode_histogram(value: Any, step: int, wall_time: float) -> Any:
    """``Summary.Histogram`` as the histogram kind's payload, a :class:`MindSporeHistogram`, in
    TensorBoard's convention: ``bucket_limits`` the right edges after the first bucket's left
    edge, ``bucket_counts`` the counts after a leading 0 (the exact inverse of the sink's
    encoding of a bucketed histogram); ``sum_squares`` is NaN (MindSpore keeps none). A
    histogram of no finite value (no bucket: ``min``, ``max`` and ``sum`` NaN) is no
    ``Histogram``, which holds one bucket at least: it stays a row of the same fields
    (``bucket_limit`` and ``bucket`` empty)."""
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
    extra = (ints[2], ints[3], ints[4])
    if not lefts:
        row = dict(zip(_STATS, (stats[6], stats[5], float(ints[8]), stats[7], nan)))
        return {**row, "bucket_limit": [], "bucket": [], **dict(zip(_COUNTS, extra))}
    h = raw_histogram(stats[6], stats[5], ints[8], stats[7], nan, [*lefts, rights[-1]], counts)
    return MindSporeHistogram(
        h.min, h.max, h.num, h.sum, h.sum_squares, h.bucket_limits, h.bucket_counts, *extra
    )


_STATS = ("min", "max", "num", "sum", "sum_squares")
_COUNTS = ("nan_count", "pos_inf_count", "neg_inf_count")


def decode_graph(value: Any, step: int, wall_time: float) -> bytes | None:
    """An ``Event.graph_def`` as the anf_graph kind's payload, the serialized anf_ir
    ``GraphProto`` (its row, ``data``, is the kind's: ``tallyboard_mindspore.graph_row``)."""
    if value.event_field != GRAPH_EVENT_FIELD:
        return None
    return bytes(value.data)


def lineage_decoder(event_field: int) -> Callable[[Any, int, float], bytes | None]:
    """A decoder of the lineage message in ``LineageEvent`` field ``event_field`` as the
    lineage kind's payload, its serialized bytes (the row, ``data``, is the kind's:
    ``tallyboard_lineage.lineage_row``)."""

    def decode(value: Any, step: int, wall_time: float) -> bytes | None:
        if value.event_field != event_field or value.value_field:
            return None
        return bytes(value.data)

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
