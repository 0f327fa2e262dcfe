"""Histograms as TensorBoard ``Event`` bytes: a hand-packed ``HistogramProto`` (checked in tests)."""

from __future__ import annotations

import struct

import numpy as np
from tallyboard.records.wire import field_bytes, varint
from tallyboard_tfevents.encoding import summary_event

from .compute import Histogram, histogram_of

_pack_d = struct.Struct("<d").pack
_ZERO = b"\x00" * 8
_STAT_KEYS = (b"\x09", b"\x11", b"\x19", b"\x21", b"\x29")  # min, max, num, sum, sum_squares


def histogram_proto_bytes(h: Histogram) -> bytes:
    """Serialized ``HistogramProto``, byte-identical to protobuf's (proto3 omits +0.0 fields)."""
    out = bytearray()
    for key, value in zip(_STAT_KEYS, (h.min, h.max, h.num, h.sum, h.sum_squares)):
        packed = _pack_d(value)
        if packed != _ZERO:
            out += key + packed
    for key, arr in ((b"\x32", h.bucket_limits), (b"\x3a", h.bucket_counts)):
        if len(arr):
            data = np.ascontiguousarray(arr, dtype="<f8").tobytes()
            out += key + varint(len(data)) + data
    return bytes(out)


def encode(tag: str, step: int | None, wall_time: float, h: Histogram | np.ndarray) -> bytes:
    """One ``Event`` with ``Summary.Value(tag, histo)``; no metadata, as torch writes it.

    A raw array (as the MindSpore face pools histogram values) is bucketed with TensorFlow bins.
    """
    if not isinstance(h, Histogram):
        h = histogram_of(h)
    value = field_bytes(1, tag.encode("utf-8")) + field_bytes(5, histogram_proto_bytes(h))
    return summary_event(step, wall_time, [value])


def decode(value: object, step: int, wall_time: float) -> dict[str, object] | None:
    """A ``Summary.Value`` holding a ``HistogramProto`` (torch, tensorboardX, TF1, tallyboard)."""
    if not value.HasField("histo"):  # type: ignore[attr-defined]
        return None
    h = value.histo  # type: ignore[attr-defined]
    return {
        "min": float(h.min),
        "max": float(h.max),
        "num": float(h.num),
        "sum": float(h.sum),
        "sum_squares": float(h.sum_squares),
        "bucket_limit": [float(x) for x in h.bucket_limit],
        "bucket": [float(x) for x in h.bucket],
    }
