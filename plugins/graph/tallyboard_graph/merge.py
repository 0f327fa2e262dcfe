"""The graph of a ``RunMetadata`` as TensorBoard's GRAPHS tab shows it.

``tf.summary.trace_export`` stores the traced functions in ``RunMetadata.function_graphs``; the
graph shown is their pre-optimization graphs, merged when there are several: every node name and
input of graph n gets the prefix ``graph_<n>/``, every function of its library (and the function
a ``PartitionedCall`` node calls) ``graph_<n>_``, and graphs of different producers cannot be
merged (TensorBoard refuses them too). Only the fields renamed are declared here; every other
field of the messages is kept as it was read.
"""

from __future__ import annotations

from typing import Any

from tallyboard.records.protobuild import build

_m = build(
    "tallyboard.graph_merge",
    {
        "RunMetadata": [("function_graphs", 4, "FunctionGraphs", "repeated")],
        # the graph as written: one graph is returned byte for byte
        "FunctionGraphs": [("pre_optimization_graph", 2, "bytes")],
        "GraphDef": [
            ("node", 1, "NodeDef", "repeated"),
            ("library", 2, "FunctionDefLibrary"),
            ("versions", 4, "VersionDef"),
        ],
        "VersionDef": [("producer", 1, "int32")],
        "NodeDef": [
            ("name", 1, "string"),
            ("op", 2, "string"),
            ("input", 3, "string", "repeated"),
            ("attr", 5, "map<string, AttrValue>"),
        ],
        "AttrValue": [("func", 10, "NameAttrList")],
        "NameAttrList": [("name", 1, "string")],
        "FunctionDefLibrary": [
            ("function", 1, "FunctionDef", "repeated"),
            ("gradient", 2, "GradientDef", "repeated"),
        ],
        "FunctionDef": [("signature", 1, "OpDef")],
        "OpDef": [("name", 1, "string")],
        "GradientDef": [("function_name", 1, "string"), ("gradient_func", 2, "string")],
    },
)
RunMetadata: Any = _m["RunMetadata"]
GraphDef: Any = _m["GraphDef"]


def graph_of_run_metadata(data: bytes) -> tuple[bytes, int]:
    """The serialized GraphDef shown for a serialized ``RunMetadata``, and its node count.

    Raises ``DecodeError`` for bytes that are no RunMetadata and ``ValueError`` for graphs of
    different producers.
    """
    graphs = [bytes(f.pre_optimization_graph) for f in RunMetadata.FromString(data).function_graphs]
    if len(graphs) == 1:
        return graphs[0], len(GraphDef.FromString(graphs[0]).node)
    merged = GraphDef()
    parsed = [GraphDef.FromString(g) for g in graphs]
    if parsed and parsed[0].versions.producer:
        merged.versions.CopyFrom(parsed[0].versions)
    for index, graph in enumerate(parsed, 1):
        if graph.versions.producer != merged.versions.producer:
            raise ValueError("cannot merge GraphDefs of different producers")
        prefix = f"graph_{index}"
        for node in graph.node:
            new = merged.node.add()
            new.CopyFrom(node)
            new.name = f"{prefix}/{node.name}"
            new.input[:] = [f"{prefix}/{name}" for name in node.input]
            if new.op == "PartitionedCall" and "f" in new.attr:
                new.attr["f"].func.name = f"{prefix}_{new.attr['f'].func.name}"
        for func in graph.library.function:
            new_func = merged.library.function.add()
            new_func.CopyFrom(func)
            new_func.signature.name = f"{prefix}_{func.signature.name}"
        for gradient in graph.library.gradient:
            new_grad = merged.library.gradient.add()
            new_grad.CopyFrom(gradient)
            new_grad.function_name = f"{prefix}_{gradient.function_name}"
            new_grad.gradient_func = f"{prefix}_{gradient.gradient_func}"
    return merged.SerializeToString(), len(merged.node)
