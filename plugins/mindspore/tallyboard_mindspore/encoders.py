"""Encoders ``(kind, "mindspore")``: MindSpore's own encodings of each value kind.

An encoder is called as ``encode(tag, step, wall_time, payload)`` and returns ``(route, data, step, wall_time)``:

- ``VALUE``: a serialized ``Summary.Value``; the values of one ``record()`` share one Event.
- ``EVENT``: a whole summary-file ``Event`` (graphs).
- ``LINEAGE``: a whole lineage-file ``LineageEvent``.

Payloads are what the SummaryRecord face pools (NumPy copies, floats for float scalars,
serialized messages), plus the payloads of the scalar and tensor kinds when the sink is used
from a SummaryWriter.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Iterable, Sequence
from ctypes import addressof, c_char
from math import prod
from typing import Any

import numpy as np
from tallyboard.records.framing import (
    frame,
    frame_fixed,
    frame_parts,
    in_call_order,
    varint_columns,
)
from tallyboard.records.rows import columns
from tallyboard.records.wire import float32 as _float32
from tallyboard.records.wire import varint, wall_step

from . import wire
from .wire import _NO_NONFINITE
from .wire import tag_field as _tag_field

VALUE, EVENT, LINEAGE = "value", "event", "lineage"
logger = logging.getLogger("tallyboard.mindspore")
F32_MIN, F32_MAX = float(np.finfo(np.float32).min), float(np.finfo(np.float32).max)


Piece = tuple[str, bytes, Any, float]


class Dropped(Exception):
    """A value MindSpore drops at write time (logged); the rest of the Event is written."""


def encode_scalar(tag: str, step: Any, wall_time: float, payload: Any) -> Piece:
    if type(payload) is np.ndarray:
        if payload.size != 1:
            if payload.size == 0:
                logger.error(
                    "The size of Summary tensor should greater than 1, but got size = 0, "
                    "this means has no values inside tensor, tag = %s",
                    tag,
                )
                raise Dropped(tag)
            payload = next(payload.flat)
        payload = payload.item()
    elif isinstance(payload, np.generic):
        payload = payload.item()
    return VALUE, _tag_field(tag) + b"\x1d" + _float32(float(payload)), step, wall_time


def encode_tensor(tag: str, step: Any, wall_time: float, payload: Any) -> Piece:
    array = payload if isinstance(payload, np.ndarray) else np.asarray(payload)
    return VALUE, wire.tensor_value(tag, array), step, wall_time


def histogram_bins(count: int) -> int:
    """MindSpore's bin count for ``count`` finite values."""
    if not count:
        return 1
    if count <= 5:
        return 2
    if count <= 10:
        return 3
    if count <= 880:
        return count // 10 + 1
    return 90


def histogram_proto(array: np.ndarray) -> bytes:
    """A MindSpore ``Histogram`` of ``array``, bucket for bucket as MindSpore computes it."""
    total = int(array.size)
    floating = issubclass(array.dtype.type, np.floating)
    if floating:
        finite = np.isfinite(array)
        valid = int(np.count_nonzero(finite))
    else:
        finite, valid = None, total
    nan = pos_inf = neg_inf = 0
    if valid < total:
        nan = int(np.count_nonzero(np.isnan(array)))
        if total - valid > nan:
            pos_inf = int(np.count_nonzero(np.isposinf(array)))
        if total - valid > nan + pos_inf:
            neg_inf = int(np.count_nonzero(np.isneginf(array)))
    if not valid:
        logger.warning(
            "There are no valid values in the ndarray(size=%d, shape=%s)", total, array.shape
        )
        return wire.histogram_proto([], nan, pos_inf, neg_inf, None, total)
    values = array if valid == total else array[finite]
    if floating:
        vmin, vmax = float(values.min()), float(values.max())
        if vmin < F32_MIN or vmax > F32_MAX:
            logger.warning(
                "Values(%s, %s) are too large, you may encounter some undefined behaviours hereafter.",
                vmin,
                vmax,
            )
    else:
        vmin, vmax = float(values.min()), float(values.max())
    # as numpy.ma sums: invalid values replaced by 0 in place, so the rounding matches MindSpore's
    filled = array if valid == total else np.where(finite, array, array.dtype.type(0))
    vsum = float(filled.sum(dtype=np.float64))
    first, last = vmin, vmax
    if not first < last:
        first -= 0.5
        last += 0.5
    edges = _linspace(first, last, histogram_bins(valid) + 1, array.dtype)
    counts = _bucket_counts(array, edges)
    buckets = wire.histogram_buckets(edges[:-1], edges[1:] - edges[:-1], counts)
    return wire.histogram_proto(buckets, nan, pos_inf, neg_inf, (vmax, vmin, vsum), total)


