"""Precision-recall curves exactly as torch computes them, with the input validated first."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from tallyboard.values import check_int, to_array

MAX_THRESHOLDS = 127  # torch clamps silently: larger values break TensorBoard's protobuf
_MINIMUM_COUNT = 1e-7


@dataclass(frozen=True, eq=False)
class PrCurve:
    """Rows tp, fp, tn, fn, precision, recall of shape [6, N], and the thresholds count."""

    data: np.ndarray
    num_thresholds: int

    @property
    def nbytes(self) -> int:
        """Payload size (for queue accounting)."""
        return int(self.data.nbytes)


def _real(value: Any, arg: str) -> np.ndarray:
    arr = to_array(value, arg)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{arg} must hold real numbers, got dtype {arr.dtype}")
    return arr.reshape(-1).astype(np.float64)


def check_thresholds(num_thresholds: Any, minimum: int = 2) -> int:
    """``num_thresholds`` as an int, clamped to 127 as torch does."""
    return min(check_int(num_thresholds, "num_thresholds", minimum=minimum), MAX_THRESHOLDS)


def pr_curve_of(
    labels: Any, predictions: Any, num_thresholds: Any = 127, weights: Any = None
) -> PrCurve:
    """torch's ``compute_curve``: predictions bucketed by floor(p·(T−1)), outside [0, 1] dropped."""
    t = check_thresholds(num_thresholds)
    labels_f = _real(labels, "labels")
    preds = _real(predictions, "predictions")
    if labels_f.size != preds.size:
        raise ValueError(
            f"labels and predictions must have the same size, got {labels_f.size} and {preds.size}"
        )
    if weights is None:
        w: Any = 1.0
    else:
        w = _real(weights, "weights")
        if w.size == 1:
            w = w[0]
        elif w.size != preds.size:
            raise ValueError(
                f"weights must be one number or one per prediction, got {w.size} for {preds.size}"
            )
    with np.errstate(invalid="ignore", over="ignore"):
        index = np.floor(preds * (t - 1))
        keep = (index >= 0) & (index <= t - 1)  # NaN and out-of-range predictions fall in no bucket
    bucket = index[keep].astype(np.int32)
    label_kept = labels_f[keep]
    w_kept = w[keep] if isinstance(w, np.ndarray) else w
    tp_buckets, _ = np.histogram(bucket, bins=t, range=(0, t - 1), weights=label_kept * w_kept)
    fp_buckets, _ = np.histogram(
        bucket, bins=t, range=(0, t - 1), weights=(1.0 - label_kept) * w_kept
    )
    tp = np.cumsum(tp_buckets[::-1])[::-1]
    fp = np.cumsum(fp_buckets[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(_MINIMUM_COUNT, tp + fp)
    recall = tp / np.maximum(_MINIMUM_COUNT, tp + fn)
    return PrCurve(np.stack((tp, fp, tn, fn, precision, recall)), t)


RAW_ARGS = (
    "true_positive_counts",
    "false_positive_counts",
    "true_negative_counts",
    "false_negative_counts",
    "precision",
    "recall",
)


def raw_pr_curve(arrays: tuple[Any, ...], num_thresholds: Any = 127) -> PrCurve:
    """Six 1-D arrays of one length stacked to [6, N]; ``num_thresholds`` is not checked against N."""
    rows = []
    for name, value in zip(RAW_ARGS, arrays):
        arr = to_array(value, name)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
        rows.append(arr.astype(np.float64))
    lengths = {name: len(r) for name, r in zip(RAW_ARGS, rows)}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"the six pr-curve arrays must have one length, got {lengths}")
    return PrCurve(np.stack(rows), check_thresholds(num_thresholds, minimum=1))


def convert(value: Any) -> PrCurve:
    """``add_value('pr_curve', tag, value)``: a PrCurve, ``(labels, predictions)`` or a dict of
    ``labels``, ``predictions`` and optionally ``num_thresholds`` and ``weights``."""
    if isinstance(value, PrCurve):
        return value
    if isinstance(value, Mapping):
        unknown = set(value) - {"labels", "predictions", "num_thresholds", "weights"}
        if unknown or not {"labels", "predictions"} <= set(value):
            raise ValueError(
                f"value must have keys labels, predictions[, num_thresholds, weights]; got {sorted(value)}"
            )
        return pr_curve_of(**value)
    if isinstance(value, tuple) and len(value) == 2:
        return pr_curve_of(value[0], value[1])
    raise TypeError(
        f"value must be a PrCurve, (labels, predictions) or a dict, got {type(value).__name__}"
    )
