"""MindSpore's graphs as TensorBoard ``GraphDef`` s, for the GRAPHS dashboard.

Two graphs live in MindSpore's files: the network (an anf_ir ``GraphProto``, an
``Event.graph_def`` of the summary file) and the dataset pipeline (a lineage ``DatasetGraph``).
:func:`anf_graph_def` turns the first into a ``GraphDef`` as MindInsight laid it out: each
operation named by its ``full_name`` (``Default/network-WithLossCell/_backbone-Net/conv-Conv2d/
Conv2D-op0``), so the scopes of the network's Cells fold as groups; its op type; its inputs (a
control edge as ``^name``); its attributes as text; its output shapes in ``_output_shapes`` and
its output type in ``dtype``. Parameters and constants become ``Parameter`` and ``Const`` nodes
in the scope of the first operation that reads them (each a parameter's shape, a constant's
value); an input the graph does not define (another graph's node) becomes an ``Input`` node
there. :func:`dataset_graph_def` gives one node per pipeline operation (``GeneratorDataset``,
``Batch``, ...), each reading its children, with its parameters, operations and sampler as
attributes. Field numbers are those of MindSpore 2.10's ``anf_ir.proto`` (``lineage.proto``'s
are the lineage kinds', :mod:`tallyboard_lineage.messages`) and of TensorBoard's
``graph.proto``, ``node_def.proto``, ``attr_value.proto`` and ``config.proto``.
"""

from __future__ import annotations

import functools
from typing import Any

from tallyboard.records.protobuild import build

#: anf_ir ``DataType`` names (``DT_FLOAT32`` is 11), the enum's order.
ANF_TYPES = (  # noqa: SIM905 (five lines of names read better than 50 quoted items)
    "undefined bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 "
    "string tensor graph bools ints8 ints16 ints32 ints64 uints8 uints16 uints32 uints64 "
    "floats16 floats32 floats64 strings tensors graphs tuple list dict none sym_inst base_int "
    "base_uint base_float type any refkey ref complex64 complex128 base_complex bfloat16 "
    "bfloats16 int4 slice"
).split()
DT_TENSOR, DT_TUPLE, DT_LIST = 14, 31, 32
CONTROL_EDGE = 1
#: ``versions.producer`` of the GraphDefs written (TensorBoard reads any).
PRODUCER = 22


@functools.lru_cache(maxsize=1)
def messages() -> dict[str, Any]:
    """The anf_ir messages read and TensorBoard's graph messages written (a ``DatasetGraph`` is
    read with the lineage kinds' own class)."""
    anf = build(
        "tallyboard.mindspore_graph",
        {
            "TensorProto": [("dims", 1, "int64", "repeated"), ("data_type", 2, "int32")],
            "ValueProto": [
                ("dtype", 1, "int32"), ("bool_val", 2, "bool"), ("int_val", 3, "int64"),
                ("uint_val", 4, "uint64"), ("float_val", 5, "float"), ("double_val", 6, "double"),
                ("str_val", 7, "string"), ("tensor_val", 8, "TensorProto"),
                ("values", 18, "ValueProto", "repeated"), ("dict_val", 19, "NamedValueProto", "repeated"),
                ("type_val", 20, "TypeProto"),
            ],
            "NamedValueProto": [("key", 1, "string"), ("value", 2, "ValueProto")],
            "AttributeProto": [("name", 1, "string"), ("value", 2, "ValueProto")],
            "Dim": [("size", 1, "int64"), ("name", 2, "string")],
            "ShapeProto": [("dim", 1, "Dim", "repeated")],
            "TensorType": [("elem_type", 1, "int32"), ("shape", 2, "ShapeProto")],
            "SequenceType": [("elem_types", 1, "TypeProto", "repeated")],
            "TypeProto": [
                ("data_type", 1, "int32"), ("tensor_type", 2, "TensorType"),
                ("sequence_type", 3, "SequenceType"),
            ],
            "ParameterProto": [("name", 1, "string"), ("type", 2, "TypeProto")],
            "InputProto": [("name", 1, "string"), ("type", 2, "int32")],
            "NodeProto": [
                ("input", 1, "InputProto", "repeated"), ("name", 2, "string"), ("op_type", 3, "string"),
                ("scope", 4, "string"), ("attribute", 5, "AttributeProto", "repeated"),
                ("output_type", 6, "TypeProto"), ("full_name", 8, "string"),
                ("instance_name", 10, "string"),
            ],
            "GraphProto": [
                ("node", 1, "NodeProto", "repeated"), ("name", 2, "string"),
                ("parameters", 3, "ParameterProto", "repeated"),
                ("const_vals", 5, "NamedValueProto", "repeated"),
            ],
        },
        syntax="proto2",
    )  # fmt: skip
    tb = build(
        "tallyboard.mindspore_graph.tb",
        {
            "Dim": [("size", 1, "int64"), ("name", 2, "string")],
            "Shape": [("dim", 2, "Dim", "repeated"), ("unknown_rank", 3, "bool")],
            "ListValue": [("s", 2, "bytes", "repeated"), ("shape", 7, "Shape", "repeated")],
            "AttrValue": [
                ("list", 1, "ListValue", "oneof:value"), ("s", 2, "bytes", "oneof:value"),
                ("shape", 7, "Shape", "oneof:value"),
            ],
            "NodeDef": [
                ("name", 1, "string"), ("op", 2, "string"), ("input", 3, "string", "repeated"),
                ("attr", 5, "map<string,AttrValue>"),
            ],
            "Versions": [("producer", 1, "int32")],
            "GraphDef": [("node", 1, "NodeDef", "repeated"), ("versions", 4, "Versions")],
            "FunctionGraphs": [("pre_optimization_graph", 2, "GraphDef")],
            "RunMetadata": [("function_graphs", 4, "FunctionGraphs", "repeated")],
        },
        syntax="proto2",
    )  # fmt: skip
    return {**{f"anf.{k}": v for k, v in anf.items()}, **tb}


