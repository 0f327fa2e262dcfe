"""PR curves as TensorBoard expects them: a DT_FLOAT [6, N] tensor, plugin ``pr_curves``."""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from tallyboard.records.protobuild import build
from tallyboard_tfevents.encoding import summary_event
from tallyboard_tfevents.proto import DT_FLOAT, SummaryValue, TensorProto, metadata, shape

from .compute import PrCurve

PrCurvePluginData: Any = build(
    "tallyboard.pr_curve",
    {"PrCurvePluginData": [("version", 1, "int32"), ("num_thresholds", 2, "uint32")]},
)["PrCurvePluginData"]


def encode(tag: str, step: int | None, wall_time: float, curve: PrCurve) -> bytes:
    """One ``Event`` whose value TensorBoard's pr_curves plugin reads."""
    content = PrCurvePluginData(version=0, num_thresholds=curve.num_thresholds).SerializeToString()
    data = np.ascontiguousarray(curve.data, dtype="<f4")
    tensor = TensorProto(
        dtype=DT_FLOAT, tensor_shape=shape(data.shape), tensor_content=data.tobytes()
    )
    value = SummaryValue(tag=tag, metadata=metadata("pr_curves", content), tensor=tensor)
    return summary_event(step, wall_time, [value])


#: Rows of the stored [6, T] tensor, in the order TensorBoard's pr_curves plugin keeps them.
ROWS = (
    "true_positives",
    "false_positives",
    "true_negatives",
    "false_negatives",
    "precision",
    "recall",
)


def decode(value: Any, step: int, wall_time: float) -> PrCurve | None:
    """A ``pr_curves`` value as the kind's payload, its six rows float32 as stored (the four
    counts ``true_positives`` ... ``false_negatives``, fractional with weights, then
    ``precision`` and ``recall``) and ``num_thresholds``; its row (:func:`to_row`) adds
    ``thresholds`` (``linspace(0, 1, T)``, as TensorBoard computes them)."""
    if value.metadata.plugin_data.plugin_name != "pr_curves" or not value.HasField("tensor"):
        return None
    from tallyboard_tfevents.tensors import to_ndarray

    data = to_ndarray(value.tensor)  # tensor_content (TF) or float_val (torch, tensorboardX)
    if data is None or data.ndim != 2 or data.shape[0] != len(ROWS) or data.dtype.kind not in "fiu":
        return None
    try:
        num_thresholds = PrCurvePluginData.FromString(value.metadata.plugin_data.content)
    except DecodeError:  # the curve itself is in the tensor; its column count says as much
        num_thresholds = None
    count = int(getattr(num_thresholds, "num_thresholds", 0)) or int(data.shape[1])
    return PrCurve(data.astype(np.float32), count)


def to_row(curve: PrCurve) -> dict[str, Any]:
    """A curve as a row of ``tallyboard.read``'s table: ``num_thresholds``, ``thresholds``
    (``linspace(0, 1, T)``) and each of :data:`ROWS` as a float32 array."""
    data = np.asarray(curve.data, np.float32)
    row: dict[str, Any] = {"num_thresholds": int(curve.num_thresholds)}
    row["thresholds"] = np.linspace(0.0, 1.0, data.shape[1])
    for i, name in enumerate(ROWS):
        row[name] = data[i].copy()
    return row


def from_row(row: dict[str, Any]) -> tuple[str, PrCurve]:
    """The :class:`PrCurve` of a decoded row (``ValueError`` when its arrays do not fit)."""
    try:
        data = np.stack([np.asarray(row[name], np.float32) for name in ROWS])
        num_thresholds = int(row["num_thresholds"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"pr_curve {row.get('tag')!r}: not a pr_curve row ({exc})") from None
    if data.ndim != 2:
        raise ValueError(f"pr_curve {row.get('tag')!r}: rows of shape {data.shape[1:]}, not [T]")
    return row["tag"], PrCurve(data, num_thresholds)
