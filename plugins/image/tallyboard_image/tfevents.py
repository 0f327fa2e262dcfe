"""Images as TensorBoard ``Event`` bytes: ``Summary.Value(tag, image=Summary.Image(...))``, no metadata.

Hand-packed (the tests compare it with the protobuf encoding): an image is a few varints and
one large bytes field, so building messages would only copy the PNG more often.
"""

from __future__ import annotations

from tallyboard.records.wire import field_bytes, varint
from tallyboard_tfevents.encoding import summary_event

from .codec import EncodedImage
from .codec import encode as encode_image
from .convert import ImagePayload, convert


def image_value(tag: str, img: EncodedImage) -> bytes:
    """Serialized ``Summary.Value`` with ``tag`` and ``image`` (height 1, width 2, colorspace 3, data 4)."""
    image = (
        b"\x08"
        + varint(img.height)
        + b"\x10"
        + varint(img.width)
        + b"\x18"
        + varint(img.colorspace)
        + field_bytes(4, img.data)
    )
    return field_bytes(1, tag.encode("utf-8")) + field_bytes(4, image)


def encode(tag: str, step: int | None, wall_time: float, payload: ImagePayload) -> bytes:
    """One Event with a PNG (still) or GIF (video) image; TensorBoard's images plugin shows both.

    A plain array payload (from a face that skips ``Kind.convert``) is read as HW, CHW or NCHW.
    """
    if type(payload) is not ImagePayload:
        payload = convert(payload)
    return summary_event(step, wall_time, [image_value(tag, encode_image(payload))])
