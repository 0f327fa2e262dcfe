"""PR curves as TensorBoard expects them: a DT_FLOAT [6, N] tensor, plugin ``pr_curves``."""

from __future__ import annotations

from typing import Any

import numpy as np
from plugboard.protobuild import build
from plugboard_tfevents.encoding import summary_event
from plugboard_tfevents.proto import DT_FLOAT, SummaryValue, TensorProto, metadata, shape

from .compute import PrCurve

PrCurvePluginData: Any = build(
    "plugboard.pr_curve",
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
