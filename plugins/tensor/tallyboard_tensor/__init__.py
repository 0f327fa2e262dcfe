"""The ``tensor`` kind: ``add_tensor`` and ``add_value("tensor", ...)``; the payload is a NumPy array.

Every numeric dtype is written so that TensorBoard's ``tensor_util.make_ndarray`` gives back the
same values, dtype and shape. bfloat16 has no NumPy type without TensorFlow, so it is upcast to
float32, which is exact (every bfloat16 is a float32).
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl


def _to_row(arr: Any) -> dict[str, Any]:
    """An array as a row: its ``dtype`` name, ``shape`` and the array itself (``value``)."""
    return {"dtype": arr.dtype.name, "shape": list(arr.shape), "value": arr}


def _from_row(row: dict[str, Any]) -> tuple[str, Any]:
    """The array of a row, of the row's ``dtype`` when the format gave nested lists (JSONL)."""
    import numpy as np

    from .methods import to_tensor

    value = row["value"]
    if not isinstance(value, np.ndarray):
        try:  # numbers of their dtype; str and bytes dtypes are named by size ('str96'): inferred
            name = row.get("dtype")
            dtype = np.dtype(name) if isinstance(name, str) else None
        except TypeError:
            dtype = None
        value = np.asarray(value, dtype=dtype)
    return row["tag"], to_tensor(value, "value")


@hookimpl
def register_kinds(register: Any) -> None:
    from .methods import add_tensor, to_tensor

    register(
        Kind(
            name="tensor",
            convert=lambda value: to_tensor(value, "value"),
            methods={"add_tensor": add_tensor},
            heavy=True,
            description="a whole array per step (no TensorBoard dashboard)",
            from_row=_from_row,
            payload="numpy:ndarray",  # imported on first use
            to_row=_to_row,
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    from .tfevents import encode

    register("tensor", "tfevents", encode)


@hookimpl
def register_decoders(register: Any) -> None:
    from .tfevents import decode

    register("tfevents", "tensor", decode)
