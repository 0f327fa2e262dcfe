"""Graphs read back from event files: the ``Event`` fields ``graph_def`` and ``tagged_run_metadata``.

These records are not ``Summary.Value``s, so each decoder names the ``Event`` field it reads in
its ``event_field`` attribute; the tfevents reader hands it the whole ``Event``.
"""

from __future__ import annotations

from typing import Any

from . import GRAPH_TAG


def decode_graph(event: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """``Event.graph_def`` as ``graph_def`` (the serialized GraphDef, as TensorBoard's
    ``EventAccumulator.Graph()`` parses it) and ``num_nodes`` (None when the bytes are no
    GraphDef); the tag is ``__run_graph__``."""
    if event.WhichOneof("what") != "graph_def":
        return None
    from google.protobuf.message import DecodeError

    from .proto import GraphDef

    data = bytes(event.graph_def)
    try:
        num_nodes: int | None = len(GraphDef.FromString(data).node)
    except DecodeError:  # the bytes are kept as written; only the count is unknown
        num_nodes = None
    return {"tag": GRAPH_TAG, "graph_def": data, "num_nodes": num_nodes}


def decode_run_metadata(event: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """``Event.tagged_run_metadata`` as its ``tag`` and ``run_metadata`` (serialized RunMetadata)."""
    if event.WhichOneof("what") != "tagged_run_metadata":
        return None
    tagged = event.tagged_run_metadata
    return {"tag": tagged.tag, "run_metadata": bytes(tagged.run_metadata)}


decode_graph.event_field = "graph_def"  # type: ignore[attr-defined]
decode_run_metadata.event_field = "tagged_run_metadata"  # type: ignore[attr-defined]
