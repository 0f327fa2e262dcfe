"""A trial as an hparams session of its own run: started when it starts, ended with its status.

Trainer and sweep integrations call :func:`start_session` as soon as a trial's hyper-parameters
are known, so a run killed before its end still shows them in TensorBoard's HPARAMS tab, and
:func:`end_session` when it ends, with how it ended (``"success"``, ``"failure"``, ...), which
the tab shows as the session's status. Both write to the writer's own run.

No experiment summary is written: TensorBoard takes the first one it finds for every run in
the log dir, so one run's summary would blank the columns of every run with other
hyper-parameters. Without one, TensorBoard gathers the columns from all the sessions and the
metrics from the scalars of their runs, so runs of different trainers sit side by side.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from . import proto as p
from .methods import HParamsSummary, HParamValue, _hparam_value
from .tfevents import _set_value

#: ``end_session`` statuses and TensorBoard's ``Status`` values for them.
STATUSES = {
    "success": 1,
    "failure": 2,
    "failed": 2,
    "running": 3,
    "unknown": 0,
}


def flat_hparams(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level (``{"opt": {"lr": 1}}`` -> ``{"opt/lr": 1}``), each value a
    bool, number or str: a NumPy or 0-d tensor scalar as its number, anything else (None, a
    list, an object) as its ``str``, so no hyper-parameter is dropped."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flat_hparams(value, f"{name}/"))
            continue
        if not isinstance(value, (bool, int, float, str)):
            item = getattr(value, "item", None)
            if callable(item) and getattr(value, "ndim", None) == 0:
                value = item()
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
            value = str(value)  # beyond float64's exact integers: kept exactly, as text
        elif not isinstance(value, (bool, int, float, str)):
            value = str(value)
        out[name] = value
    return out


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


def end_session(writer: Any, status: str, step: int | None = None) -> None:
    """Write the session end with ``status`` (a key of :data:`STATUSES`) to ``writer``'s run."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {sorted(STATUSES)}, got {status!r}")
    data = p.HParamsPluginData(version=p.PLUGIN_DATA_VERSION)
    data.session_end_info.status = STATUSES[status]
    data.session_end_info.end_time_secs = time.time()
    raw = HParamsSummary("raw", content=data.SerializeToString())
    writer.emit("hparams", p.SESSION_END_INFO_TAG, raw, step)
