"""The ``keras_model`` kind: a Keras model's JSON config, TensorBoard's conceptual graph."""

from __future__ import annotations

import json
from typing import Any

from tallyboard.values import check_text

#: The TensorBoard graph plugin's name for Keras model configs, and its version content.
PLUGIN_NAME = "graph_keras_model"
PLUGIN_CONTENT = b"1"


def convert(value: Any) -> str:
    """A model's JSON config: from a Keras model (``to_json()``) or a JSON object string."""
    to_json = getattr(value, "to_json", None)
    text = to_json() if callable(to_json) and not isinstance(value, str) else value
    if not isinstance(text, str):
        raise TypeError(
            f"a keras_model value must be a Keras model or its JSON config, got {type(value).__name__}"
        )
    check_text(text, "model")
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"a keras_model value is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ValueError("a keras_model value must be a JSON object (a model config)")
    return text


def add_keras_model(
    writer: Any, tag: str, model: Any, global_step: Any = None, walltime: Any = None
) -> None:
    """Log ``model``'s config under ``tag``; TensorBoard's GRAPHS tab draws it (conceptual graph)."""
    writer.emit("keras_model", tag, convert(model), global_step, walltime)


def encode_tfevents(tag: str, step: int | None, wall_time: float, config: str) -> bytes:
    """Keras' layout: the JSON as a DT_STRING scalar tensor, plugin ``graph_keras_model``."""
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import DT_STRING, SummaryValue, TensorProto, metadata, shape

    tensor = TensorProto(dtype=DT_STRING, tensor_shape=shape([]), string_val=[config.encode()])
    value = SummaryValue(tag=tag, metadata=metadata(PLUGIN_NAME, PLUGIN_CONTENT), tensor=tensor)
    return summary_event(step, wall_time, [value])


def decode_tfevents(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """A model config (plugin ``graph_keras_model``, a rank-0 string tensor, as Keras's
    TensorBoard callback and :func:`encode_tfevents` write it) as ``config``: the JSON text."""
    if value.metadata.plugin_data.plugin_name != PLUGIN_NAME or not value.HasField("tensor"):
        return None
    strings = value.tensor.string_val
    if len(strings) != 1:
        return None
    try:
        return {"config": bytes(strings[0]).decode("utf-8")}
    except UnicodeDecodeError:  # no JSON text: not a config this reads
        return None


def from_row(row: dict[str, Any]) -> tuple[str, str]:
    """A decoded row as its tag and config, so ``tallyboard convert`` writes it again."""
    return row["tag"], row["config"]
