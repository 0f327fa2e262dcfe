"""Turning user arrays into format-neutral image payloads (NumPy only; no Pillow here).

Everything in this module runs in the caller and raises ``ValueError``/``TypeError`` naming the
argument, so bad input never reaches a sink. The result is an :class:`ImagePayload` holding
HWC ``uint8`` pixels (or THWC frames for a video) plus what an encoder needs to finish the job
(boxes and labels to draw, a rescale factor, a frame rate), so any sink can encode it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from tallyboard.values import check_text, to_array

_PERMUTES = {4: "NCHW", 3: "CHW", 2: "HW"}
_GRID_COLUMNS = 8
#: A GIF stores a frame's duration as uint16 centiseconds: at most 655.35 s a frame.
MIN_FPS = 1000 / 655350
#: The most pixels an image may have once ``rescale`` has resized it (about 200 MB of RGB).
MAX_RESCALED_PIXELS = 1 << 26


@dataclass(frozen=True, eq=False)
class ImagePayload:
    """One image (or animated video) ready to encode.

    ``pixels`` is HWC ``uint8`` with C in 1..4 for a still image, THWC ``uint8`` (C 1 or 3) when
    ``fps`` is set (a video, encoded as an animated GIF). ``boxes`` (K, 4) ``[x1, y1, x2, y2]`` and
    ``labels`` are drawn in red before the image is resized by ``rescale``.
    """

    pixels: np.ndarray
    boxes: np.ndarray | None = None
    labels: tuple[str, ...] | None = None
    rescale: float = 1.0
    fps: float | None = None

    @property
    def nbytes(self) -> int:
        """Memory held by the pixels (the writer's queue accounting reads this)."""
        return int(self.pixels.nbytes)

    @property
    def is_video(self) -> bool:
        """True when the payload is a sequence of frames."""
        return self.fps is not None

    @property
    def height(self) -> int:
        """Height in pixels before ``rescale``."""
        return int(self.pixels.shape[-3])

    @property
    def width(self) -> int:
        """Width in pixels before ``rescale``."""
        return int(self.pixels.shape[-2])

    @property
    def channels(self) -> int:
        """Channels, which is also TensorBoard's colorspace code (1 gray .. 4 RGBA)."""
        return int(self.pixels.shape[-1])


def check_dataformats(
    dataformats: Any,
    ndim: int,
    arg: str = "dataformats",
    data_arg: str = "img_tensor",
    shape: tuple[int, ...] | None = None,
) -> str:
    """Validate ``dataformats`` against an array of ``ndim`` dimensions; return it upper-cased.

    ``shape`` (the array's, when known) lets a letter-count mismatch suggest the layout that fits.
    """
    if not isinstance(dataformats, str):
        raise TypeError(
            f"{arg} must be a str such as 'CHW', got {type(dataformats).__name__}: {dataformats!r}"
        )
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or not set(fmt) <= set("NCHW"):
        raise ValueError(f"{arg} {dataformats!r} must use distinct letters from N, C, H, W")
    if len(fmt) != ndim:
        raise ValueError(
            f"{arg} {dataformats!r} has {len(fmt)} letters but {data_arg} has {ndim} dimensions"
            + _count_hint(shape, len(fmt), arg, data_arg)
        )
    wanted = _PERMUTES.get(len(fmt))
    if wanted is None or set(fmt) != set(wanted):
        options = ", ".join(f"a permutation of {w}" for w in _PERMUTES.values())
        raise ValueError(f"{arg} {dataformats!r} must be {options}")
    return fmt


def to_uint8(arr: np.ndarray, arg: str = "img_tensor") -> np.ndarray:
    """Scale to 0..255 ``uint8``: floats x255 (float32, clipped, truncated), integers clipped, bool 0/255.

    ``arr`` must be a private copy: float32 arrays are scaled in place.
    """
    kind = arr.dtype.kind
    if arr.dtype == np.uint8:
        return arr
    if kind == "b":
        return arr.view(np.uint8) * np.uint8(255)
    if kind in "iu":
        return np.clip(arr, 0, 255).astype(np.uint8)
    if kind == "f":
        f = arr if arr.dtype == np.float32 else arr.astype(np.float32)
        np.multiply(f, np.float32(255), out=f)
        np.fmax(f, np.float32(0), out=f)  # NaN -> 0
        np.minimum(f, np.float32(255), out=f)
        return f.astype(np.uint8)
    raise TypeError(
        f"{arg} must hold real numbers (bool, integer or floating), got dtype {arr.dtype}"
    )


def make_grid(images: np.ndarray, ncols: int = _GRID_COLUMNS) -> np.ndarray:
    """torch's grid: NHWC -> one HWC canvas, ``min(N, ncols)`` columns, row-major, zero padding."""
    n, h, w, c = images.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    if nrows * ncols != n:
        pad = np.zeros((nrows * ncols - n, h, w, c), dtype=images.dtype)
        images = np.concatenate([images, pad])
    return (
        images.reshape(nrows, ncols, h, w, c)
        .transpose(0, 2, 1, 3, 4)
        .reshape(nrows * h, ncols * w, c)
    )


def _check_channels(
    c: int, arg: str, shape: tuple[int, ...] | None = None, fmt: str = "", fmt_arg: str = ""
) -> None:
    if not 1 <= c <= 4:
        raise ValueError(
            f"{arg} has {c} channels; images need 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA)"
            + (_channels_hint(shape, fmt, fmt_arg) if shape is not None and fmt_arg else "")
        )


def _fits(size: int) -> bool:
    return 1 <= size <= 4


def suggest_format(shape: tuple[int, ...]) -> str | None:
    """The image layout an array of ``shape`` most likely has (channels are 1 to 4), or None."""
    if len(shape) == 2:
        return "HW"
    if len(shape) == 3:
        return "CHW" if _fits(shape[0]) else "HWC" if _fits(shape[2]) else None
    if len(shape) == 4:
        return "NCHW" if _fits(shape[1]) else "NHWC" if _fits(shape[3]) else None
    return None


def _channels_hint(shape: tuple[int, ...], fmt: str, fmt_arg: str) -> str:
    """``dataformats`` puts C on an axis too long for channels: the layout that fits."""
    others = fmt.replace("C", "")
    for axis in sorted(range(len(shape)), key=lambda a: -a):  # channels last is the usual case
        if axis == fmt.find("C") or (fmt.startswith("N") and axis == 0) or not _fits(shape[axis]):
            continue
        better = others[:axis] + "C" + others[axis:]
        return (
            f" (its shape {shape} read as {fmt!r}); it looks like {better!r}, channels on axis "
            f"{axis}: pass {fmt_arg}={better!r}"
        )
    return ""


def _count_hint(shape: tuple[int, ...] | None, letters: int, arg: str, data_arg: str) -> str:
    """``dataformats`` has more or fewer letters than the array has axes: what fits instead."""
    if shape is None:
        return ""
    ndim = len(shape)
    if ndim == 4 and letters == 3:
        return (
            f" (shape {shape}): a batch of images goes to add_images (dataformats 'NCHW' or "
            f"'NHWC'), one image to add_image as {data_arg}[0]"
        )
    if ndim == 3 and letters == 4 and suggest_format(shape) is None:
        return (
            f" (shape {shape}): for a batch of grayscale (N, H, W) images add the channel axis, "
            f"{data_arg}[:, None]"
        )
    better = suggest_format(shape)
    if better is None:
        return ""
    return f" (shape {shape}): pass {arg}={better!r}"


def to_hwc(
    value: Any, dataformats: Any, arg: str = "img_tensor", fmt_arg: str = "dataformats"
) -> np.ndarray:
    """A user image (or batch, gridded as torch does) as contiguous HWC ``uint8``, C in 1..4; gray as RGB."""
    arr = to_array(value, arg)
    shape = tuple(arr.shape)
    fmt = check_dataformats(dataformats, arr.ndim, fmt_arg, arg, shape)
    if len(fmt) == 4:
        arr = arr.transpose([fmt.index(x) for x in "NHWC"])
        _check_channels(arr.shape[3], arg, shape, fmt, fmt_arg)
        arr = make_grid(to_uint8(arr, arg))
    elif len(fmt) == 3:
        arr = to_uint8(arr, arg).transpose([fmt.index(x) for x in "HWC"])
        _check_channels(arr.shape[2], arg, shape, fmt, fmt_arg)
    else:
        arr = to_uint8(arr, arg).transpose([fmt.index(x) for x in "HW"])[:, :, None]
    if arr.shape[2] == 1:
        arr = np.repeat(arr, 3, axis=2)
    return np.ascontiguousarray(arr)


def check_boxes(box_tensor: Any, arg: str = "box_tensor") -> np.ndarray:
    """Boxes as a (K, 4) float64 array of finite ``[x1, y1, x2, y2]`` pixel coordinates."""
    boxes = to_array(box_tensor, arg, allow_empty=True)
    if boxes.dtype.kind not in "biuf":
        raise TypeError(f"{arg} must hold real numbers, got dtype {boxes.dtype}")
    if boxes.ndim == 1 and boxes.shape[0] == 4:
        boxes = boxes[None, :]
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        hint = ""
        if boxes.ndim == 2 and boxes.shape[0] == 4:
            hint = f": it looks like (4, K), one box per column; pass {arg}.T"
        raise ValueError(
            f"{arg} must have shape (K, 4) holding [x1, y1, x2, y2] per box, got "
            f"{tuple(boxes.shape)}{hint}"
        )
    boxes = boxes.astype(np.float64)
    if not np.isfinite(boxes).all():
        raise ValueError(f"{arg} holds NaN or infinite coordinates")
    return boxes


def check_labels(labels: Any, count: int, arg: str = "labels") -> tuple[str, ...] | None:
    """``None``, one str, or one str per box; another count drops the labels, with a warning
    (as torch does, which prints a message instead)."""
    if labels is None:
        return None
    if isinstance(labels, str):
        labels = [labels]
    if isinstance(labels, (bytes, bytearray)) or not hasattr(labels, "__len__"):
        raise TypeError(f"{arg} must be a str or a sequence of str, got {type(labels).__name__}")
    out = tuple(check_text(str(label), f"{arg}[{i}]") for i, label in enumerate(labels))
    if len(out) != count:
        from tallyboard.warn import warn

        warn(
            f"{arg} has {len(out)} entries but box_tensor has {count} boxes; "
            "the boxes are drawn without labels (as torch does)",
            UserWarning,
        )
        return None
    return out


def check_rescale(rescale: Any, arg: str = "rescale") -> float:
    """A finite scale factor > 0."""
    if isinstance(rescale, bool) or not isinstance(rescale, (int, float, np.integer, np.floating)):
        raise TypeError(f"{arg} must be a number, got {type(rescale).__name__}: {rescale!r}")
    value = float(rescale)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{arg} must be a finite number > 0, got {rescale!r}")
    return value


def video_frames(value: Any, arg: str = "vid_tensor") -> np.ndarray:
    """(N, T, C, H, W) videos tiled as torch does into THWC ``uint8`` frames (C 1 or 3)."""
    v = to_array(value, arg)
    if v.ndim != 5:
        hint = ""
        if v.ndim == 4:
            hint = f": for one video (T, C, H, W) add the batch axis, {arg}[None]"
        raise ValueError(f"{arg} must have shape (N, T, C, H, W), got {tuple(v.shape)}{hint}")
    b, t, c, h, w = v.shape
    if c not in (1, 3):
        hint = ""
        if w in (1, 3):
            hint = (
                f"; its shape {tuple(v.shape)} looks like (N, T, H, W, C), channels last: pass "
                f"np.transpose({arg}, (0, 1, 4, 2, 3)) (a torch tensor: {arg}.permute(0, 1, 4, 2, 3))"
            )
        raise ValueError(f"{arg} has {c} channels (axis 2); videos need 1 (gray) or 3 (RGB){hint}")
    v = to_uint8(v, arg)
    if b & (b - 1):  # pad the batch to the next power of two with black videos
        v = np.concatenate([v, np.zeros((2 ** b.bit_length() - b, t, c, h, w), dtype=np.uint8)])
    rows = 2 ** ((b.bit_length() - 1) // 2)
    cols = v.shape[0] // rows
    v = (
        v.reshape(rows, cols, t, c, h, w)
        .transpose(2, 0, 4, 1, 5, 3)
        .reshape(t, rows * h, cols * w, c)
    )
    return np.ascontiguousarray(v)


def check_fps(fps: Any, arg: str = "fps") -> float:
    """Frames per second: a finite number, at least :data:`MIN_FPS` (a GIF frame's longest)."""
    if isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating)):
        raise TypeError(f"{arg} must be a number, got {type(fps).__name__}: {fps!r}")
    value = float(fps)
    if not math.isfinite(value) or value < MIN_FPS:
        raise ValueError(
            f"{arg} must be a finite number > 0, at least {MIN_FPS:.6g} (a GIF frame lasts at "
            f"most 655.35 s), got {fps!r}"
        )
    return value


