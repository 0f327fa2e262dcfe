"""A trial as an hparams session of its own run: started when it starts, ended with its status.

Trainer and sweep integrations call :func:`start_session` as soon as a trial's hyper-parameters
are known, so a run killed before its end still shows them in TensorBoard's HPARAMS tab, and
:func:`end_session` when it ends, with how it ended (``"success"``, ``"failure"``, ...), which
the tab shows as the session's status. Both write to the writer's own run.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from . import proto as p
from .methods import HParamsSummary, HParamValue, _hparam_value
from .tfevents import _set_value, _type

#: ``end_session`` statuses and TensorBoard's ``Status`` values for them.
STATUSES = {
    "success": 1,
    "failure": 2,
    "failed": 2,
    "running": 3,
    "unknown": 0,
}


def session_values(hparams: Mapping[str, Any]) -> dict[str, HParamValue]:
    """``hparams`` as the bool, float and str values a session holds (None values left out)."""
    out: dict[str, HParamValue] = {}
    for key, raw in hparams.items():
        if not isinstance(key, str):
            raise TypeError(f"hparam names must be str, got {type(key).__name__}: {key!r}")
        value = _hparam_value(key, raw)
        if value is not None:
            out[key] = value
    return out


def start_session(writer: Any, hparams: Mapping[str, Any], step: int | None = None) -> None:
    """Write the session start (the trial's hyper-parameters) to ``writer``'s own run."""
    data = p.HParamsPluginData(version=p.PLUGIN_DATA_VERSION)
    start = data.session_start_info
    for name, value in session_values(hparams).items():
        _set_value(start.hparams[name], value)
    start.start_time_secs = time.time()
    raw = HParamsSummary("raw", content=data.SerializeToString())
    writer.emit("hparams", p.SESSION_START_INFO_TAG, raw, step)


def end_session(
    writer: Any,
    status: str,
    *,
    hparams: Mapping[str, Any] | None = None,
    metrics: Iterable[str] = (),
    step: int | None = None,
) -> None:
    """Write the session end with ``status`` (a key of :data:`STATUSES`) to ``writer``'s run.

    With ``hparams``, an experiment summary is written first that declares them and
    ``metrics`` (scalar tags of this run), so the HPARAMS tab shows those columns.
    """
    if status not in STATUSES:
        raise ValueError(f"status must be one of {sorted(STATUSES)}, got {status!r}")
    if hparams is not None:
        experiment = p.HParamsPluginData(version=p.PLUGIN_DATA_VERSION)
        for name, value in session_values(hparams).items():
            experiment.experiment.hparam_infos.add(name=name, type=_type(value))
        for tag in metrics:
            experiment.experiment.metric_infos.add().name.tag = tag
        summary = HParamsSummary("raw", content=experiment.SerializeToString())
        writer.emit("hparams", p.EXPERIMENT_TAG, summary, step)
    data = p.HParamsPluginData(version=p.PLUGIN_DATA_VERSION)
    data.session_end_info.status = STATUSES[status]
    data.session_end_info.end_time_secs = time.time()
    raw = HParamsSummary("raw", content=data.SerializeToString())
    writer.emit("hparams", p.SESSION_END_INFO_TAG, raw, step)
