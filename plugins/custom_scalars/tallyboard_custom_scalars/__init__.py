"""The ``custom_scalars`` kind: ``add_custom_scalars`` and its multiline/margin chart helpers.

The payload is a tuple of :class:`~tallyboard_custom_scalars.layout.Category`. TensorBoard reads
the layout only from the tag ``custom_scalars__config__`` at step 0, so every layout is written
there whatever tag ``add_value`` is given.
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl


@hookimpl
def register_kinds(register: Any) -> None:
    from .layout import (
        add_custom_scalars,
        add_custom_scalars_marginchart,
        add_custom_scalars_multilinechart,
        parse_layout,
    )

    register(
        Kind(
            name="custom_scalars",
            convert=lambda value: parse_layout(value, "value"),
            methods={
                "add_custom_scalars": add_custom_scalars,
                "add_custom_scalars_multilinechart": add_custom_scalars_multilinechart,
                "add_custom_scalars_marginchart": add_custom_scalars_marginchart,
            },
            description="dashboard layout grouping scalar tags into charts",
            from_row=lambda row: (row["tag"], row["layout"]),
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
