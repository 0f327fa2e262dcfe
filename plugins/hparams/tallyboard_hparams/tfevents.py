"""hparams summaries as TensorBoard ``Event`` bytes (metadata-only values, as torch writes)."""

from __future__ import annotations

from typing import Any

from tallyboard_tfevents.encoding import summary_event
from tallyboard_tfevents.proto import SummaryValue, metadata

from . import proto as p
from .methods import HParamsSummary


def _set_value(target: Any, value: Any) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, str):
        target.string_value = value
    else:
        target.number_value = value


def _type(value: Any) -> int:
    if isinstance(value, bool):
        return p.DATA_TYPE_BOOL
    return p.DATA_TYPE_STRING if isinstance(value, str) else p.DATA_TYPE_FLOAT64


def plugin_data(summary: HParamsSummary) -> bytes:
    """The serialized ``HParamsPluginData`` of one summary."""
    if summary.part == "raw":
        return summary.content
    data = p.HParamsPluginData(version=p.PLUGIN_DATA_VERSION)
    if summary.part == "experiment":
        exp = data.experiment
        for name, value in summary.hparams.items():
            info = exp.hparam_infos.add(name=name, type=_type(value))
            for item in summary.domains.get(name, ()):
                _set_value(info.domain_discrete.values.add(), item)
        for tag in summary.metrics:
            exp.metric_infos.add().name.tag = tag
    elif summary.part == "session_start_info":
        for name, value in summary.hparams.items():
            _set_value(data.session_start_info.hparams[name], value)
    elif summary.part == "session_end_info":
        data.session_end_info.status = p.STATUS_SUCCESS
    else:
        raise ValueError(f"unknown hparams summary part {summary.part!r}")
    return data.SerializeToString()  # type: ignore[no-any-return]


def encode(tag: str, step: int | None, wall_time: float, summary: HParamsSummary) -> bytes:
    """One Event with a metadata-only ``Summary.Value`` (plugin ``hparams``)."""
    value = SummaryValue(tag=tag, metadata=metadata(p.PLUGIN_NAME, plugin_data(summary)))
    return summary_event(step, wall_time, [value])


def _parts(content: bytes) -> tuple[str, dict[str, Any]] | None:
    """The part (``experiment``, ``session_start_info`` or ``session_end_info``) of a
    serialized ``HParamsPluginData`` and a session start's ``{name: value}`` (empty for the
    other parts); None when the bytes hold no such part."""
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError

    try:
        data = p.HParamsPluginData.FromString(content)
    except DecodeError:
        return None
    part = data.WhichOneof("data")
    if part is None:
        return None
    values = data.session_start_info.hparams
    return part, {name: MessageToDict(values[name]) for name in sorted(values)}


def row(summary: HParamsSummary) -> dict[str, Any]:
    """The kind's row of a summary: ``part``, ``hparams`` (a session start's ``{name: value}``;
    empty for the other parts) and ``content`` (the serialized ``HParamsPluginData``: the
    summary's own when it carries one, as read, else what this encoder writes).

    Raises:
        ValueError: the summary holds no hparams part.
    """
    content = summary.content or plugin_data(summary)
    parsed = _parts(content)
    if parsed is None:
        raise ValueError("the hparams summary holds no experiment, session start or end")
    return {"part": parsed[0], "hparams": parsed[1], "content": content}


def decode(value: Any, step: int, wall_time: float) -> HParamsSummary | None:
    """An hparams summary (torch, tensorboardX, TF2's ``hp.hparams``, tallyboard) as the kind's
    payload: a session start whose values are bools, numbers and strings as such a summary
    (its ``hparams``, what the MLflow sink logs), any other part as ``raw``; each carries the
    serialized ``HParamsPluginData`` as ``content``, so the experiment's domains and metrics and
    the session's end are kept. Its row is the kind's (:func:`row`). The value itself may hold
    no tensor, or an empty one (TF2): all is in the metadata."""
    meta = value.metadata.plugin_data
    if meta.plugin_name != p.PLUGIN_NAME:
        return None
    content = bytes(meta.content)
    parsed = _parts(content)
    if parsed is None:  # not the hparams plugin's data: not a summary this reads
        return None
    part, hparams = parsed
    if part == "session_start_info" and all(
        isinstance(v, (bool, float, int, str)) for v in hparams.values()
    ):
        plain = {k: v if isinstance(v, (bool, str)) else float(v) for k, v in hparams.items()}
        return HParamsSummary(part, plain, content=content)
    return HParamsSummary("raw", content=content)
