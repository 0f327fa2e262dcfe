"""``Kind.from_row`` of the image kind: a decoded image row back to a payload, its bytes as they
are or its pixels (Pillow, loaded here)."""

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
            "(tallyboard_image.rows.MAX_PIXELS); not decoded"
        )


def from_row(row: dict[str, Any]) -> tuple[str, Any]:
    """An image row as a payload: its encoded ``data`` as it is when a browser shows it (PNG,
    JPEG, GIF: an :class:`~tallyboard_image.encoded.EncodedImages`, never re-encoded), else its
    pixels (:func:`decode`).

    Raises ``ValueError`` for data Pillow cannot read, for images deeper than 8 bits and for
    more than :data:`MAX_PIXELS` pixels (checked from the header, before anything is decoded).
    """
    from .encoded import EncodedImages, content_type

    tag, data = row["tag"], row["data"]
    if content_type(data):
        header = [row.get(k) for k in ("width", "height", "colorspace")]
        if all(isinstance(v, int) and v >= 0 for v in header):
            width, height, colorspace = (int(v) for v in header)  # type: ignore[arg-type]
            sample = int(row.get("sample") or 0)
            return tag, EncodedImages(width, height, colorspace, (bytes(data),), sample)
    return tag, decode(data, f"image {tag!r} at step {row.get('step')}", row.get("colorspace"))


def decode(data: Any, where: str, colorspace: Any = None) -> ImagePayload:
    """The pixels of encoded image ``data``: a still (PNG, JPEG, ...) as HWC ``uint8`` with its
    own channels (1 gray .. 4 RGBA), an animated GIF as a video at its frame rate (gray when
    ``colorspace`` is 1), so encoding the payload gives the same pixels back. ``where`` names
    the image in errors.

    Raises ``ValueError`` as :func:`from_row` does.
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
