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


def buckets64(h: Histogram) -> np.ndarray:
    """The ``[k, 3]`` float64 rows (left edge, right edge, count) TensorBoard's loader makes of
    a ``HistogramProto`` (``data_compat``: empty buckets at both ends left out, ``min`` and
    ``max`` the outer edges), kept in float64 where the loader makes float32."""
    counts = np.asarray(h.bucket_counts, np.float64)
    full = np.flatnonzero(counts > 0)
    if not len(full):
        return np.zeros((0, 3), np.float64)
    start, end = int(full[0]), int(full[-1])
    inner = np.asarray(h.bucket_limits, np.float64)[start:end]
    lefts = np.concatenate(([h.min], inner))
    rights = np.concatenate((inner, [h.max]))
    return np.stack([lefts, rights, counts[start : end + 1]], axis=1)


def encode_served(tag: str, step: int | None, wall_time: float, h: Histogram) -> bytes:
    """The histogram as ``tallyboard board`` serves a value of the row road: the ``histograms``
    tensor TensorBoard's loader makes of :func:`encode`'s ``HistogramProto``, in float64 as the
    proto holds it (TensorBoard's migration rounds to float32)."""
    from tallyboard_tfevents.proto import SummaryValue, metadata
    from tallyboard_tfevents.tensors import from_ndarray

    if not isinstance(h, Histogram):
        h = histogram_of(h)
    meta = metadata("histograms", display_name=tag)
    value = SummaryValue(tag=tag, metadata=meta, tensor=from_ndarray(buckets64(h)))
    return summary_event(step, wall_time, [value])


encode.served = encode_served  # type: ignore[attr-defined]  # what the board serves


def decode(value: object, step: int, wall_time: float) -> Histogram | None:
    """A histogram: a ``HistogramProto`` (torch, tensorboardX, TF1, tallyboard) as it is, or a
    ``histograms``-plugin tensor of ``[k, 3]`` rows (left edge, right edge, count: TF2's
    ``tf.summary.histogram``, Keras), as the kind's payload (its row: ``Histogram.to_row``).

    From a tensor, ``bucket_limits`` is the right edges, ``bucket_counts`` the counts, ``min``
    the first left edge, ``max`` the last right edge and ``num`` the sum of the counts; ``sum``
    and ``sum_squares`` are NaN, since that format does not hold them. TF2 buckets are
    contiguous (each left edge is the previous right edge), so nothing else is lost.
    """
    if value.HasField("histo"):  # type: ignore[attr-defined]
        h = value.histo  # type: ignore[attr-defined]
        return Histogram(
            float(h.min),
            float(h.max),
            float(h.num),
            float(h.sum),
            float(h.sum_squares),
            np.array(h.bucket_limit, np.float64),
            np.array(h.bucket, np.float64),
        )
    meta = value.metadata  # type: ignore[attr-defined]
    if meta.plugin_data.plugin_name != "histograms" or not value.HasField("tensor"):  # type: ignore[attr-defined]
        return None
    from tallyboard_tfevents.tensors import to_ndarray

    arr = to_ndarray(value.tensor)  # type: ignore[attr-defined]
    if arr is None or arr.ndim != 2 or arr.shape[1] != 3 or arr.dtype.kind not in "fiu":
        return None
    rows = arr.astype(np.float64)
    nan = float("nan")
    return Histogram(
        float(rows[0, 0]) if len(rows) else 0.0,
        float(rows[-1, 1]) if len(rows) else 0.0,
        float(rows[:, 2].sum()),
        nan,
        nan,
        np.ascontiguousarray(rows[:, 1]),
        np.ascontiguousarray(rows[:, 2]),
    )