def check_rescaled(pixels: np.ndarray, rescale: float, arg: str = "rescale") -> None:
    """The image ``rescale`` gives is at least 1x1 and at most :data:`MAX_RESCALED_PIXELS`."""
    h, w = pixels.shape[-3:-1]
    rh, rw = int(h * rescale), int(w * rescale)
    if rh < 1 or rw < 1:
        raise ValueError(f"{arg} {rescale!r} shrinks the {h}x{w} image to nothing")
    if rh * rw > MAX_RESCALED_PIXELS:
        raise ValueError(
            f"{arg} {rescale!r} grows the {h}x{w} image to {rh}x{rw}, over "
            f"{MAX_RESCALED_PIXELS} pixels"
        )


def check_payload(payload: ImagePayload, arg: str = "value") -> ImagePayload:
    """An ImagePayload built by hand holds what this module's checks give, so it encodes."""
    pixels = payload.pixels
    if not isinstance(pixels, np.ndarray) or pixels.dtype != np.uint8:
        raise TypeError(f"{arg}.pixels must be a uint8 NumPy array")
    if pixels.ndim != (4 if payload.is_video else 3) or 0 in pixels.shape:
        raise ValueError(f"{arg}.pixels has shape {tuple(pixels.shape)}: HWC, or THWC for a video")
    _check_channels(pixels.shape[-1], f"{arg}.pixels")
    if payload.is_video:
        check_fps(payload.fps, f"{arg}.fps")
        if pixels.shape[-1] not in (1, 3):
            raise ValueError(f"{arg}.pixels: a video needs 1 or 3 channels")
    rescale = check_rescale(payload.rescale, f"{arg}.rescale")
    check_rescaled(pixels, rescale, f"{arg}.rescale")
    if payload.boxes is not None:
        boxes = check_boxes(payload.boxes, f"{arg}.boxes")
        labels = payload.labels
        if labels is not None and (
            not isinstance(labels, tuple)
            or check_labels(labels, len(boxes), f"{arg}.labels") is None
        ):
            raise ValueError(f"{arg}.labels must be a tuple of one str per box")
    return payload


def convert(value: Any) -> ImagePayload:
    """``add_value("image", tag, value)``: an ImagePayload, or an array HW, CHW or NCHW (gridded)."""
    if isinstance(value, ImagePayload):
        return check_payload(value)
    arr = to_array(value, "value")
    fmt = _PERMUTES.get(arr.ndim)
    if fmt is None:
        raise ValueError(f"value must be an HW, CHW or NCHW image, got shape {tuple(arr.shape)}")
    return ImagePayload(to_hwc(arr, fmt, "value"))
