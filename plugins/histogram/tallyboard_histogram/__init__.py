"""The ``histogram`` kind: ``add_histogram``, ``add_histogram_raw`` and ``add_value("histogram", ...)``.

The payload is a format-neutral :class:`~tallyboard_histogram.compute.Histogram` (min, max, num,
sum, sum_squares, bucket limits and counts), computed in the caller so bad input raises there.
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl


def _convert(value: Any) -> Any:
    from .compute import Histogram, histogram_of

    if isinstance(value, Histogram):
        return value
    return histogram_of(value, "value")


def _from_row(row: dict[str, Any]) -> tuple[str, Any]:
    """A decoded histogram row (statistics, ``bucket_limit``, ``bucket``) as the same Histogram."""
    from .compute import from_row

    return row["tag"], from_row(row)


def _to_row(h: Any) -> dict[str, Any]:
    """A Histogram's fields as a row (``Histogram.to_row``)."""
    return h.to_row()  # type: ignore[no-any-return]


@hookimpl
def register_kinds(register: Any) -> None:
    from .methods import add_histogram, add_histogram_raw

    register(
        Kind(
            name="histogram",
            convert=_convert,
            methods={"add_histogram": add_histogram, "add_histogram_raw": add_histogram_raw},
            description="distribution of values per step (TensorFlow's default buckets)",
            from_row=_from_row,
            payload="tallyboard_histogram.compute:Histogram",  # imported on first use
            to_row=_to_row,
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    from .tfevents import encode

    register("histogram", "tfevents", encode)


@hookimpl
def register_decoders(register: Any) -> None:
    from .tfevents import decode

    register("tfevents", "histogram", decode)