def type_name(code: int) -> str:
    """An anf_ir ``DataType`` as MindSpore prints it (``Float32``), ``DT_<code>`` if unknown."""
    return ANF_TYPES[code].capitalize() if 0 <= code < len(ANF_TYPES) else f"DT_{code}"


def value_text(value: Any) -> str:
    """An anf_ir ``ValueProto`` (an attribute or a constant) as short text."""
    dtype = value.dtype
    if dtype in (DT_TUPLE, DT_LIST) or value.values:
        items = ", ".join(value_text(v) for v in value.values)
        return (
            f"[{items}]"
            if dtype == DT_LIST
            else f"({items}{',' if len(value.values) == 1 else ''})"
        )
    if value.dict_val:
        return "{" + ", ".join(f"{e.key}: {value_text(e.value)}" for e in value.dict_val) + "}"
    if value.HasField("tensor_val"):
        t = value.tensor_val
        return f"Tensor(shape={list(t.dims)}, dtype={type_name(t.data_type)})"
    for name in ("str_val", "bool_val", "int_val", "uint_val", "float_val", "double_val"):
        if value.HasField(name):
            return repr(getattr(value, name)) if name == "str_val" else str(getattr(value, name))
    if value.HasField("type_val"):
        return type_text(value.type_val)
    return type_name(dtype) if dtype else ""


def type_text(t: Any) -> str:
    """An anf_ir ``TypeProto`` as text: ``Tensor[Float32]``, ``Tuple[...]``, ``Monad``..."""
    if t.HasField("tensor_type"):
        return f"Tensor[{type_name(t.tensor_type.elem_type)}]"
    if t.HasField("sequence_type"):
        return f"{type_name(t.data_type)}[{', '.join(type_text(e) for e in t.sequence_type.elem_types)}]"
    return type_name(t.data_type)


def _shapes(t: Any) -> list[list[int]] | None:
    """The output shapes of a ``TypeProto``: one per tensor (a tuple's elements), None if none."""
    if t.HasField("tensor_type"):
        return [[int(d.size) for d in t.tensor_type.shape.dim]]
    if t.HasField("sequence_type"):
        out: list[list[int]] = []
        for e in t.sequence_type.elem_types:
            got = _shapes(e)
            if got is None:
                return None
            out.extend(got)
        return out or None
    return None


class _Graph:
    """A GraphDef being built: unique node names, attributes as text."""

    def __init__(self) -> None:
        self.m = messages()
        self.graph = self.m["GraphDef"](versions={"producer": PRODUCER})
        self.names: set[str] = set()

    def unique(self, name: str) -> str:
        base, n = name, 1
        while name in self.names:
            name = f"{base}_{n}"
            n += 1
        self.names.add(name)
        return name

    def node(self, name: str, op: str, inputs: list[str], attrs: dict[str, str]) -> Any:
        node = self.graph.node.add(name=name, op=op, input=inputs)
        for key, text in attrs.items():
            if text != "":
                node.attr[key].s = text.encode("utf-8")
        return node

    def shapes(self, node: Any, t: Any) -> None:
        shapes = _shapes(t)
        if shapes is not None:
            target = node.attr["_output_shapes"].list
            for dims in shapes:
                target.shape.add(dim=[{"size": d} for d in dims])
        text = type_text(t)
        if text != type_name(0):
            node.attr["dtype"].s = text.encode("utf-8")

    def bytes(self) -> bytes:
        return self.graph.SerializeToString()  # type: ignore[no-any-return]


