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
    from .convert import convert
    from .rows import from_row

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
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    def encode_tfevents(tag: str, step: int | None, wall_time: float, payload: Any) -> bytes:
        from .tfevents import encode

        return encode(tag, step, wall_time, payload)

    register("image", "tfevents", encode_tfevents)


def decode_tfevents(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """A ``Summary.Image`` as metadata plus its encoded bytes, decoded only on demand.

    ``data`` is the PNG (or other encoded) image: ``PIL.Image.open(io.BytesIO(row["data"]))``.
    """
    if not value.HasField("image"):
        return None
    img = value.image
    return {
        "width": int(img.width),
        "height": int(img.height),
        "colorspace": int(img.colorspace),
        "data": bytes(img.encoded_image_string),
    }


@hookimpl
def register_decoders(register: Any) -> None:
    register("tfevents", "image", decode_tfevents)
