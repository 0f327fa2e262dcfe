"""The ``scalar`` kind: ``add_scalar``, ``add_scalars`` and ``add_value("scalar", ...)``."""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl
from tallyboard.values import to_float

from .methods import TensorScalar, add_scalar, add_scalars


@hookimpl
def register_kinds(register: Any) -> None:
    register(
        Kind(
            name="scalar",
            convert=lambda value: to_float(value, "value"),
            methods={"add_scalar": add_scalar, "add_scalars": add_scalars},
            description="one number per step",
            # what convert and the methods give; decoders give the float, which readers keep
            # as columns (tag, step, wall_time, value), never as rows: so no to_row
            payload=(float, TensorScalar),
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    from .tfevents import encode

    register("scalar", "tfevents", encode)


@hookimpl
def register_decoders(register: Any) -> None:
    from .tfevents import decode

    register("tfevents", "scalar", decode)
