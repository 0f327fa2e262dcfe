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
from .encoded import EncodedImages, content_type


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


def images_value(tag: str, images: EncodedImages) -> bytes:
    """Serialized ``Summary.Value`` of several images as TF2 writes them: an ``images``-plugin
    string tensor ``[width, height, image, image, ...]``, the bytes as they are."""
    from tallyboard_tfevents.proto import DT_STRING, SummaryValue, TensorProto, metadata, shape

    head = [str(images.width).encode("ascii"), str(images.height).encode("ascii")]
    tensor = TensorProto(
        dtype=DT_STRING, tensor_shape=shape([len(images.images) + 2]), string_val=head
    )
    tensor.string_val.extend(images.images)
    value = SummaryValue(tag=tag, metadata=metadata("images"), tensor=tensor)
    return bytes(value.SerializeToString())


def encode(
    tag: str, step: int | None, wall_time: float, payload: ImagePayload | EncodedImages
) -> bytes:
    """One Event with a PNG (still) or GIF (video) image; TensorBoard's images plugin shows both.

    Encoded images (:class:`EncodedImages`, read from a file) are written as they are: one as a
    ``Summary.Image``, several in one ``images``-plugin tensor. A plain array payload (from a
    face that skips ``Kind.convert``) is read as HW, CHW or NCHW.
    """
    if type(payload) is EncodedImages:
        if len(payload.images) > 1:
            return summary_event(step, wall_time, [images_value(tag, payload)])
        data = payload.images[0]
        img = EncodedImage(
            payload.height, payload.width, payload.colorspace, data, content_type(data) or ""
        )
        return summary_event(step, wall_time, [image_value(tag, img)])
    if type(payload) is not ImagePayload:
        payload = convert(payload)
    return summary_event(step, wall_time, [image_value(tag, encode_image(payload))])
