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
    """Log a Keras model's structure, drawn by the GRAPHS tab as its conceptual graph.

    Writes the model's JSON config as Keras's TensorBoard callback does (a string tensor with
    the ``graph_keras_model`` plugin's metadata), without TensorFlow. torch's writer has no such
    method.

    Args:
        tag: The graph's name, a str (Keras writes ``"keras"``).
        model: A Keras model (its ``to_json()`` is written) or such a JSON config as a str.
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: ``model`` has no ``to_json`` and is not a str.
        ValueError: The text is not JSON, or not a JSON object.

    Example:
        >>> import json
        >>> from tallyboard import SummaryWriter
        >>> config = {"class_name": "Sequential", "config": {"name": "tiny", "layers": []}}
        >>> with SummaryWriter("runs/keras_model") as writer:
        ...     writer.add_keras_model("keras", json.dumps(config), 0)
    """
    writer.emit("keras_model", tag, convert(model), global_step, walltime)


def encode_tfevents(tag: str, step: int | None, wall_time: float, config: str) -> bytes:
    """Keras' layout: the JSON as a DT_STRING scalar tensor, plugin ``graph_keras_model``."""
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import DT_STRING, SummaryValue, TensorProto, metadata, shape

    tensor = TensorProto(dtype=DT_STRING, tensor_shape=shape([]), string_val=[config.encode()])
    value = SummaryValue(tag=tag, metadata=metadata(PLUGIN_NAME, PLUGIN_CONTENT), tensor=tensor)
    return summary_event(step, wall_time, [value])


def decode_tfevents(value: Any, step: int, wall_time: float) -> str | None:
    """A model config (plugin ``graph_keras_model``, a rank-0 string tensor, as Keras's
    TensorBoard callback and :func:`encode_tfevents` write it) as the kind's payload: the JSON
    text (its row: :func:`to_row`)."""
    if value.metadata.plugin_data.plugin_name != PLUGIN_NAME or not value.HasField("tensor"):
        return None
    strings = value.tensor.string_val
    if len(strings) != 1:
        return None
    try:
        return bytes(strings[0]).decode("utf-8")
    except UnicodeDecodeError:  # no JSON text: not a config this reads
        return None


def to_row(config: str) -> dict[str, Any]:
    """A model config as a row of ``tallyboard.read``'s table: ``config``, the JSON text."""
    return {"config": config}


def from_row(row: dict[str, Any]) -> tuple[str, str]:
    """A row a generic format (JSONL) holds, :func:`to_row`'s, as its tag and config, so
    ``tallyboard convert`` writes it again (a str takes no keywords to be rebuilt from)."""
    return row["tag"], row["config"]


def _inputs_of(layer: dict[str, Any]) -> list[str]:
    """The layers a functional model's layer takes its inputs from (``keras_history`` names)."""
    found: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            history = item.get("config", {}).get("keras_history") if "config" in item else None
            if isinstance(history, list) and history and isinstance(history[0], str):
                found.append(history[0])
                return
            for value in item.values():
                walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)

    walk(layer.get("inbound_nodes", []))
    return list(dict.fromkeys(found))


def layer_graph(config_json: str) -> bytes:
    """A serialized GraphDef of a model's layers (one node per layer, op = its class, inputs as
    the model connects them), which TensorBoard's GRAPHS tab opens on and draws."""
    from tallyboard_graph.proto import GraphDef

    config = json.loads(config_json)
    body = config.get("config", {})
    model = str(body.get("name") or config.get("class_name") or "model")
    layers = [layer for layer in body.get("layers", []) if isinstance(layer, dict)]
    graph = GraphDef()
    previous: str | None = None
    for layer in layers:
        name = str(layer.get("config", {}).get("name") or layer.get("name") or "layer")
        node = graph.node.add(name=f"{model}/{name}", op=str(layer.get("class_name", "Layer")))
        if "inbound_nodes" in layer:  # a functional model: its own wiring
            node.input.extend(f"{model}/{source}" for source in _inputs_of(layer))
        elif previous is not None:  # a Sequential model: a chain
            node.input.append(previous)
        previous = node.name
    return bytes(graph.SerializeToString())
