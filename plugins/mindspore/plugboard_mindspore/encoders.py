"""Encoders ``(kind, "mindspore")``: MindSpore's own encodings of each value kind.

An encoder is called as ``encode(tag, step, wall_time, payload)`` and returns ``(route, data, step, wall_time)``:

- ``VALUE``: a serialized ``Summary.Value``; the values of one ``record()`` share one Event.
- ``EVENT``: a whole summary-file ``Event`` (graphs).
- ``LINEAGE``: a whole lineage-file ``LineageEvent``.

Payloads are what the SummaryRecord face pools (NumPy copies, serialized messages), plus the
payloads of the scalar and tensor kinds when the sink is used from a SummaryWriter.
"""

from __future__ import annotations

import io
import logging
from typing import Any

import numpy as np
from plugboard.wire import float32 as _float32

from . import wire
from .wire import tag_field as _tag_field

VALUE, EVENT, LINEAGE = "value", "event", "lineage"
logger = logging.getLogger("plugboard.mindspore")
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
    edges = np.linspace(first, last, histogram_bins(valid) + 1, dtype=array.dtype)
    counts, edges = np.histogram(array, bins=edges)
    widths = edges[1:] - edges[:-1]
    buckets = list(zip(edges[:-1].tolist(), widths.tolist(), counts.tolist()))
    return wire.histogram_proto(buckets, nan, pos_inf, neg_inf, (vmax, vmin, vsum), total)


def bucketed_histogram_proto(payload: Any) -> bytes:
    """A MindSpore ``Histogram`` from an already bucketed histogram (the histogram kind's payload,
    as a SummaryWriter sends it): ``bucket_limits[i]`` is the right edge of ``bucket_counts[i]``."""
    limits = np.asarray(payload.bucket_limits, dtype=np.float64)
    counts = np.asarray(payload.bucket_counts)
    buckets = [
        (float(limits[i - 1]), float(limits[i] - limits[i - 1]), int(counts[i]))
        for i in range(1, len(limits))
    ]
    return wire.histogram_proto(
        buckets, 0, 0, 0, (payload.max, payload.min, payload.sum), int(payload.num)
    )


def encode_histogram(tag: str, step: Any, wall_time: float, payload: Any) -> Piece:
    if hasattr(payload, "bucket_limits"):
        return VALUE, wire.histogram_value(tag, bucketed_histogram_proto(payload)), step, wall_time
    array = payload if isinstance(payload, np.ndarray) else np.asarray(payload)
    return VALUE, wire.histogram_value(tag, histogram_proto(array)), step, wall_time


def image_canvas(array: np.ndarray) -> np.ndarray:
    """NCHW images tiled 8 per row on a float64 canvas, scaled and cast as MindSpore does (HWC uint8)."""
    if array.shape[1] == 1:
        array = np.concatenate([array, array, array], 1)
    if array.shape[0] == 1 and array.dtype == np.float32:
        # One float32 image: the canvas is the image itself, and float32 -> float64 -> float32
        # is exact, so skip the canvas (same pixels, a fraction of the work on the thread).
        tensor = array[0].transpose(1, 2, 0)
        return _scale_to_uint8(tensor, np.float64(np.max(tensor)), np.float64(np.min(tensor)))
    n, _, h, w = array.shape
    cols = min(n, 8)
    rows = -(-n // cols)
    canvas = np.zeros((3, h * rows, w * cols))
    for i in range(n):
        y, x = divmod(i, cols)
        canvas[:, y * h : (y + 1) * h, x * w : (x + 1) * w] = array[i]
    tensor = canvas.transpose(1, 2, 0)
    return _scale_to_uint8(tensor, np.max(tensor), np.min(tensor))


def _scale_to_uint8(tensor: np.ndarray, max_value: Any, min_value: Any) -> np.ndarray:
    """MindSpore's scaling of an HWC canvas (cast to float32) whose float64 max and min are given."""
    scale_factor: Any = 1
    shift: Any = 0
    if max_value <= 1 and min_value >= 0:
        scale_factor = 255
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
        from plugboard_image.codec import png_bytes
    except ImportError:
        from PIL import Image

        out = io.BytesIO()
        Image.fromarray(hwc).save(out, format="PNG")
        return out.getvalue()
    return png_bytes(np.ascontiguousarray(hwc))


def encode_image(tag: str, step: Any, wall_time: float, payload: Any) -> Piece:
    pixels = getattr(payload, "pixels", None)
    if pixels is not None:  # the image kind's payload (from a SummaryWriter): HWC uint8, ready
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
    array = payload if isinstance(payload, np.ndarray) else np.asarray(payload)
    if array.ndim != 4 or array.shape[1] not in (1, 3):
        logger.error(
            "The dimension of Summary tensor should be 4 or second dimension should be 1 or 3, but got "
            "tag = %s, ndim = %d, shape=%s, which means Summary tensor is not Image.",
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
    hwc = image_canvas(array)
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
