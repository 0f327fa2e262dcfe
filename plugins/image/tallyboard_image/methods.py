"""torch's image methods on the writer: validate and convert in the caller, encode later."""

from __future__ import annotations

from typing import Any

import numpy as np
from tallyboard.values import check_flag, defer_call, on_device, raise_if_swapped, to_array

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
    """Log one image under ``tag``, shown in the IMAGES tab (one slider position per step).

    ``img_tensor`` is laid out as ``dataformats`` says: ``"CHW"`` (torch's default: channels
    first), ``"HWC"``, ``"HW"`` (grayscale) or any order of those letters; with four letters
    (``"NCHW"``) a batch is drawn as one grid, 8 images a row, as :meth:`add_images` does. 1
    channel is gray (shown as RGB), 2 gray with alpha, 3 RGB, 4 RGBA. Pixel values: floats are
    taken as [0, 1] (multiplied by 255, clipped, truncated, as torch does); integers as 0..255
    (clipped); ``uint8`` as is; bool as black and white. Unlike torch, which scales every
    non-``uint8`` dtype by 255 (so an int64 image of 200 comes out white), integers keep their
    values. The image is copied at the call and encoded as PNG on the writer's thread.

    Args:
        tag: The image's name, a str. Written as given.
        img_tensor: The image: a NumPy array, torch tensor (any device), list, or anything with
            ``__array__`` or DLPack, of real numbers, with one axis per letter of
            ``dataformats``: ``(C, H, W)`` by default, ``(H, W, C)`` with ``"HWC"``, ``(H, W)``
            with ``"HW"``.
        global_step: The step the image belongs to: an int within int64. Default ``None`` writes
            no step (read as 0).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()`` at
            the call.
        dataformats: The order of the axes, distinct letters from ``N``, ``C``, ``H``, ``W``
            (any case), one per axis. Default ``"CHW"``.

    Raises:
        TypeError: ``img_tensor`` is no array of real numbers (when it is a str and ``tag`` is
            not, the message says the two look swapped); ``dataformats`` is not a str, or it
            landed in ``global_step`` (the message says to pass it by keyword); ``tag`` or
            ``global_step`` has the wrong type.
        ValueError: ``dataformats`` does not fit the array (another letter count, a repeated
            letter, more than 4 channels); the message names the layout that fits, such as
            ``dataformats="HWC"`` for an ``(H, W, 3)`` array. ``img_tensor`` is empty;
            ``global_step`` is outside int64; ``walltime`` is not finite.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> rows = np.linspace(0, 1, 64)[:, None] * np.ones(64)
        >>> chw = np.stack([rows, rows.T, 1 - rows])  # (3, 64, 64), values in [0, 1]
        >>> with SummaryWriter("runs/image") as writer:
        ...     writer.add_image("gradient", chw, 0)
        ...     writer.add_image("gradient_hwc", chw.transpose(1, 2, 0), 0, dataformats="HWC")
    """
    if on_device(img_tensor):  # a jax.Array, a CUDA tensor: converted on the writer's side
        defer_call(
            writer, "image", tag, img_tensor, global_step, walltime,
            lambda w, host: add_image(w, tag, host, global_step, walltime, dataformats),
        )  # fmt: skip
        return
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
    """Log a batch of images as one grid under ``tag``, 8 images a row as torch draws them.

    The grid has ``min(N, 8)`` columns and as many rows as needed; empty cells are black. Pixel
    values and channels are read as :meth:`add_image` reads them (floats in [0, 1], integers
    0..255, 1 to 4 channels). As in tensorboardX, ``img_tensor`` may also be a list of images of
    one shape with ``dataformats`` ``"CHW"`` or ``"HWC"``; torch does not take lists.

    Args:
        tag: The grid's name, a str.
        img_tensor: ``(N, C, H, W)`` by default, ``(N, H, W, C)`` with ``"NHWC"``: an array or
            tensor of real numbers; or a list of ``(C, H, W)`` / ``(H, W, C)`` images of one
            shape with ``dataformats="CHW"`` / ``"HWC"``.
        global_step: The step the grid belongs to: an int within int64. Default ``None`` writes
            no step (read as 0).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()`` at
            the call.
        dataformats: The order of the axes: four distinct letters ``N``, ``C``, ``H``, ``W``
            (any case), or ``"CHW"``/``"HWC"`` for a list or a single image. Default ``"NCHW"``.

    Raises:
        TypeError: ``img_tensor`` is no array of real numbers (or a str in ``tag``'s place: the
            message says they look swapped); ``dataformats`` is not a str or was passed as
            ``global_step``.
        ValueError: ``dataformats`` does not fit the array; the message names the layout that
            fits (``"NHWC"`` for channels last, ``img_tensor[:, None]`` for a batch of ``(N, H,
            W)`` grayscale images, ``"CHW"`` for one image). An empty list, images of several
            shapes; ``global_step`` outside int64; ``walltime`` not finite.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> batch = np.random.default_rng(0).random((16, 3, 32, 32))  # N, C, H, W in [0, 1]
        >>> with SummaryWriter("runs/images") as writer:
        ...     writer.add_images("samples", batch, 0)  # one 256x64 grid: 8 columns, 2 rows
    """
    if on_device(img_tensor):  # a jax.Array, a CUDA tensor: converted on the writer's side
        defer_call(
            writer, "image", tag, img_tensor, global_step, walltime,
            lambda w, host: add_images(w, tag, host, global_step, walltime, dataformats),
        )  # fmt: skip
        return
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
    """Log an image with boxes drawn on it (a detector's, say), optionally labelled.

    Each box ``[x1, y1, x2, y2]`` (pixels, from the top-left corner) is drawn in red, 2 pixels
    wide; a label is written in black on a red band inside the box's bottom-left corner. The
    image is read as :meth:`add_image` reads it; after drawing, it is resized by ``rescale``
    (Lanczos), while the height and width written beside the PNG stay those before ``rescale``,
    as torch writes them. Unlike torch, ``box_tensor`` may be a list.

    Args:
        tag: The image's name, a str.
        img_tensor: The image, ``(C, H, W)`` by default (see :meth:`add_image`).
        box_tensor: The boxes, shape ``(K, 4)`` (or ``(4,)`` for one box): finite pixel
            coordinates ``[x1, y1, x2, y2]``; ``(0, 4)`` draws none.
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.
        rescale: The factor to resize the drawn image by, a finite number > 0; the result must
            hold at least one pixel and at most 2**26. Default ``1`` (no resize).
        dataformats: The order of ``img_tensor``'s axes (see :meth:`add_image`). Default
            ``"CHW"``.
        labels: One str per box, or one str for a single box. Default ``None`` (no labels). As
            in torch, a count other than the boxes' draws the boxes without labels (here with a
            warning).

    Raises:
        TypeError: An argument has the wrong type (``labels`` not str, ``rescale`` not a number,
            and as :meth:`add_image`).
        ValueError: ``box_tensor`` is not ``(K, 4)`` (for ``(4, K)`` the message suggests
            ``box_tensor.T``) or holds NaN or infinity; ``rescale`` is not > 0 or makes the
            image too small or too large; ``dataformats`` does not fit (the message names the
            one that does).

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> image = np.zeros((3, 64, 64))
        >>> boxes = np.array([[8, 8, 30, 40], [36, 20, 60, 60]])
        >>> with SummaryWriter("runs/boxes") as writer:
        ...     writer.add_image_with_boxes("found", image, boxes, 0, labels=["cat", "dog"])
    """
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
    """Log a matplotlib figure as an image (drawn with the Agg backend, no window opened).

    The figure is rendered at its own size and dpi to RGB pixels and logged as :meth:`add_image`
    logs them; a list of figures of one pixel size is logged as one grid (8 a row). Needs
    matplotlib (``pip install "tallyboard[figures]"``).

    Args:
        tag: The image's name, a str.
        figure: A ``matplotlib.figure.Figure``, or a list of figures of the same pixel size.
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        close: Close the figure(s) once drawn (``plt.close``), so a loop does not keep every
            figure in memory. Default ``True``.
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        tallyboard.extras.MissingExtra: matplotlib is not installed (a ``ModuleNotFoundError``
        whose message is the install line).
        TypeError: ``figure`` (or an element of the list) is not a matplotlib Figure; a str in
            ``figure`` with a non-str ``tag`` says the two look swapped.
        ValueError: An empty list, or figures of several pixel sizes.

    Example:
        >>> import matplotlib.pyplot as plt
        >>> from tallyboard import SummaryWriter
        >>> fig, ax = plt.subplots(figsize=(3, 2), dpi=50)
        >>> _ = ax.plot([0, 1, 4, 9])
        >>> with SummaryWriter("runs/figure") as writer:
        ...     writer.add_figure("squares", fig, 0)  # fig is closed afterwards
    """
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
    """Log a batch of videos as one looping animated GIF, played in the IMAGES tab.

    ``vid_tensor`` is ``(N, T, C, H, W)``: N videos of T frames. As torch does, the batch is
    padded with black videos to a power of two and tiled (16 videos: 4x4, 2: 1x2, 3: 1x4).
    Floats are taken as [0, 1] and integers as 0..255 (torch divides ``uint8`` by 255 first, to
    the same effect, and scales other integers as floats). Unlike torch, no moviepy is needed:
    Pillow writes the GIF, and a missing encoder is an error in the call, never an empty value
    in the file.

    Args:
        tag: The video's name, a str.
        vid_tensor: ``(N, T, C, H, W)`` real numbers, C 1 (gray) or 3 (RGB).
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        fps: Frames per second, a finite number at least 1/655.35 (a GIF frame lasts at most
            655.35 s); GIF stores frame durations in hundredths of a second, so rates above 100
            are rounded by the format. Default ``4``.
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: ``vid_tensor`` is no array of real numbers (or a str in ``tag``'s place: the
            message says they look swapped); ``fps`` is not a number.
        ValueError: ``vid_tensor`` is not 5-D (for one ``(T, C, H, W)`` video the message
            suggests ``vid_tensor[None]``) or has another channel count (for ``(N, T, H, W, C)``
            it gives the transpose); ``fps`` is too small or not finite.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> frames = np.zeros((1, 8, 3, 32, 32))  # one video of 8 frames
        >>> for t in range(8):
        ...     frames[0, t, 0, :, 4 * t : 4 * t + 4] = 1.0  # a red bar moving right
        >>> with SummaryWriter("runs/video") as writer:
        ...     writer.add_video("bar", frames, 0, fps=8)
    """
    if on_device(vid_tensor):  # a jax.Array, a CUDA tensor: converted on the writer's side
        defer_call(
            writer, "image", tag, vid_tensor, global_step, walltime,
            lambda w, host: add_video(w, tag, host, global_step, fps, walltime),
        )  # fmt: skip
        return
    try:
        frames = video_frames(vid_tensor)
    except TypeError:
        raise_if_swapped("add_video", tag, vid_tensor, "vid_tensor")
        raise
    writer.emit("image", tag, ImagePayload(frames, fps=check_fps(fps)), global_step, walltime)