def _scope_of(full_name: str) -> str:
    return full_name.rpartition("/")[0]


def anf_graph_def(graph_proto: bytes) -> bytes:
    """The serialized ``GraphDef`` of a serialized anf_ir ``GraphProto`` (see the module)."""
    m = messages()
    g = m["anf.GraphProto"].FromString(graph_proto)
    out = _Graph()
    # name of each operation: its full_name (scope/op-type-opN), else scope + its graph name
    names: dict[str, str] = {}
    for node in g.node:
        full = node.full_name or "/".join(
            p for p in (node.scope, f"{node.op_type}-{node.name}") if p
        )
        names[node.name] = out.unique(full)
    # parameters and constants live in the scope of the first operation reading them
    params = {p.name: p for p in g.parameters}
    consts = {c.key: c.value for c in g.const_vals}
    placed: dict[str, str] = {}
    for node in g.node:
        for i in node.input:
            if i.name not in names and i.name not in placed:
                scope = _scope_of(names[node.name])
                placed[i.name] = out.unique(f"{scope}/{i.name}" if scope else i.name)
    for name in [*params, *consts]:  # read by no operation
        if name not in placed:
            placed[name] = out.unique(name)
    for name, param in params.items():
        leaf = out.node(placed[name], "Parameter", [], {"name": name})
        out.shapes(leaf, param.type)
    for name, value in consts.items():
        out.node(placed[name], "Const", [], {"value": value_text(value), "name": name})
    for name, where in placed.items():  # inputs the graph does not define
        if name not in params and name not in consts:
            out.node(where, "Input", [], {"name": name})
    for node in g.node:
        inputs = []
        for i in node.input:
            target = names.get(i.name) or placed.get(i.name) or i.name
            inputs.append(f"^{target}" if i.type == CONTROL_EDGE else target)
        attrs = {a.name: value_text(a.value) for a in node.attribute}
        if node.instance_name:
            attrs.setdefault("instance_name", node.instance_name)
        op = out.node(names[node.name], node.op_type or "Unknown", inputs, attrs)
        out.shapes(op, node.output_type)
    return out.bytes()


def _parameter_attrs(param: Any) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for field in ("mapStr", "mapBool", "mapInt", "mapDouble"):
        for key, value in getattr(param, field).items():
            attrs[key] = str(value)
    for key, value in param.mapStrList.items():
        attrs[key] = "[" + ", ".join(repr(s) for s in value.strValue) + "]"
    return attrs


#: keys naming an ``Operation`` (a map's transform, a sampler), the first one present wins.
_OPERATION_NAMES = ("tensor_op_name", "sampler_name", "op_type")


def _operation_text(op: Any) -> str:
    """A pipeline's ``Operation`` as ``Name(key=value, ...)`` (its ``size`` and ``weights``
    lists too)."""
    attrs = _parameter_attrs(op.operationParam)
    name = next((attrs.pop(k) for k in _OPERATION_NAMES if k in attrs), "operation")
    for field in ("size", "weights"):
        if getattr(op, field):
            attrs[field] = str(list(getattr(op, field)))
    inner = ", ".join(f"{k}={v}" for k, v in sorted(attrs.items()))
    return f"{name}({inner})"


def dataset_graph_def(dataset_graph: bytes, scope: str = "dataset") -> bytes:
    """The serialized ``GraphDef`` of a serialized lineage ``DatasetGraph``: one node per
    pipeline operation under ``scope``, named by its op type, reading its children."""
    from tallyboard_lineage.messages import DatasetGraph

    root = DatasetGraph.FromString(dataset_graph)
    out = _Graph()

    def add(node: Any) -> str:
        inputs = [add(child) for child in node.children]
        attrs = _parameter_attrs(node.parameter)
        op = attrs.pop("op_type", "") or "Dataset"
        if node.operations:
            attrs["operations"] = "; ".join(_operation_text(o) for o in node.operations)
        if node.HasField("sampler"):
            attrs["sampler"] = _operation_text(node.sampler)
        name = out.unique(f"{scope}/{op}")
        out.node(name, op, inputs, attrs)
        return name

    add(root)
    return out.bytes()


def run_metadata_with(graph_def: bytes) -> bytes:
    """A serialized ``RunMetadata`` whose one function graph is ``graph_def`` (what the
    ``graph_run_metadata_graph`` summaries of TensorBoard's GRAPHS dashboard hold)."""
    m = messages()
    graph = m["GraphDef"].FromString(graph_def)
    meta = m["RunMetadata"]()
    meta.function_graphs.add().pre_optimization_graph.CopyFrom(graph)
    return meta.SerializeToString()  # type: ignore[no-any-return]
