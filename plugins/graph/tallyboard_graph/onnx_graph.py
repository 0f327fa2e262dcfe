"""An ONNX model as a TensorBoard GraphDef, laid out as torch's ``add_onnx_graph`` does."""

from __future__ import annotations

import os
from typing import Any

from .proto import PRODUCER, AttrValue, GraphDef, NodeDef, TensorShapeProto, VersionDef


def _load(model: Any) -> Any:
    try:
        import onnx
    except ImportError:
        raise ImportError("add_onnx_graph needs the onnx package: pip install onnx") from None
    if isinstance(model, (str, os.PathLike)):
        return onnx.load(os.fspath(model))
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    if isinstance(model, onnx.ModelProto):
        return model
    raise TypeError(
        f"prototxt must be a path to an .onnx file, its bytes or an onnx.ModelProto, got {type(model).__name__}"
    )


def onnx_graph(model: Any) -> bytes:
    """The serialized GraphDef of an ONNX model: inputs/outputs as ``Variable`` nodes, then its ops."""
    graph = _load(model).graph
    out = GraphDef(versions=VersionDef(producer=PRODUCER))
    for value in [*graph.input, *graph.output]:
        tensor_type = value.type.tensor_type
        node = NodeDef(name=value.name, op="Variable")
        node.attr["dtype"].CopyFrom(AttrValue(type=tensor_type.elem_type))
        shape = TensorShapeProto(dim=[{"size": d.dim_value} for d in tensor_type.shape.dim])
        node.attr["shape"].CopyFrom(AttrValue(shape=shape))
        out.node.append(node)
    for op in graph.node:
        parameters = ", ".join(" = ".join(str(v) for _, v in a.ListFields()) for a in op.attribute)
        node = NodeDef(
            name=op.output[0] if op.output else op.name, op=op.op_type, input=list(op.input)
        )
        node.attr["parameters"].CopyFrom(AttrValue(s=parameters.encode("utf-8")))
        out.node.append(node)
    return out.SerializeToString()  # type: ignore[no-any-return]
