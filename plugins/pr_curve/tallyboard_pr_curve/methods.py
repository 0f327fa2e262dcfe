"""torch's precision-recall methods on the writer."""

from __future__ import annotations

from typing import Any

from tallyboard.values import raise_if_swapped

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
    """Log a precision-recall curve of binary predictions, shown in the PR CURVES tab.

    Computed as torch computes it: ``T = min(num_thresholds, 127)`` thresholds evenly spaced in
    [0, 1]; each prediction falls in bucket ``floor(p * (T - 1))`` (predictions outside [0, 1]
    are dropped, silently, as in torch); true and false positives are counted at or above each
    threshold, weighted by ``weights``; precision and recall are ``tp / (tp + fp)`` and ``tp /
    (tp + fn)`` (0 where nothing is counted). Written as a ``[6, T]`` float tensor (rows tp, fp,
    tn, fn, precision, recall).

    Args:
        tag: The curve's name, a str.
        labels: The ground truth, real numbers of any shape (flattened): 1 positive, 0 negative.
        predictions: The probability of "positive" for each label, same number of elements.
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        num_thresholds: How many thresholds, an int >= 2; above 127 it is clamped to 127, as
            torch does (TensorBoard reads no more). Default ``127``.
        weights: One number for all predictions, or one per prediction. Default ``None`` (all
            1).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: ``labels``, ``predictions`` or ``weights`` is not real numbers (a str label
            where ``tag`` is not a str: the message says they look swapped); ``num_thresholds``
            is not an int.
        ValueError: ``labels`` and ``predictions`` differ in size; ``weights`` has another size;
            ``num_thresholds`` < 2.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> rng = np.random.default_rng(0)
        >>> labels = rng.integers(0, 2, 100)
        >>> predictions = np.clip(labels * 0.6 + rng.random(100) * 0.5, 0, 1)
        >>> with SummaryWriter("runs/pr_curve") as writer:
        ...     writer.add_pr_curve("classifier", labels, predictions, 0)
    """
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
    """Log a precision-recall curve you computed: six arrays, one value per threshold.

    The arrays are stacked into the ``[6, N]`` tensor the PR CURVES tab reads (rows tp, fp, tn,
    fn, precision, recall). As in torch, ``num_thresholds`` is written into the metadata
    (clamped to 127) without being checked against N, and ``weights`` is not used.

    Args:
        tag: The curve's name, a str.
        true_positive_counts: 1-D real numbers, one per threshold.
        false_positive_counts: 1-D real numbers, same length.
        true_negative_counts: 1-D real numbers, same length.
        false_negative_counts: 1-D real numbers, same length.
        precision: 1-D real numbers, same length.
        recall: 1-D real numbers, same length.
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        num_thresholds: The thresholds count for the metadata, an int >= 1, clamped to 127.
            Default ``127``.
        weights: Unused (torch's signature). Default ``None``.
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: An array is not real numbers; ``num_thresholds`` is not an int.
        ValueError: An array is not 1-D, or the six lengths differ.

    Example:
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/pr_curve_raw") as writer:
        ...     writer.add_pr_curve_raw(
        ...         "ready_made", [4, 3, 0], [4, 1, 0], [0, 3, 4], [0, 1, 4],
        ...         [0.5, 0.75, 0.0], [1.0, 0.75, 0.0], global_step=0, num_thresholds=3,
        ...     )
    """
    arrays = (
        true_positive_counts,
        false_positive_counts,
        true_negative_counts,
        false_negative_counts,
        precision,
        recall,
    )
    writer.emit("pr_curve", tag, raw_pr_curve(arrays, num_thresholds), global_step, walltime)
