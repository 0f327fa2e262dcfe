"""Images as a file holds them: encoded bytes written and served as they are, never re-encoded.

A reader's image row (a PNG, JPEG or GIF, with the width, height and colorspace stored beside
it) becomes an :class:`EncodedImages`; the TensorBoard encoder writes its bytes as they are, and
the images of one tag and step (several images of one summary, a row each) join into one value,
as ``tf.summary.image(max_outputs=...)`` writes them. Encoders that need pixels (MindSpore's)
read :attr:`EncodedImages.pixels`, decoded on first use. Importing this module is cheap.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_PNG, _JPEG, _GIF = b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF8"
_SUFFIXES = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif"}


def content_type(data: Any) -> str | None:
    """The content type of encoded image bytes a browser shows (PNG, JPEG, GIF); None else."""
    if not isinstance(data, (bytes, bytearray)):
        return None
    head = bytes(data[:8])
    if head == _PNG:
        return "image/png"
    if head[:3] == _JPEG:
        return "image/jpeg"
    return "image/gif" if head[:4] == _GIF else None


def suffix(data: bytes) -> str:
    """The file suffix of encoded image bytes (``.png``, ``.jpg``, ``.gif``)."""
    return _SUFFIXES.get(content_type(data) or "", ".png")


@dataclass(frozen=True, eq=False)
class EncodedImages:
    """One or more encoded images of one tag and step, with the header TensorBoard stores.

    ``images`` holds each image's bytes as the file held them (PNG, JPEG or GIF); ``width``,
    ``height`` and ``colorspace`` (1 gray .. 4 RGBA, 0 unknown) are the first image's;
    ``sample`` is the first image's place in its summary (several images at one step).
    """

    width: int
    height: int
    colorspace: int
    images: tuple[bytes, ...]
    sample: int = 0

    def __post_init__(self) -> None:
        if not self.images or not all(content_type(b) for b in self.images):
            raise ValueError("EncodedImages holds one or more PNG, JPEG or GIF images")

    @property
    def nbytes(self) -> int:
        """Memory held by the encoded bytes (the writer's queue accounting reads this)."""
        return sum(map(len, self.images))

    @functools.cached_property
    def _decoded(self) -> Any:
        from .pixels import decode

        return decode(self.images[0], "image", self.colorspace)

    @property
    def pixels(self) -> Any:
        """The first image's pixels (HWC ``uint8``, THWC for a GIF video), decoded on first use,
        for encoders that write pixels."""
        return self._decoded.pixels

    @property
    def fps(self) -> float | None:
        """The frame rate of a GIF video; None for a still."""
        return self._decoded.fps

    @property
    def is_video(self) -> bool:
        """True when the first image is an animated GIF (decoded to know)."""
        return self.fps is not None

    @property
    def channels(self) -> int:
        """Channels of the first image's pixels (decoded to know)."""
        return int(self.pixels.shape[-1])

    #: What an :class:`~tallyboard_image.convert.ImagePayload` also carries, so an encoder
    #: written for one reads these the same: no boxes or labels to draw, no rescale.
    boxes = None
    labels = None
    rescale = 1.0


def join(payloads: Sequence[Any]) -> EncodedImages | None:
    """The images of one tag and step as one value (the first's header); None when one of them
    is no :class:`EncodedImages` (decoded pixels stay values of their own)."""
    if not all(isinstance(p, EncodedImages) for p in payloads):
        return None
    first = payloads[0]
    images = tuple(b for p in payloads for b in p.images)
    return EncodedImages(first.width, first.height, first.colorspace, images, first.sample)


def image_or_row(row: dict[str, Any]) -> Any:
    """A decoder's image row (``width``, ``height``, ``colorspace``, ``data``, ``sample``) as
    the kind's payload when its data is an image a browser shows, else the row as it is (its
    pixels are then decoded by ``from_row``, or it is reported as no image)."""
    if not content_type(row["data"]):
        return row
    data = bytes(row["data"])
    return EncodedImages(row["width"], row["height"], row["colorspace"], (data,), row["sample"])


def to_row(payload: Any) -> dict[str, Any]:
    """An image payload as a row of ``tallyboard.read``'s table: ``width``, ``height``,
    ``colorspace``, ``data`` (the encoded bytes; a list of them for several images) and
    ``sample``; pixels are encoded as the sinks encode them."""
    if isinstance(payload, EncodedImages):
        images = payload.images
        return {
            "width": payload.width,
            "height": payload.height,
            "colorspace": payload.colorspace,
            "data": images[0] if len(images) == 1 else list(images),
            "sample": payload.sample,
        }
    from .codec import encode

    img = encode(payload)
    return {
        "width": img.width,
        "height": img.height,
        "colorspace": img.colorspace,
        "data": img.data,
        "sample": 0,
    }


def from_row(row: dict[str, Any]) -> tuple[str, Any]:
    """An image row as a payload: its encoded ``data`` as it is when a browser shows it (PNG,
    JPEG, GIF: an :class:`~tallyboard_image.encoded.EncodedImages`, never re-encoded), else its
    pixels (:func:`~tallyboard_image.pixels.decode`).

    Raises ``ValueError`` for data Pillow cannot read, for images deeper than 8 bits and for
    more than :data:`~tallyboard_image.pixels.MAX_PIXELS` pixels (checked from the header, before anything is decoded).
    """
    from .pixels import decode

    tag, data = row["tag"], row["data"]
    if content_type(data):
        header = [row.get(k) for k in ("width", "height", "colorspace")]
        if all(isinstance(v, int) and v >= 0 for v in header):
            width, height, colorspace = (int(v) for v in header)  # type: ignore[arg-type]
            sample = int(row.get("sample") or 0)
            return tag, EncodedImages(width, height, colorspace, (bytes(data),), sample)
    return tag, decode(data, f"image {tag!r} at step {row.get('step')}", row.get("colorspace"))
