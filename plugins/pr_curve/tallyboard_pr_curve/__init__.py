"""The ``pr_curve`` kind: ``add_pr_curve``, ``add_pr_curve_raw`` and ``add_value("pr_curve", ...)``.

The payload is a :class:`~tallyboard_pr_curve.compute.PrCurve`: a [6, T] array of true/false
positive/negative counts, precision and recall, plus ``num_thresholds``.
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl


def _from_row(row: dict[str, Any]) -> tuple[str, Any]:
    """``tallyboard convert``: a decoded pr_curve row back to the curve that was logged."""
    from .tfevents import from_row

    return from_row(row)


def _to_row(curve: Any) -> dict[str, Any]:
    """A curve's row: ``num_thresholds``, ``thresholds`` and its six rows by name."""
    from .tfevents import to_row

    return to_row(curve)


@hookimpl
def register_kinds(register: Any) -> None:
    from .compute import convert
    from .methods import add_pr_curve, add_pr_curve_raw

    register(
        Kind(
            name="pr_curve",
            convert=convert,
            methods={"add_pr_curve": add_pr_curve, "add_pr_curve_raw": add_pr_curve_raw},
            description="precision-recall curve per step",
            from_row=_from_row,
            payload="tallyboard_pr_curve.compute:PrCurve",  # imported on first use
            to_row=_to_row,
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    from .tfevents import encode

    register("pr_curve", "tfevents", encode)


@hookimpl
def register_decoders(register: Any) -> None:
    from .tfevents import decode

    register("tfevents", "pr_curve", decode)
