"""torch's precision-recall methods on the writer."""

from __future__ import annotations

from typing import Any

from tallyboard.faces.hints import raise_if_swapped

from .compute import pr_curve_of, raw_pr_curve


def add_pr_curve(
    writer: Any,
    tag: str,
    labels: Any,
    predictions: Any,
    global_step: Any = None,
    num_thresholds: Any = 127,
    weights: Any = None,
    walltime: Any = None,
) -> None:
    """Log a precision-recall curve of ``predictions`` (in [0, 1]) against 0/1 ``labels``."""
    try:
        payload = pr_curve_of(labels, predictions, num_thresholds, weights)
    except TypeError:
        raise_if_swapped("add_pr_curve", tag, labels, "labels")
        raise
    writer.emit("pr_curve", tag, payload, global_step, walltime)


def add_pr_curve_raw(
    writer: Any,
    tag: str,
    true_positive_counts: Any,
    false_positive_counts: Any,
    true_negative_counts: Any,
    false_negative_counts: Any,
    precision: Any,
    recall: Any,
    global_step: Any = None,
    num_thresholds: Any = 127,
    weights: Any = None,
    walltime: Any = None,
) -> None:
    """Log a precision-recall curve already computed (``weights`` is unused, as in torch)."""
    arrays = (
        true_positive_counts,
        false_positive_counts,
        true_negative_counts,
        false_negative_counts,
        precision,
        recall,
    )
    writer.emit("pr_curve", tag, raw_pr_curve(arrays, num_thresholds), global_step, walltime)
