"""torch's image methods on the writer: validate and convert in the caller, encode later."""

from __future__ import annotations

from typing import Any

import numpy as np
from tallyboard.faces.hints import raise_if_swapped
from tallyboard.values import check_flag, to_array

from .convert import (
    ImagePayload,
    check_boxes,
    check_fps,
    check_labels,
    check_rescale,
    check_rescaled,
    to_hwc,
    video_frames,
)


def add_image(
    writer: Any,
    tag: str,
    img_tensor: Any,
    global_step: Any = None,
    walltime: Any = None,
    dataformats: str = "CHW",
) -> None:
    """Log one image (HW, CHW/HWC, or a batch gridded 8 columns wide); floats in [0, 1], integers 0..255."""
    pixels = _pixels("add_image", tag, img_tensor, dataformats, global_step)
    writer.emit("image", tag, ImagePayload(pixels), global_step, walltime)


def add_images(
    writer: Any,
    tag: str,
    img_tensor: Any,
    global_step: Any = None,
    walltime: Any = None,
    dataformats: str = "NCHW",
) -> None:
    """Log a batch of images as one grid (torch's layout: 8 per row).

    As in tensorboardX, ``img_tensor`` may also be a list of images of one size with
    ``dataformats`` ``"CHW"`` or ``"HWC"``.
    """
    listed = isinstance(img_tensor, (list, tuple)) and isinstance(dataformats, str)
    if listed and dataformats.upper() in ("CHW", "HWC"):
        img_tensor = _stack(img_tensor)
        dataformats = "N" + dataformats.upper()
    pixels = _pixels("add_images", tag, img_tensor, dataformats, global_step)
    writer.emit("image", tag, ImagePayload(pixels), global_step, walltime)


def _pixels(method: str, tag: Any, img_tensor: Any, dataformats: Any, global_step: Any) -> Any:
    """``to_hwc``, with the errors of common mistakes saying how to write the call instead."""
    if type(global_step) is str and _is_format(global_step):
        raise TypeError(
            f"global_step got {global_step!r}, which looks like a dataformats (the parameter "
            f"after walltime): pass it by keyword, {method}(..., dataformats={global_step!r})"
        )
    try:
        return to_hwc(img_tensor, dataformats)
    except TypeError:
        raise_if_swapped(method, tag, img_tensor, "img_tensor")
        raise


def _is_format(text: str) -> bool:
    letters = text.upper()
    return (
        2 <= len(letters) <= 4 and len(set(letters)) == len(letters) and set(letters) <= set("NCHW")
    )


def _stack(images: list[Any] | tuple[Any, ...]) -> np.ndarray:
    """A list of same-sized images as one batch (tensorboardX's list form of ``add_images``)."""
    if not images:
        raise ValueError("img_tensor is an empty list: give at least one image")
    arrays = [to_array(img, f"img_tensor[{i}]") for i, img in enumerate(images)]
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(
            f"img_tensor: the images of a list must share one shape, got {sorted(shapes)}"
        )
    return np.stack(arrays)


def add_image_with_boxes(
    writer: Any,
    tag: str,
    img_tensor: Any,
    box_tensor: Any,
    global_step: Any = None,
    walltime: Any = None,
    rescale: float = 1,
    dataformats: str = "CHW",
    labels: Any = None,
) -> None:
    """Log an image with red ``[x1, y1, x2, y2]`` boxes (optionally labelled), resized by ``rescale``."""
    pixels = _pixels("add_image_with_boxes", tag, img_tensor, dataformats, global_step)
    boxes = check_boxes(box_tensor)
    scale = check_rescale(rescale)
    check_rescaled(pixels, scale)
    payload = ImagePayload(pixels, boxes, check_labels(labels, len(boxes)), scale)
    writer.emit("image", tag, payload, global_step, walltime)


def _render_figure(figure: Any, close: bool, arg: str) -> np.ndarray:
    from tallyboard.extras import require

    require("matplotlib", "figures", "add_figure")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not isinstance(figure, Figure):
        raise TypeError(f"{arg} must be a matplotlib Figure, got {type(figure).__name__}")
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    rgb = np.array(np.asarray(canvas.buffer_rgba())[:, :, :3])
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return rgb


def add_figure(
    writer: Any,
    tag: str,
    figure: Any,
    global_step: Any = None,
    close: bool = True,
    walltime: Any = None,
) -> None:
    """Log a matplotlib figure (or a list of same-size figures, gridded); ``close`` closes them."""
    close = check_flag(close, "close")
    if isinstance(figure, str):
        raise_if_swapped("add_figure", tag, figure, "figure")
    if isinstance(figure, (list, tuple)):
        if not figure:
            raise ValueError("figure is an empty list")
        images = [_render_figure(f, close, f"figure[{i}]") for i, f in enumerate(figure)]
        sizes = {im.shape for im in images}
        if len(sizes) != 1:
            raise ValueError(
                f"figure: every figure in the list must have the same pixel size, got {sorted(sizes)}"
            )
        pixels = to_hwc(np.stack(images), "NHWC", "figure")
    else:
        pixels = to_hwc(_render_figure(figure, close, "figure"), "HWC", "figure")
    writer.emit("image", tag, ImagePayload(pixels), global_step, walltime)


def add_video(
    writer: Any,
    tag: str,
    vid_tensor: Any,
    global_step: Any = None,
    fps: float = 4,
    walltime: Any = None,
) -> None:
    """Log (N, T, C, H, W) videos as one animated GIF (batch tiled as torch does) at ``fps``."""
    try:
        frames = video_frames(vid_tensor)
    except TypeError:
        raise_if_swapped("add_video", tag, vid_tensor, "vid_tensor")
        raise
    writer.emit("image", tag, ImagePayload(frames, fps=check_fps(fps)), global_step, walltime)
