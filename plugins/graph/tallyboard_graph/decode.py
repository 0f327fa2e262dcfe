"""Graphs read back from event files: the ``Event`` fields ``graph_def`` and ``tagged_run_metadata``,
and the graphs TF2's ``tf.summary.trace_export`` writes as summaries.

``graph_def`` and ``tagged_run_metadata`` records are not ``Summary.Value``s, so each decoder
names the ``Event`` field it reads in its ``event_field`` attribute; the tfevents reader hands it
the whole ``Event``. ``trace_export`` writes a ``Summary.Value`` instead (plugin
``graph_run_metadata_graph``, or ``graph_run_metadata`` with the profiler on): a string tensor
holding a serialized ``RunMetadata`` whose ``function_graphs`` hold the traced graphs. The graph
decoder reads those values too (``summary_values``) and gives the graph TensorBoard's GRAPHS tab
shows: the pre-optimization graph of the one function, or of several merged as TensorBoard merges
them (each one's names prefixed with ``graph_<n>/``, its functions with ``graph_<n>_``).
"""

from __future__ import annotations

from typing import Any

from . import GRAPH_TAG, META_GRAPH_TAG

#: plugin names of the summaries ``trace_export`` writes, a RunMetadata in a string tensor.
TRACE_PLUGINS = ("graph_run_metadata_graph", "graph_run_metadata")


def decode_graph(event: Any, step: int, wall_time: float) -> tuple[str, bytes] | bytes | None:
    """``Event.graph_def`` as the graph kind's payload (the serialized GraphDef) under the tag
    ``__run_graph__``. A ``trace_export`` summary value gives the graph of its RunMetadata,
    under the value's own tag. The row (``graph_def``, ``num_nodes``) is the kind's
    (``tallyboard_graph.graph_row``)."""
    if event.DESCRIPTOR.name != "Event":  # a Summary.Value
        return _trace_graph(event)
    if event.WhichOneof("what") != "graph_def":
        return None
    return GRAPH_TAG, bytes(event.graph_def)


def decode_run_metadata(event: Any, step: int, wall_time: float) -> tuple[str, bytes] | None:
    """``Event.tagged_run_metadata`` as its tag and the serialized RunMetadata."""
    if event.WhichOneof("what") != "tagged_run_metadata":
        return None
    tagged = event.tagged_run_metadata
    return tagged.tag, bytes(tagged.run_metadata)


def _trace_graph(value: Any) -> bytes | None:
    """The graph of a ``trace_export`` summary value (None for any other value)."""
    from google.protobuf.message import DecodeError

    from .merge import graph_of_run_metadata

    if value.metadata.plugin_data.plugin_name not in TRACE_PLUGINS or not value.HasField("tensor"):
        return None
    strings = value.tensor.string_val
    if len(strings) != 1:
        return None
    try:
        data, _ = graph_of_run_metadata(bytes(strings[0]))
    except (DecodeError, ValueError):  # no RunMetadata, or graphs TensorBoard cannot merge
        return None
    return data


def decode_meta_graph(event: Any, step: int, wall_time: float) -> tuple[str, bytes] | None:
    """``Event.meta_graph_def`` as the serialized MetaGraphDef under the tag
    ``__meta_graph__``."""
    if event.WhichOneof("what") != "meta_graph_def":
        return None
    return META_GRAPH_TAG, bytes(event.meta_graph_def)


decode_graph.event_field = "graph_def"  # type: ignore[attr-defined]
decode_graph.summary_values = True  # type: ignore[attr-defined]
decode_run_metadata.event_field = "tagged_run_metadata"  # type: ignore[attr-defined]
decode_meta_graph.event_field = "meta_graph_def"  # type: ignore[attr-defined]
