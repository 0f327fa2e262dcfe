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

import io
import logging
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

import numpy as np
from tallyboard.records.framing import frame, frame_fixed, in_call_order, varint_columns
from tallyboard.records.wire import float32 as _float32

from . import wire
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
    return wire.histogram_proto(
        buckets, 0, 0, 0, (payload.max, payload.min, payload.sum), int(payload.num)
    )


def encode_histogram(tag: str, step: Any, wall_time: float, payload: Any) -> Piece:
    if hasattr(payload, "bucket_limits"):
        return VALUE, wire.histogram_value(tag, bucketed_histogram_proto(payload)), step, wall_time
    array = payload if isinstance(payload, np.ndarray) else np.asarray(payload)
    return VALUE, wire.histogram_value(tag, histogram_proto(array)), step, wall_time


class ImageTiles:
    """NCHW images already scaled to ``uint8`` as MindSpore scales its canvas, not yet tiled.

    Scaling the images themselves rather than a float64 canvas of them, then tiling bytes, gives
    MindSpore's pixels for a fraction of the work. ``pad`` is the scaled value of the canvas cells
    no image fills (None when every cell has one).
    """

    __slots__ = ("pixels", "pad")

    def __init__(self, pixels: np.ndarray, pad: int | None) -> None:
        self.pixels = pixels
        self.pad = pad

    @property
    def nbytes(self) -> int:
        return int(self.pixels.nbytes)

    def canvas(self) -> np.ndarray:
        """The HWC ``uint8`` canvas, 8 images a row, as MindSpore's ``_make_canvas_for_imgs``
        lays them out (one-channel images repeated to three)."""
        pixels = self.pixels
        n, c, h, w = pixels.shape
        if n == 1:  # interleave the channel planes: faster than copying a transposed view
            out = np.empty((h, w, 3), dtype=np.uint8)
            for channel in range(3):
                out[:, :, channel] = pixels[0, channel if c == 3 else 0]
            return out
        cols = min(n, 8)
        rows = -(-n // cols)
        if rows * cols > n:
            fill = np.full((rows * cols - n, c, h, w), self.pad, dtype=np.uint8)
            pixels = np.concatenate([pixels, fill])
        if c == 1:
            pixels = np.broadcast_to(pixels, (rows * cols, 3, h, w))
        grid = pixels.reshape(rows, cols, 3, h, w).transpose(0, 3, 1, 4, 2)
        return np.ascontiguousarray(grid).reshape(rows * h, cols * w, 3)


def prepare_image(payload: Any) -> Any:
    """An NCHW array as :class:`ImageTiles`: once tiled, the pixels MindSpore's float64 canvas
    gives after its scaling. Anything else (not an image MindSpore writes) is returned as it is."""
    if type(payload) is not np.ndarray or payload.ndim != 4 or payload.shape[1] not in (1, 3):
        return payload
    if 0 in payload.shape:
        return payload
    n = payload.shape[0]
    cols = min(n, 8)
    padded = -(-n // cols) * cols > n
    dtype = payload.dtype
    # The canvas holds float64 copies of the values, cast to float32 before scaling: max and min
    # of float64(x) are float64(max(x)) and float64(min(x)) (the cast keeps order), and only
    # 64-bit integers round differently when cast to float32 directly.
    if dtype == np.float32:
        values = payload
    elif dtype in (np.int64, np.uint64):
        values = payload.astype(np.float64).astype(np.float32)
    else:
        values = payload.astype(np.float32)
    max_value, min_value = np.float64(payload.max()), np.float64(payload.min())
    if padded:  # empty cells of the canvas are zeros, and count in its max and min
        max_value, min_value = np.maximum(max_value, 0.0), np.minimum(min_value, 0.0)
    pixels = _scale_to_uint8(values, max_value, min_value)
    pad = None
    if padded:
        pad = int(_scale_to_uint8(np.zeros(1, dtype=np.float32), max_value, min_value)[0])
    return ImageTiles(pixels, pad)


def _scale_to_uint8(tensor: np.ndarray, max_value: Any, min_value: Any) -> np.ndarray:
    """MindSpore's scaling of canvas values (cast to float32) whose float64 max and min are given;
    elementwise, so the values may be laid out in any order."""
    scale_factor: Any = 1
    shift: Any = 0
    if max_value <= 1 and min_value >= 0:
        # Values in [0, 1] (no NaN, no infinity): ``(t - 0) * 255`` is ``t * 255`` in float32,
        # and nothing can overflow or be invalid.
        return (tensor.astype(np.float32, copy=False) * 255).astype(np.uint8)
    else:
        if max_value != min_value:
            scale_factor = 255 / (max_value - min_value + 1)
        shift = min_value
    with np.errstate(invalid="ignore", over="ignore"):
        tensor = tensor.astype(np.float32, copy=False)
        return ((tensor - shift) * scale_factor).astype(np.uint8)


def png(hwc: np.ndarray) -> bytes:
    """PNG bytes of HWC uint8 pixels: the image kind's fast encoder when it is installed (same
    pixels as Pillow's, several times faster), else Pillow's."""
    try:
        from tallyboard_image.codec import png_bytes
    except ImportError:
        from PIL import Image

        out = io.BytesIO()
        Image.fromarray(hwc).save(out, format="PNG")
        return out.getvalue()
    return png_bytes(np.ascontiguousarray(hwc))


def encode_image(tag: str, step: Any, wall_time: float, payload: Any) -> Piece:
    pixels = getattr(payload, "pixels", None)
    if type(payload) is not ImageTiles and pixels is not None:
        # the image kind's payload (from a SummaryWriter): HWC uint8, ready
        if getattr(payload, "fps", None) is not None:
            logger.error("MindSpore summaries have no video; the video %r is not written", tag)
            raise Dropped(tag)
        if pixels.shape[2] in (1, 2):
            pixels = np.repeat(pixels[:, :, :1], 3, axis=2)
        height, width, channels = pixels.shape
        return (
            VALUE,
            wire.image_value(tag, height, width, channels, png(np.ascontiguousarray(pixels))),
            step,
            wall_time,
        )
    if type(payload) is not ImageTiles:  # an NCHW array, as the SummaryRecord face pools it
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
        payload = prepare_image(array)
    hwc = payload.canvas()
    height, width, channels = hwc.shape
    return VALUE, wire.image_value(tag, height, width, channels, png(hwc)), step, wall_time


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
_tags_of, _step_of, _wall_of, _values_of = (itemgetter(i) for i in range(1, 5))
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
    tags = list(map(_tags_of, rows))
    wall = np.array(list(map(_wall_of, rows)), dtype=np.float64)
    ustep = np.array(list(map(_step_of, rows)), dtype=np.int64).view(np.uint64)
    widths = np.searchsorted(_STEP_BOUNDS, ustep, side="right") + 1
    first = tags[0]
    if tags.count(first) == n:
        # the common case: the same tags every step, and steps that grow, so the step's varint
        # changes width at a few places at most: one array per run of one width, joined
        changes = np.flatnonzero(widths[1:] != widths[:-1]) + 1
        if len(changes) <= _MAX_RUNS:
            with np.errstate(over="ignore"):  # beyond float32: +-inf, as float32() gives
                values = np.array(list(map(_values_of, rows)), dtype=np.float32)
            edges = [0, *changes.tolist(), n]
            return b"".join(
                [
                    _scalar_group(
                        first, int(widths[a]), wall[a:b], ustep[a:b], values[a:b]
                    ).tobytes()
                    for a, b in zip(edges[:-1], edges[1:])
                ]
            )
    return in_call_order(
        list(zip(tags, widths.tolist())),
        lambda key, idx: _scalar_group(
            key[0], key[1], wall[idx], ustep[idx], _values(rows, idx.tolist())
        ),
    )


def _values(rows: Sequence[tuple[Any, ...]], idx: Iterable[int]) -> Any:
    """float32 values of the rows at ``idx`` (one column per scalar of the layout)."""
    with np.errstate(over="ignore"):  # beyond float32: +-inf, as a C cast (and float32()) gives
        return np.array([rows[i][4] for i in idx], dtype=np.float32)


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
