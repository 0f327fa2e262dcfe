"""The ``custom_scalars`` kind: ``add_custom_scalars`` and its multiline/margin chart helpers.

The payload is a :class:`~tallyboard_custom_scalars.message.ChartLayout`, the serialized
``Layout`` message (not the tuple of categories a layout is validated into: a reader could not
tell a tuple from ``(tag, payload)``); its row (``layout``, ``data``) is the kind's. TensorBoard reads
the layout only from the tag ``custom_scalars__config__`` at step 0, so every layout is written
there whatever tag ``add_value`` is given.
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl


def _layout_row(payload: Any) -> dict[str, Any]:
    from .message import layout_row

    return layout_row(payload)


def _from_row(row: dict[str, Any]) -> tuple[str, Any]:
    """A row read back (JSONL's): its ``data`` as the payload, as written; a row holding only
    ``layout`` (the mapping ``add_custom_scalars`` takes) is logged from it."""
    if isinstance(row.get("data"), (bytes, bytearray)):
        from .message import ChartLayout

        return row["tag"], ChartLayout(bytes(row["data"]))
    return row["tag"], row["layout"]


@hookimpl
def register_kinds(register: Any) -> None:
    from .layout import (
        add_custom_scalars,
        add_custom_scalars_marginchart,
        add_custom_scalars_multilinechart,
        convert,
    )

    register(
        Kind(
            name="custom_scalars",
            convert=convert,
            methods={
                "add_custom_scalars": add_custom_scalars,
                "add_custom_scalars_multilinechart": add_custom_scalars_multilinechart,
                "add_custom_scalars_marginchart": add_custom_scalars_marginchart,
            },
            description="dashboard layout grouping scalar tags into charts",
            payload="tallyboard_custom_scalars.message:ChartLayout",
            to_row=_layout_row,
            from_row=_from_row,
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    from .tfevents import encode

    register("custom_scalars", "tfevents", encode)


@hookimpl
def register_decoders(register: Any) -> None:
    from .tfevents import decode

    register("tfevents", "custom_scalars", decode)
