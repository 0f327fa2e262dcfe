"""The ``graph`` kind: ``add_graph`` (torch models), ``add_onnx_graph`` and ``add_value("graph", ...)``.

A graph is two events, as torch writes them: the GraphDef (kind ``graph``) and the run metadata
tagged ``step1`` (kind ``run_metadata``). TensorBoard's GRAPHS tab shows them.

Each kind's payload is the serialized message (``bytes``): what ``convert`` returns, encoders
receive and decoders return; its row (``to_row``: ``graph_row``, ``run_metadata_row``,
``meta_graph_row``) is declared here once, so a format that writes any kind's row (JSONL) holds
these kinds with no encoder or decoder of its own.
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


def graph_row(graph_def: bytes) -> dict[str, Any]:
    """The graph kind's row: ``graph_def`` (the serialized GraphDef, as TensorBoard's
    ``EventAccumulator.Graph()`` parses it) and ``num_nodes`` (None when the bytes are no
    GraphDef: they are kept as written, only the count is unknown)."""
    from google.protobuf.message import DecodeError

    from .proto import GraphDef

    try:
        num_nodes: int | None = len(GraphDef.FromString(graph_def).node)
    except DecodeError:
        num_nodes = None
    return {"graph_def": graph_def, "num_nodes": num_nodes}


def run_metadata_row(run_metadata: bytes) -> dict[str, Any]:
    """The run_metadata kind's row: ``run_metadata`` (the serialized RunMetadata)."""
    return {"run_metadata": run_metadata}


def meta_graph_row(meta_graph_def: bytes) -> dict[str, Any]:
    """The meta_graph kind's row: ``meta_graph_def`` (the serialized MetaGraphDef, as
    TensorBoard's ``EventAccumulator.MetaGraph()`` parses it)."""
    return {"meta_graph_def": meta_graph_def}


def add_graph(
    writer: Any,
    model: Any,
    input_to_model: Any = None,
    verbose: bool = False,
    use_strict_trace: bool = True,
) -> None:
    """Log a torch model's graph for the GRAPHS tab, by tracing it on ``input_to_model``.

    As torch does, the model is put in eval mode for the trace (and back afterwards), traced
    with ``torch.jit.trace`` and inlined; the GraphDef written is torch's, node for node: inputs
    ``input/<name>``, operations named by module path (``Net/Linear[fc]/...``) with their output
    shapes, outputs ``output/output.<k>``, plus run metadata tagged ``step1`` as torch writes.
    The trace runs the model once, without torch's check that re-runs it twice more; torch
    2.13's deprecation warning for ``torch.jit.trace`` is silenced, warnings about your model
    are not. Needs torch (imported only here).

    Args:
        model: A ``torch.nn.Module``.
        input_to_model: What the model is called with: a tensor, or a tuple of tensors for
            several arguments. Default ``None`` (no argument).
        verbose: Print the traced graph. Default ``False``.
        use_strict_trace: Passed to ``torch.jit.trace(strict=...)``: ``False`` allows mutable
            outputs such as dicts and lists. Default ``True``.

    Raises:
        TypeError: ``model`` is not a ``torch.nn.Module``.
        RuntimeError: The trace failed (wrong input shapes, a dict output with strict tracing):
            a ``TraceError``, also a ValueError, naming the cause; nothing is written.

    Example:
        >>> import torch
        >>> from tallyboard import SummaryWriter
        >>> model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU())
        >>> with SummaryWriter("runs/graph") as writer:
        ...     writer.add_graph(model, torch.zeros(2, 3))
    """
    from .proto import cpu_run_metadata
    from .pytorch import model_graph

    graph = model_graph(model, input_to_model, verbose, use_strict_trace)
    writer.emit("graph", GRAPH_TAG, graph)
    writer.emit("run_metadata", RUN_METADATA_TAG, cpu_run_metadata())


def add_onnx_graph(writer: Any, prototxt: Any) -> None:
    """Log an ONNX model's graph for the GRAPHS tab; needs ``pip install onnx``.

    Laid out as torch's ``add_onnx_graph`` lays it out: the graph's inputs and outputs become
    ``Variable`` nodes with their element type and shape, each operation a node named after its
    first output, its attributes in a ``parameters`` string. Unlike torch, nothing is printed.

    Args:
        prototxt: The model: a path to an ``.onnx`` file (str or ``os.PathLike``), its bytes, or
            an ``onnx.ModelProto``.

    Raises:
        ImportError: onnx is not installed (the message gives the install line).
        TypeError: ``prototxt`` is none of the above.

    Example:
        >>> import onnx
        >>> from onnx import TensorProto, helper
        >>> from tallyboard import SummaryWriter
        >>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
        >>> y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
        >>> relu = helper.make_node("Relu", ["x"], ["y"])
        >>> graph = helper.make_graph([relu], "tiny", [x], [y])
        >>> with SummaryWriter("runs/onnx") as writer:
        ...     writer.add_onnx_graph(helper.make_model(graph))
    """
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
            payload=bytes,
            to_row=graph_row,
            from_row=lambda row: (row["tag"], row["graph_def"]),
        )
    )
    register(
        Kind(
            name="run_metadata",
            convert=convert_run_metadata,
            description="tagged run metadata",
            payload=bytes,
            to_row=run_metadata_row,
            from_row=lambda row: (row["tag"], row["run_metadata"]),
        )
    )
    register(
        Kind(
            name="meta_graph",
            convert=convert_meta_graph,
            description="TF1 MetaGraphDef (serialized), as read from event files",
            payload=bytes,
            to_row=meta_graph_row,
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
