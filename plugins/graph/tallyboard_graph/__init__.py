"""The ``graph`` kind: ``add_graph`` (torch models), ``add_onnx_graph`` and ``add_value("graph", ...)``.

A graph is two events, as torch writes them: the GraphDef (kind ``graph``) and the run metadata
tagged ``step1`` (kind ``run_metadata``). TensorBoard's GRAPHS tab shows them.
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl

#: The tag TensorBoard lists a run's graph under (the event itself carries no tag).
GRAPH_TAG = "__run_graph__"
RUN_METADATA_TAG = "step1"
#: The tag a run's MetaGraphDef (TF1's ``FileWriter(graph=...)`` writes one) is read under.
META_GRAPH_TAG = "__meta_graph__"


def _message_bytes(value: Any, what: str, arg: str = "value") -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    serialize = getattr(value, "SerializeToString", None)
    if callable(serialize) and getattr(getattr(value, "DESCRIPTOR", None), "name", "") == what:
        return bytes(serialize())
    raise TypeError(
        f"{arg} must be a {what} message or its serialized bytes, got {type(value).__name__}"
    )


def convert_graph(value: Any) -> bytes:
    """``add_value("graph", tag, value)``: a GraphDef message (any protobuf class) or its bytes."""
    return _message_bytes(value, "GraphDef")


def convert_run_metadata(value: Any) -> bytes:
    """``add_value("run_metadata", tag, value)``: a RunMetadata message or its bytes."""
    return _message_bytes(value, "RunMetadata")


def convert_meta_graph(value: Any) -> bytes:
    """``add_value("meta_graph", tag, value)``: a MetaGraphDef message or its bytes."""
    return _message_bytes(value, "MetaGraphDef")


def add_graph(
    writer: Any,
    model: Any,
    input_to_model: Any = None,
    verbose: bool = False,
    use_strict_trace: bool = True,
) -> None:
    """Trace ``model`` on ``input_to_model`` and log its graph for the GRAPHS tab (torch's signature)."""
    from .proto import cpu_run_metadata
    from .pytorch import model_graph

    graph = model_graph(model, input_to_model, verbose, use_strict_trace)
    writer.emit("graph", GRAPH_TAG, graph)
    writer.emit("run_metadata", RUN_METADATA_TAG, cpu_run_metadata())


def add_onnx_graph(writer: Any, prototxt: Any) -> None:
    """Log an ONNX model (a path, its bytes or an ``onnx.ModelProto``) for the GRAPHS tab; needs ``onnx``."""
    from .onnx_graph import onnx_graph

    writer.emit("graph", GRAPH_TAG, onnx_graph(prototxt))


def encode_graph(tag: str, step: int | None, wall_time: float, graph_def: bytes) -> bytes:
    """``Event.graph_def``."""
    from tallyboard_tfevents.encoding import graph_event

    return graph_event(step, wall_time, graph_def)


def encode_run_metadata(tag: str, step: int | None, wall_time: float, run_metadata: bytes) -> bytes:
    """``Event.tagged_run_metadata``."""
    from tallyboard_tfevents.encoding import tagged_run_metadata_event

    return tagged_run_metadata_event(step, wall_time, tag, run_metadata)


def encode_meta_graph(tag: str, step: int | None, wall_time: float, meta_graph_def: bytes) -> bytes:
    """``Event.meta_graph_def`` (field 9)."""
    from tallyboard.records.wire import field_bytes
    from tallyboard_tfevents.encoding import event_head

    return event_head(step, wall_time) + field_bytes(9, meta_graph_def)


@hookimpl
def register_kinds(register: Any) -> None:
    register(
        Kind(
            name="graph",
            convert=convert_graph,
            methods={"add_graph": add_graph, "add_onnx_graph": add_onnx_graph},
            description="model graph (GraphDef)",
            from_row=lambda row: (row["tag"], row["graph_def"]),
        )
    )
    register(
        Kind(
            name="run_metadata",
            convert=convert_run_metadata,
            description="tagged run metadata",
            from_row=lambda row: (row["tag"], row["run_metadata"]),
        )
    )
    register(
        Kind(
            name="meta_graph",
            convert=convert_meta_graph,
            description="TF1 MetaGraphDef (serialized), as read from event files",
            from_row=lambda row: (row["tag"], row["meta_graph_def"]),
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    register("graph", "tfevents", encode_graph)
    register("run_metadata", "tfevents", encode_run_metadata)
    register("meta_graph", "tfevents", encode_meta_graph)


@hookimpl
def register_decoders(register: Any) -> None:
    from .decode import decode_graph, decode_meta_graph, decode_run_metadata

    register("tfevents", "graph", decode_graph)
    register("tfevents", "run_metadata", decode_run_metadata)
    register("tfevents", "meta_graph", decode_meta_graph)