_aranges: dict[int, np.ndarray] = {}


def _linspace(first: float, last: float, num: int, dtype: Any) -> np.ndarray:
    """``np.linspace(first, last, num, dtype=dtype)`` for ``num >= 2`` (what MindSpore calls),
    the same arithmetic without its Python overhead (a third of the histogram's time)."""
    ramp = _aranges.get(num)
    if ramp is None:
        ramp = _aranges[num] = np.arange(0, num, dtype=np.float64)
    div = num - 1
    delta = last - first
    step = delta / div
    if step == 0:
        y = ramp / div * delta
    else:
        y = ramp * step
    y += first
    y[-1] = last
    if dtype.kind in "iu":  # integer edges are floored, as linspace does
        np.floor(y, out=y)
    return y.astype(dtype, copy=False)


def _bucket_counts(array: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``np.histogram(array, bins=edges)[0]``: ``edges[i] <= x < edges[i + 1]``, the last bucket
    closed, NaN and values outside left out; one ``searchsorted`` instead of NumPy's sort."""
    n = len(edges)
    if (edges[:-1] > edges[1:]).any():  # integer edges wrapped around: NumPy's own error
        return np.histogram(array, bins=edges)[0]
    found = np.bincount(np.searchsorted(edges, array.reshape(-1), side="right"), minlength=n + 1)
    counts = found[1:n]
    counts[-1] += np.count_nonzero(array == edges[-1])  # found[n] holds those above and NaN too
    return counts


def bucketed_histogram_proto(payload: Any) -> bytes:
    """A MindSpore ``Histogram`` from an already bucketed histogram (the histogram kind's payload,
    as a SummaryWriter sends it): ``bucket_limits[i]`` is the right edge of ``bucket_counts[i]``."""
    limits = np.asarray(payload.bucket_limits, dtype=np.float64)
    counts = np.asarray(payload.bucket_counts)
    buckets = [
        (float(limits[i - 1]), float(limits[i] - limits[i - 1]), int(counts[i]))
        for i in range(1, len(limits))
    ]
    if len(counts) and counts[0]:
        # values below the first limit (TF1 writes such buckets; torch's and tallyboard's are
        # empty): a bucket from the minimum, so MindSpore's counts still add up to ``num``
        left = min(float(payload.min), float(limits[0]))
        buckets.insert(0, (left, float(limits[0]) - left, int(counts[0])))
    # a histogram read from a MindSpore file (MindSporeHistogram) keeps MindSpore's counts
    nan, pos, neg = (
        getattr(payload, n, 0) for n in ("nan_count", "pos_inf_count", "neg_inf_count")
    )
    return wire.histogram_proto(
        buckets, nan, pos, neg, (payload.max, payload.min, payload.sum), int(payload.num)
    )


def encode_histogram(tag: str, step: Any, wall_time: float, payload: Any) -> Piece:
    if hasattr(payload, "bucket_limits"):
        return VALUE, wire.histogram_value(tag, bucketed_histogram_proto(payload)), step, wall_time
    array = payload if isinstance(payload, np.ndarray) else np.asarray(payload)
    return VALUE, wire.histogram_value(tag, histogram_proto(array)), step, wall_time


#: Arrays of one shape encoded together at most, and the bytes they may hold together: their
#: stack and work arrays are temporary copies, and past a few hundred KiB a batch saves nothing.
ARRAY_BATCH = 32
ARRAY_BATCH_BYTES = 2 << 20


def _batch_size(shape: tuple[int, ...], dtype: Any) -> int:
    """How many arrays of ``shape`` and ``dtype`` one batch takes."""
    size = prod(shape) * np.dtype(dtype).itemsize
    return max(1, min(ARRAY_BATCH, ARRAY_BATCH_BYTES // max(size, 1)))


def _runs_of_one_shape(rows: Sequence[tuple[Any, ...]]) -> list[Sequence[tuple[Any, ...]]]:
    """Consecutive rows whose payloads share shape and dtype, a batch's worth at most."""
    arrays = columns(rows)[4]
    runs = []
    start = 0
    limit = _batch_size(arrays[0].shape, arrays[0].dtype) if arrays else 0
    for i in range(1, len(arrays) + 1):
        if (
            i == len(arrays)
            or i - start >= limit
            or arrays[i].shape != arrays[start].shape
            or arrays[i].dtype != arrays[start].dtype
        ):
            runs.append(rows[start:i])
            start = i
            if i < len(arrays):
                limit = _batch_size(arrays[i].shape, arrays[i].dtype)
    return runs


def _stack(arrays: list[np.ndarray], name: str) -> np.ndarray:
    """The arrays (of one shape and dtype) as one, ``(k, ...)``: a view when they lie one after
    the other in one block of memory (the face copies logged arrays so, in turn), else a copy
    into a work array of the thread (``name``)."""
    first = arrays[0]
    k = len(arrays)
    if k == 1:
        return first[None]
    pieces: list[Any] = [_piece_of(array) for array in arrays]
    block = pieces[0].obj if pieces[0] is not None else None
    if (
        block is not None
        and block.ndim == 1
        and block.dtype == np.uint8
        and all(piece is not None and piece.obj is block for piece in pieces)
    ):
        origin = block.ctypes.data
        size = first.nbytes
        # where each piece starts (a writable buffer's address: a quarter of the cost of each
        # array's ``ctypes.data``)
        offsets = [addressof(c_char.from_buffer(piece)) - origin for piece in pieces]
        if offsets == list(range(offsets[0], offsets[0] + k * size, size)):  # in order
            view = block[offsets[0] : offsets[0] + k * size].view(first.dtype)
            return view.reshape((k,) + first.shape)
    return np.stack(arrays, out=_scratch_array(name, k, first.shape, first.dtype))


def _piece_of(array: np.ndarray) -> memoryview | None:
    """The writable memoryview of a 1-D ``uint8`` array's slice that ``array`` covers exactly,
    through a flat array over it (how the face's snapshots lie), else None."""
    flat = array.base
    piece = getattr(flat, "base", None)
    if (
        type(piece) is memoryview
        and type(piece.obj) is np.ndarray
        and not piece.readonly
        and piece.nbytes == array.nbytes
        and array.flags.c_contiguous
    ):
        return piece
    return None


_scratch = threading.local()


def _scratch_array(name: str, count: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """``count`` work arrays of ``shape`` for the calling thread, kept for its next batch: a
    batch's temporaries are large enough that the allocator maps them afresh each time, and the
    page faults cost more than the work done in them."""
    cache = getattr(_scratch, "arrays", None)
    if cache is None:
        cache = _scratch.arrays = {}
    array = cache.get(name)
    if array is None or array.shape[1:] != shape or array.dtype != dtype or len(array) < count:
        rows = max(count, _batch_size(shape, dtype))
        array = cache[name] = np.empty((rows,) + shape, dtype=dtype)
    return array[:count]


def encode_image_rows(rows: Sequence[tuple[Any, ...]]) -> bytes:
    """Framed summary Events for rows ``(key, tag, step, wall_time, images)`` of NCHW arrays
    that :func:`image_row_ok` accepts, in order, each as :func:`encode_image` writes it: the
    arrays of one shape are scaled, tiled and judged (stored or deflated) together."""
    from tallyboard_image.codec import png_parts

    out: list[bytes] = []
    for run in _runs_of_one_shape(rows):
        k = len(run)
        first = run[0][4]
        images = _stack([row[4] for row in run], "images")
        height, width = canvas_shape(first.shape)
        buffers = _scratch_array("scanlines", k, (height, width * 3 + 1), np.uint8)
        scaled = _scratch_array("scaled", k, first.shape, np.uint8)
        draw_canvases(images, buffers[:, :, 1:].reshape(k, height, width, 3), scaled)
        del images
        pieces: list[bytes | memoryview] = []  # of the run's records, joined at once
        for (_, tag, step, wall_time, _), png in zip(run, png_parts(buffers, width, 3)):
            parts = wire.image_event_parts(wall_time, int(step), tag, height, width, 3, png)
            pieces += frame_parts(parts)
        # before the next run reuses the work arrays that stored PNGs' pieces are views of
        out.append(b"".join(pieces))
    return out[0] if len(out) == 1 else b"".join(out)


def image_row_ok(array: np.ndarray) -> bool:
    """Whether an NCHW array is an image MindSpore writes (else :func:`encode_image` logs why)."""
    return array.ndim == 4 and array.shape[1] in (1, 3) and 0 not in array.shape


def encode_histogram_rows(rows: Sequence[tuple[Any, ...]]) -> bytes:
    """Framed summary Events for rows ``(key, tag, step, wall_time, values)`` of NumPy arrays,
    in order, each as :func:`encode_histogram` writes it; arrays of one shape are bucketed
    together (:func:`_histogram_records`)."""
    out: list[bytes] = []
    for run in _runs_of_one_shape(rows):
        out += _histogram_records(run)
    return b"".join(out)


def _histogram_record(row: tuple[Any, ...]) -> bytes:
    """One row's framed Event, by :func:`histogram_proto` alone."""
    _, tag, step, wall_time, values = row
    value = wire.histogram_value(tag, histogram_proto(values))
    return frame(wire.summary_event(wall_time, int(step), [value]))


_pack_stats = struct.Struct("<BdBdBd").pack  # max (field 5), min (6), sum (7): doubles


def _histogram_records(run: Sequence[tuple[Any, ...]]) -> list[bytes]:
    """:func:`_histogram_record` of each row (arrays of one shape and dtype), bucket for bucket,
    with NumPy calls over all of them at once (:func:`_histogram_protos`)."""
    protos = _histogram_protos([row[4] for row in run])
    records = []
    for row, proto in zip(run, protos):
        if proto is None:
            records.append(_histogram_record(row))
            continue
        _, tag, step_i, wall_time, _ = row
        head = _histogram_head(tag, len(proto))
        records.append(frame(b"".join([wall_step(wall_time, int(step_i)), head, proto])))
    return records


def _histogram_protos(arrays: Sequence[np.ndarray]) -> list[bytes | None]:
    """The Histogram message of each array (one shape and dtype), as :func:`histogram_proto`
    writes it, computed with NumPy calls over all of them at once for float arrays of finite
    values whose min and max differ and whose buckets hold fewer than 128 values; None for any
    other array, to be done by itself."""
    dtype = arrays[0].dtype
    total = arrays[0].size
    if len(arrays) == 1 or dtype not in (np.float32, np.float64) or total < 2:
        return [None] * len(arrays)
    values = _stack(list(arrays), "histograms").reshape(len(arrays), -1)
    vmin = values.min(axis=1).astype(np.float64)
    vmax = values.max(axis=1).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = (vmin < vmax) & (vmin >= F32_MIN) & (vmax <= F32_MAX)  # also False for NaN, inf
    chosen = np.flatnonzero(ok)
    if not len(chosen):
        return [None] * len(arrays)
    if len(chosen) < len(arrays):
        values, vmin, vmax = values[chosen], vmin[chosen], vmax[chosen]
    sums = values.sum(axis=1, dtype=np.float64).tolist()
    bins = histogram_bins(total)
    # the edges as _linspace computes them, a row each
    step = (vmax - vmin) / bins
    ramp = _aranges.get(bins + 1)
    if ramp is None:
        ramp = _aranges[bins + 1] = np.arange(0, bins + 1, dtype=np.float64)
    edges64 = ramp[None, :] * step[:, None]
    edges64 += vmin[:, None]
    edges64[:, -1] = vmax
    edges = edges64.astype(dtype)
    counts = _bucket_counts_rows(values, edges, vmin, step)
    usable = (counts.min(axis=1) >= 0) & (counts.max(axis=1) < 0x80)
    # every bucket {left, width, count < 128}: 22 bytes, all rows' buckets packed at once
    packed = wire.histogram_buckets(
        edges[:, :-1].ravel(), (edges[:, 1:] - edges[:, :-1]).ravel(), counts.clip(0, 0x7F).ravel()
    )
    size = 22 * bins
    count_field = b"\x40" + varint(total)
    protos: list[bytes | None] = [None] * len(arrays)
    highs, lows = vmax.tolist(), vmin.tolist()
    for j, (i, fast) in enumerate(zip(chosen.tolist(), usable.tolist())):
        if not fast:  # a bucket of 128 values or more, or edges too close: by itself
            continue
        stats = _pack_stats(0x29, highs[j], 0x31, lows[j], 0x39, sums[j])
        protos[i] = b"".join([packed[j * size : (j + 1) * size], _NO_NONFINITE, stats, count_field])
    return protos


_histogram_heads: dict[tuple[str, int], bytes] = {}


def _histogram_head(tag: str, size: int) -> bytes:
    """What a summary Event of one histogram value holds between its step and its ``size``-byte
    Histogram message, kept per tag and size."""
    head = _histogram_heads.get((tag, size))
    if head is None:
        head = wire.value_event_head(_tag_field(tag) + b"\x4a" + varint(size), size)
        if len(_histogram_heads) < 4096:
            _histogram_heads[tag, size] = head
    return head


def _bucket_counts_rows(
    values: np.ndarray, edges: np.ndarray, first: np.ndarray, step: np.ndarray
) -> np.ndarray:
    """:func:`_bucket_counts` of each row of ``values`` with its row of ``edges`` (``first`` and
    ``step``: of the float64 edges before their cast). Each value's bucket is estimated from
    ``first`` and ``step``, then moved by one where the cast edges say so (``edges[i] <= x <
    edges[i + 1]``, the last bucket closed); a row where a moved value is still not in its
    bucket (edges so close that rounding merged some) gets counts of -1, to be done by itself."""
    k, n = values.shape
    bins = edges.shape[1] - 1
    with np.errstate(invalid="ignore", over="ignore"):
        estimate = np.subtract(values, first[:, None])
        estimate /= step[:, None]
    index = estimate.astype(np.intp)
    np.minimum(index, bins - 1, out=index)  # the maximum: in the last bucket, which is closed
    # into the edges of all rows at once: row r's edge i at r * (bins + 1) + i; a bucket's upper
    # edge beside it, infinite for the last bucket (closed: nothing is above it)
    index += (np.arange(k) * (bins + 1))[:, None]
    lower = edges.ravel()
    upper = np.empty_like(edges)
    upper[:, : bins - 1] = edges[:, 1:bins]
    upper[:, bins - 1 :] = np.inf
    upper = upper.ravel()
    down = values < lower[index]
    up = values >= upper[index]
    moved = down | up
    index -= down
    index += up
    unsettled = np.zeros(k, dtype=bool)
    if moved.any():
        rows, cols = np.nonzero(moved)
        x, at = values[rows, cols], index[rows, cols]
        unsettled[rows[(x < lower[at]) | (x >= upper[at])]] = True
    counts = np.bincount(index.ravel(), minlength=k * (bins + 1)).reshape(k, bins + 1)[:, :bins]
    counts[unsettled] = -1
    return counts


def canvas_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """Height and width of MindSpore's canvas of NCHW images: 8 images a row."""
    n, _, h, w = shape
    cols = min(n, 8)
    return -(-n // cols) * h, cols * w


#: Float dtypes whose values lie in [+0.0, 1.0] exactly when their bits, read as unsigned
#: integers, are at most 1.0's.
_UNIT_BITS = {
    np.dtype(np.float32): (np.uint32, 0x3F800000),
    np.dtype(np.float64): (np.uint64, 0x3FF0000000000000),
}


def draw_canvases(images: np.ndarray, out: np.ndarray, scaled: np.ndarray | None = None) -> None:
    """Write MindSpore's canvas of each NCHW array of ``images`` (``(k, n, c, h, w)``) into the
    HWC ``uint8`` views ``out`` (``(k, H, W, 3)``, :func:`canvas_shape`): tiled 8 a row,
    one-channel images repeated to three, scaled as MindSpore scales its float64 canvas. The
    images are scaled, then their bytes tiled: no canvas of floats, MindSpore's pixels for a
    fraction of the work; a stack of arrays is scaled and tiled in the same few NumPy calls.
    ``scaled``: a ``uint8`` work array shaped as ``images``, or None for a new one."""
    k, n, c, h, w = images.shape
    cols = min(n, 8)
    rows = -(-n // cols)
    padded = rows * cols > n
    dtype = images.dtype
    # The canvas holds float64 copies of the values, cast to float32 before scaling: max and min
    # of float64(x) are float64(max(x)) and float64(min(x)) (the cast keeps order), and only
    # 64-bit integers round differently when cast to float32 directly.
    if dtype == np.float32:
        values = images
    elif dtype in (np.int64, np.uint64):
        values = images.astype(np.float64).astype(np.float32)
    else:
        values = images.astype(np.float32)
    rows_of_values = images.reshape(k, -1)  # a view: the stack is contiguous
    if scaled is None:
        scaled = np.empty(values.shape, dtype=np.uint8)
    unit_bits = _UNIT_BITS.get(dtype)
    if unit_bits is not None and rows_of_values.view(unit_bits[0]).max() <= unit_bits[1]:
        # Every value in [+0.0, 1.0] (as bits, no other float lies at or below 1.0's, NaN and
        # negatives included): one pass instead of a max and a min. Zeros of empty cells too.
        max_value, min_value = [1.0] * k, [0.0] * k
    else:
        # as Python floats: float64, as MindSpore's canvas holds them
        max_value = rows_of_values.max(axis=1).tolist()
        min_value = rows_of_values.min(axis=1).tolist()
        if padded:  # empty cells of the canvas are zeros, and count in its max and min
            max_value = [float(np.maximum(m, 0.0)) for m in max_value]
            min_value = [float(np.minimum(m, 0.0)) for m in min_value]
    _scale_into(values, max_value, min_value, scaled)
    # then tiled, a channel at a time (copying bytes: faster than scaling in the canvas's order)
    full = n // cols
    last = n - full * cols
    if n == 1:  # one image each: interleave its channel planes
        for channel in range(3):
            out[..., channel] = scaled[:, 0, channel if c == 3 else 0]
        return
    grid = out.reshape(k, rows, h, cols, w, 3)
    for channel in range(3):
        planes = scaled[:, :, channel if c == 3 else 0]  # (k, n, h, w)
        if full:  # whole rows of tiles: (k, rows, h, cols, w)
            tiles = planes[:, : full * cols].reshape(k, full, cols, h, w).transpose(0, 1, 3, 2, 4)
            grid[:, :full, :, :, :, channel] = tiles
        if last:  # the last row's tiles
            grid[:, full, :, :last, :, channel] = planes[:, full * cols :].transpose(0, 2, 1, 3)
    if padded:  # and its empty cells
        pad = np.empty(k, dtype=np.uint8)
        _scale_into(np.zeros(k, dtype=np.float32), max_value, min_value, pad)
        grid[:, full, :, last:] = pad[:, None, None, None, None]


def _scale_into(
    values: np.ndarray, max_value: list[float], min_value: list[float], out: np.ndarray
) -> None:
    """Write ``values`` (float32, ``(k, ...)``) scaled to ``uint8`` into ``out`` as MindSpore
    scales each canvas, whose max and min are given (``k`` each); elementwise."""
    unit = [high <= 1 and low >= 0 for high, low in zip(max_value, min_value)]
    if all(unit):
        # Values in [0, 1] (no NaN, no infinity): ``(t - 0) * 255`` is ``t * 255`` in float32,
        # and nothing can overflow or be invalid.
        np.multiply(values, np.float32(255), out=out, casting="unsafe")
        return
    if any(unit):  # some of each: each group by itself
        for want in (True, False):
            group = [i for i, u in enumerate(unit) if u == want]
            part = np.empty(out[group].shape, dtype=np.uint8)
            highs = [max_value[i] for i in group]
            _scale_into(values[group], highs, [min_value[i] for i in group], part)
            out[group] = part
        return
    high = np.array(max_value, dtype=np.float64)
    low = np.array(min_value, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        scale_factor = np.where(high != low, 255 / (high - low + 1), 1.0)
        shape = (-1,) + (1,) * (values.ndim - 1)
        # float32 values minus a float64 shift: float64, as in MindSpore's canvas
        shifted = np.subtract(values, low.reshape(shape))
        np.multiply(shifted, scale_factor.reshape(shape), out=out, casting="unsafe")


def encode_image(tag: str, step: Any, wall_time: float, payload: Any) -> Piece:
    from tallyboard_image.codec import png_from_scanlines, scanlines

    pixels = getattr(payload, "pixels", None)
    if pixels is not None:
        # the image kind's payload (from a SummaryWriter): HWC uint8, ready
        if getattr(payload, "fps", None) is not None:
            logger.error("MindSpore summaries have no video; the video %r is not written", tag)
            raise Dropped(tag)
        height, width, channels = pixels.shape
        if channels in (1, 2):  # gray (and alpha): MindSpore has RGB and RGBA only
            pixels, channels = pixels[:, :, :1], 3
        buffer, view = scanlines(height, width, channels)
        view[...] = pixels
        png = png_from_scanlines(buffer, width, channels)
        return VALUE, wire.image_value(tag, height, width, channels, png), step, wall_time
    # an NCHW array, as the SummaryRecord face pools it
    array = payload if isinstance(payload, np.ndarray) else np.asarray(payload)
    if array.ndim != 4 or array.shape[1] not in (1, 3):
        logger.error(
            "The dimension of Summary tensor should be 4 or second dimension should be 1 or 3, "
            "but got tag = %s, ndim = %d, shape=%s, which means Summary tensor is not Image.",
            tag,
            array.ndim,
            array.shape,
        )
        raise Dropped(tag)
    if 0 in array.shape:
        logger.error(
            "The tensor with shape(%s) is not a valid image because the shape contains zero.",
            array.shape,
        )
        raise Dropped(tag)
    height, width = canvas_shape(array.shape)
    buffer, view = scanlines(height, width, 3)
    draw_canvases(array[None], view[None])
    png = png_from_scanlines(buffer, width, 3)
    return VALUE, wire.image_value(tag, height, width, 3, png), step, wall_time


class StepValues:
    """The values of one ``record()`` that go out as one summary Event, queued as the payload of
    one row (:func:`encode_step_rows`): ``items`` are ``(encode, tag, payload)``; ``nbytes``, what
    their arrays hold, counts as pending until the row is encoded (memory stays bounded)."""

    __slots__ = ("items", "nbytes")

    def __init__(self, items: list[tuple[Any, str, Any]], nbytes: int) -> None:
        self.items = items
        self.nbytes = nbytes


def _chunks(groups: dict[Any, list[tuple[int, int, str, np.ndarray]]]) -> Iterable[list[Any]]:
    """Each group of arrays of one shape and dtype, a batch's worth at a time."""
    for group in groups.values():
        limit = _batch_size(group[0][3].shape, group[0][3].dtype)
        for start in range(0, len(group), limit):
            yield group[start : start + limit]


def encode_step_rows(rows: Sequence[tuple[Any, ...]]) -> bytes:
    """Framed summary Events for rows ``(key, tag, step, wall_time, StepValues)``, each holding
    its values in order as one Event, exactly as encoding each value by itself writes it; the
    NCHW images of one shape and the histograms of one shape across the rows are encoded
    together (a step of an image and a few histograms costs about half as much so)."""
    from tallyboard_image.codec import png_parts

    values: list[list[bytes | None]] = []
    images: dict[tuple[Any, ...], list[tuple[int, int, str, np.ndarray]]] = {}
    histograms: dict[tuple[Any, ...], list[tuple[int, int, str, np.ndarray]]] = {}
    for r, (_, _, step, wall_time, batch) in enumerate(rows):
        out: list[bytes | None] = []
        for j, (encode, tag, payload) in enumerate(batch.items):
            if type(payload) is np.ndarray:
                if encode is encode_image and image_row_ok(payload):
                    images.setdefault((payload.shape, payload.dtype.str), []).append(
                        (r, j, tag, payload)
                    )
                    out.append(None)
                    continue
                if encode is encode_histogram:
                    histograms.setdefault((payload.shape, payload.dtype.str), []).append(
                        (r, j, tag, payload)
                    )
                    out.append(None)
                    continue
            try:
                out.append(encode(tag, step, wall_time, payload)[1])
            except Dropped:
                out.append(None)
        values.append(out)
    for group in _chunks(images):
        first = group[0][3]
        k = len(group)
        height, width = canvas_shape(first.shape)
        stacked = _stack([item[3] for item in group], "images")
        buffers = _scratch_array("scanlines", k, (height, width * 3 + 1), np.uint8)
        scaled = _scratch_array("scaled", k, first.shape, np.uint8)
        draw_canvases(stacked, buffers[:, :, 1:].reshape(k, height, width, 3), scaled)
        del stacked
        for (r, j, tag, _), png in zip(group, png_parts(buffers, width, 3)):
            # joined now: stored PNGs are views of the scratch arrays the next group reuses
            values[r][j] = wire.image_value(tag, height, width, 3, b"".join(png))
    for group in _chunks(histograms):
        protos = _histogram_protos([item[3] for item in group])
        for (r, j, tag, array), proto in zip(group, protos):
            values[r][j] = wire.histogram_value(
                tag, proto if proto is not None else histogram_proto(array)
            )
    return b"".join(
        frame(wire.summary_event(wall_time, int(step), [v for v in out if v is not None]))
        for (_, _, step, wall_time, _), out in zip(rows, values)
    )


def encode_landscape(tag: str, step: Any, wall_time: float, payload: bytes) -> Piece:
    return VALUE, wire.landscape_value(tag, payload), step, wall_time


def encode_graph(tag: str, step: Any, wall_time: float, payload: bytes) -> Piece:
    """``payload``: a serialized anf_ir ``GraphProto`` (what the ``anf_graph`` kind converts to)."""
    return EVENT, wire.graph_event(wall_time, payload), step, wall_time


def lineage_encoder(field: int) -> Any:
    """An encoder writing a serialized lineage message as ``LineageEvent`` field ``field``."""

    def encode(tag: str, step: Any, wall_time: float, payload: bytes) -> Piece:
        return LINEAGE, wire.lineage_event(wall_time, field, payload), step, wall_time

    encode.__name__ = f"encode_lineage_{field}"
    return encode


#: Kinds whose encoding is costly enough to run on the writer thread.
HEAVY = frozenset({"image", "histogram", "tensor"})


# -- float scalars in batches -----------------------------------------------------------------
#
# The SummaryRecord face pools float scalars as Python floats; a step holding only such values
# reaches the sink's summary file as one row ``(key, tag, step, wall_time, value)`` (one scalar)
# or ``(key, tags, step, wall_time, values)`` (tuples: several scalars in one Event). The writer
# thread frames thousands of rows at once with :func:`encode_scalar_rows`, byte for byte what
# the per-record path writes.

#: Rows per batch below which packing them one by one is cheaper than NumPy's fixed costs.
MIN_SCALAR_BATCH = 48
#: Steps (as uint64) at or above ``_STEP_BOUNDS[k - 1]`` take more than ``k`` varint bytes.
_STEP_BOUNDS = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)
#: Runs of one layout in a batch up to which each run is framed as it lies (no reordering).
_MAX_RUNS = 8
_scalar_layouts: dict[tuple[Any, int], tuple[bytes, tuple[int, ...]]] = {}


def scalar_event(tags: Any, step: int, wall_time: float, values: Any) -> bytes:
    """The summary Event of one row: ``tags`` and ``values`` a str and a float, or tuples."""
    if type(tags) is str:
        return wire.summary_event(wall_time, step, [_tag_field(tags) + b"\x1d" + _float32(values)])
    return wire.summary_event(
        wall_time,
        step,
        [_tag_field(tag) + b"\x1d" + _float32(value) for tag, value in zip(tags, values)],
    )


def encode_scalar_rows(rows: Sequence[tuple[Any, Any, int, float, Any]]) -> bytes:
    """Framed summary Events for ``rows`` of float scalars (see above), in order.

    Rows are grouped by layout (tags, and how many bytes the step's varint takes); each group is
    packed and framed as one NumPy array (:func:`tallyboard.records.framing.frame_fixed`: only the wall
    time, step and values differ between its records) and the records are put back in call order.
    """
    n = len(rows)
    if n < MIN_SCALAR_BATCH:
        return b"".join([frame(scalar_event(*row[1:])) for row in rows])
    _, tags, steps, walls, values = columns(rows)
    wall = np.array(walls, dtype=np.float64)
    ustep = np.array(steps, dtype=np.int64).view(np.uint64)
    widths = np.searchsorted(_STEP_BOUNDS, ustep, side="right") + 1
    first = tags[0]
    if tags.count(first) == n:
        # the common case: the same tags every step, and steps that grow, so the step's varint
        # changes width at a few places at most: one array per run of one width, joined
        changes = np.flatnonzero(widths[1:] != widths[:-1]) + 1
        if len(changes) <= _MAX_RUNS:
            with np.errstate(over="ignore"):  # beyond float32: +-inf, as float32() gives
                value = np.array(values, dtype=np.float32)
            edges = [0, *changes.tolist(), n]
            return b"".join(
                [
                    _scalar_group(
                        first, int(widths[a]), wall[a:b], ustep[a:b], value[a:b]
                    ).tobytes()
                    for a, b in zip(edges[:-1], edges[1:])
                ]
            )
    return in_call_order(
        list(zip(tags, widths.tolist())),
        lambda key, idx: _scalar_group(
            key[0], key[1], wall[idx], ustep[idx], _float32s(values, idx.tolist())
        ),
    )


def _float32s(values: Sequence[Any], idx: Iterable[int]) -> Any:
    """float32 ``values`` at ``idx`` (one column per scalar of the layout)."""
    with np.errstate(over="ignore"):  # beyond float32: +-inf, as a C cast (and float32()) gives
        return np.array([values[i] for i in idx], dtype=np.float32)


def _scalar_layout(tags: Any, width: int) -> tuple[bytes, tuple[int, ...]]:
    """A template Event of ``tags`` whose step takes ``width`` varint bytes, and the offset of
    each float32 value in it (the wall time is at 1, the step at 10)."""
    layout = _scalar_layouts.get((tags, width))
    if layout is not None:
        return layout
    single = type(tags) is str
    values = [_tag_field(tag) + b"\x1d" for tag in ((tags,) if single else tags)]
    body = b""
    offsets = []
    for value in values:
        piece = b"\x0a" + wire.varint(len(value) + 4) + value
        offsets.append(len(body) + len(piece))
        body += piece + bytes(4)
    head = b"\x09" + bytes(8) + b"\x10" + bytes(width) + b"\x2a" + wire.varint(len(body))
    layout = (head + body, tuple(len(head) + at for at in offsets))
    if len(_scalar_layouts) < 10_000:
        _scalar_layouts[(tags, width)] = layout
    return layout


def _scalar_group(tags: Any, width: int, wall: Any, ustep: Any, values: Any) -> Any:
    """Framed records (one per row of an ``(n, size)`` uint8 array) of one layout."""
    template, offsets = _scalar_layout(tags, width)
    fields: list[tuple[int, Any]] = [(1, wall), (10, varint_columns(ustep, width))]
    if values.ndim == 1:
        fields.append((offsets[0], values))
    else:
        fields.extend((at, values[:, j]) for j, at in enumerate(offsets))
    return frame_fixed(template, fields)
