"""The pixels of an encoded image (Pillow, loaded when first needed), within a bound on their
number."""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np

from .convert import ImagePayload

#: Pillow mode -> the 8-bit mode whose pixels the payload keeps (1 to 4 channels).
_MODES = {
    "1": "L",
    "L": "L",
    "LA": "LA",
    "La": "LA",
    "RGB": "RGB",
    "RGBA": "RGBA",
    "RGBa": "RGBA",
    "PA": "RGBA",
    "CMYK": "RGB",
    "YCbCr": "RGB",
    "LAB": "RGB",
    "HSV": "RGB",
}
#: frame rate of a GIF whose frames carry no duration (what browsers show)
DEFAULT_GIF_FPS = 10.0
#: most pixels (frames x height x width) decoded from one image: a few hundred kilobytes of PNG
#: can claim gigabytes of pixels (a decompression bomb); 2^25 is an 8192 x 4096 still.
MAX_PIXELS = 1 << 25


class TooManyPixels(ValueError):
    """An image with more pixels than :data:`MAX_PIXELS`."""


def _check_pixels(where: str, pixels: int) -> None:
    if pixels > MAX_PIXELS:
        raise TooManyPixels(
            f"{where}: {pixels} pixels, more than the {MAX_PIXELS} decoded at most "
            "(tallyboard_image.pixels.MAX_PIXELS); not decoded"
        )


def decode(data: Any, where: str, colorspace: Any = None) -> ImagePayload:
    """The pixels of encoded image ``data``: a still (PNG, JPEG, ...) as HWC ``uint8`` with its
    own channels (1 gray .. 4 RGBA), an animated GIF as a video at its frame rate (gray when
    ``colorspace`` is 1), so encoding the payload gives the same pixels back. ``where`` names
    the image in errors.

    Raises ``ValueError`` for data Pillow cannot read, for images deeper than 8 bits and for
    more than :data:`MAX_PIXELS` pixels (checked from the header, before anything is decoded).
    """
    from PIL import Image, ImageSequence, UnidentifiedImageError

    if not isinstance(data, (bytes, bytearray)):
        raise ValueError(f"{where}: the data is no image Pillow can read (no bytes)")
    try:
        with warnings.catch_warnings():  # Pillow's own bomb warning: MAX_PIXELS is lower
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
        _check_pixels(where, image.size[0] * image.size[1])
        image.load()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        if isinstance(exc, TooManyPixels):
            raise
        raise ValueError(f"{where}: the data is no image Pillow can read ({exc})") from None
    with image:
        if image.format == "GIF":
            frames = []
            for n, frame in enumerate(ImageSequence.Iterator(image), 1):
                _check_pixels(where, n * image.size[0] * image.size[1])
                frames.append(np.asarray(frame.convert("RGB")))
            duration = float(image.info.get("duration") or 0)
            fps = 1000.0 / duration if duration > 0 else DEFAULT_GIF_FPS
            pixels = np.stack(frames)
            if colorspace == 1:
                pixels = pixels[..., :1]
            return ImagePayload(np.ascontiguousarray(pixels), fps=fps)
        mode = image.mode
        if mode == "P":
            mode = "RGBA" if "transparency" in image.info else "RGB"
        target = _MODES.get(mode)
        if target is None:
            raise ValueError(
                f"{where}: a {image.mode!r} image has no 8-bit equivalent without loss"
            )
        pixels = np.asarray(image.convert(target) if image.mode != target else image)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    return ImagePayload(np.ascontiguousarray(pixels, dtype=np.uint8))
