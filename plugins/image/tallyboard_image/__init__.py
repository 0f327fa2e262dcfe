"""The ``image`` kind: ``add_image``, ``add_images``, ``add_image_with_boxes``, ``add_figure``, ``add_video``.

Inputs are validated and turned into HWC ``uint8`` pixels in the caller
(:class:`tallyboard_image.convert.ImagePayload`); PNG/GIF encoding (Pillow) is left to the sink,
which may do it on its background thread, so the kind is ``heavy``. Importing this module is
cheap: NumPy, Pillow and matplotlib load when the registry is built or an image is logged.
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl


@hookimpl
def register_kinds(register: Any) -> None:
    from . import methods
    from .convert import ImagePayload, convert
    from .encoded import EncodedImages, from_row, join, to_row

    register(
        Kind(
            name="image",
            convert=convert,
            methods={
                "add_image": methods.add_image,
                "add_images": methods.add_images,
                "add_image_with_boxes": methods.add_image_with_boxes,
                "add_figure": methods.add_figure,
                "add_video": methods.add_video,
            },
            heavy=True,
            description="images, image grids, boxes, matplotlib figures, GIF videos",
            from_row=from_row,
            payload=(ImagePayload, EncodedImages),
            to_row=to_row,
            join=join,
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    def encode_tfevents(tag: str, step: int | None, wall_time: float, payload: Any) -> bytes:
        from .tfevents import encode

        return encode(tag, step, wall_time, payload)

    register("image", "tfevents", encode_tfevents)


#: PNG colour type (IHDR byte 25) -> Summary.Image colorspace (1 gray .. 4 RGBA).
_PNG_COLORSPACE = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}


def _png_colorspace(data: bytes) -> int:
    """The colorspace a PNG declares; 0 (unknown) for other encodings."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 26:
        return 0
    return _PNG_COLORSPACE.get(data[25], 0)


def decode_tfevents(value: Any, step: int, wall_time: float) -> list[Any] | None:
    """Images as the kind's payload, their encoded bytes as they are (never decoded here): one
    :class:`~tallyboard_image.encoded.EncodedImages` per image (a row of an image a browser
    cannot show: ``from_row`` decodes its pixels).

    A ``Summary.Image`` is one image (``sample`` 0); an ``images``-plugin string tensor
    (TF2's ``tf.summary.image``, Keras) is ``[width, height, png, png, ...]``, several images at
    one step, numbered by ``sample``. ``data`` is the PNG (or other encoded) image:
    ``PIL.Image.open(io.BytesIO(row["data"]))``.
    """
    from .encoded import image_or_row

    if value.HasField("image"):
        img = value.image
        row = {
            "width": int(img.width),
            "height": int(img.height),
            "colorspace": int(img.colorspace),
            "data": bytes(img.encoded_image_string),
            "sample": 0,
        }
        return [image_or_row(row)]
    if value.metadata.plugin_data.plugin_name != "images" or not value.HasField("tensor"):
        return None
    from tallyboard_tfevents.proto import DT_STRING
    from tallyboard_tfevents.tensors import shape_of, strings

    tensor = value.tensor
    if tensor.dtype != DT_STRING or len(shape_of(tensor)) != 1:
        return None
    items = strings(tensor)
    if len(items) < 2:
        return None
    try:
        width, height = int(items[0]), int(items[1])
    except ValueError:  # not the images plugin's layout
        return None
    return [
        image_or_row(
            {
                "width": width,
                "height": height,
                "colorspace": _png_colorspace(data),
                "data": data,
                "sample": i,
            }
        )
        for i, data in enumerate(items[2:])
    ]


@hookimpl
def register_decoders(register: Any) -> None:
    register("tfevents", "image", decode_tfevents)
