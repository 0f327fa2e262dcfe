"""A ``torch.nn.Module`` as a TensorBoard GraphDef, with torch's node names, ops and shapes.

Tracing path: ``torch.jit.trace`` (strict as asked), then the graph is inlined and converted
node by node the way ``torch.utils.tensorboard`` does it, so names such as
``Net/Linear[l]/input`` and the ``_output_shapes`` attributes match torch's. ``torch.jit.trace``
has existed since torch 1.0; torch 2.10+ marks it deprecated, and that one deprecation warning
is silenced around our own call (tracer warnings about the model itself still reach the user).
``torch.export``/``torch.fx`` graphs carry other node names (``linear``, ``relu``), which would
break the drop-in promise, so they are not used.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from typing import Any

from tallyboard.values import check_flag

from .proto import PRODUCER, AttrValue, GraphDef, NodeDef, TensorShapeProto, VersionDef

_DEPRECATED = re.compile(r"`?torch\.jit\.trace\w*`? is deprecated")


class _Node:
    """One GraphDef node before names are resolved."""

    __slots__ = ("name", "op", "inputs", "shape", "attributes", "scope", "io")

    def __init__(
        self,
        name: str,
        op: str,
        inputs: list[str],
        shape: Any,
        attributes: str = "",
        scope: str | None = None,
        io: str = "",
    ) -> None:
        self.name, self.op, self.inputs, self.shape = name, op, inputs, shape
        self.attributes, self.scope, self.io = attributes, scope, io


@contextlib.contextmanager
def _eval_mode(model: Any) -> Iterator[None]:
    training = getattr(model, "training", None)
    if training is None or not hasattr(model, "train"):
        yield
        return
    model.train(False)
    try:
        yield
    finally:
        model.train(training)


class TraceError(RuntimeError, ValueError):
    """torch could not trace the model on its input: a RuntimeError as torch's own, and a
    ValueError as every rejected ``add_*`` argument."""


def trace(model: Any, args: Any, strict: bool = True) -> Any:
    """``torch.jit.trace`` in eval mode, without its deprecation warning; returns the traced module."""
    import torch

    if args is None:
        args = ()
    with _eval_mode(model), warnings.catch_warnings():
        for category in (DeprecationWarning, FutureWarning, UserWarning):
            warnings.filterwarnings("ignore", message=_DEPRECATED.pattern, category=category)
        try:
            # check_trace=False: the check re-runs the model twice to compare outputs; a graph for
            # display does not need it, and it triples the cost (torch keeps the default check).
            traced = torch.jit.trace(model, args, strict=strict, check_trace=False)
        except Exception as exc:
            error = TraceError(
                f"tracing model on input_to_model failed ({type(exc).__name__}: {exc})"
            )
            error.add_note("add_graph: tracing the model failed; no graph was logged")
            raise error from exc
    torch._C._jit_pass_inline(traced.graph)
    return traced


def _sizes(value: Any) -> Any:
    try:
        return value.type().sizes()
    except (RuntimeError, AttributeError):
        return [1]  # torch's answer for values without a known size


def _attr(node: Any, key: str) -> Any:
    return getattr(node, node.kindOf(key))(key)


def _module_name(module: Any) -> str:
    import torch

    if isinstance(module, torch.jit.TracedModule):
        return str(module._name)
    return str(getattr(module, "original_name", "Module"))


def nodes_from_trace(traced: Any) -> list[_Node]:
    """The nodes of an inlined traced graph, named as torch names them."""
    graph = traced.graph
    io_nodes: dict[str, _Node] = {}
    for value in graph.inputs():
        if not value.uses() or value.type().kind() == "ClassType":
            continue
        io_nodes[value.debugName()] = _Node(
            value.debugName(), "IO Node", [], _sizes(value), io="input"
        )

    ops: list[tuple[Any, str]] = []  # (jit node, scope)
    attr_scope: dict[str, str] = {}
    for node in graph.nodes():
        if node.kind() == "prim::GetAttr":
            key = node.output().debugName()
            parent = node.input().node()
            if parent.kind() == "prim::GetAttr":
                parent_scope = attr_scope[parent.output().debugName()]
                attr_scope[key] = f"{parent_scope}/{parent_scope.split('/')[-1]}.{node.s('name')}"
            else:
                attr_scope[key] = f"__module.{node.s('name')}"
            if node.output().type().kind() != "ClassType":
                ops.append((node, attr_scope[key]))
        else:
            ops.append((node, node.scopeName()))

    for i, value in enumerate(graph.outputs()):
        name = f"output.{i + 1}"
        io_nodes[name] = _Node(name, "IO Node", [value.debugName()], _sizes(value), io="output")

    base = _module_name(traced)
    alias = {
        name: f"{_module_name(m)}[{name.split('.')[-1]}]"
        for name, m in traced.named_modules(prefix="__module")
    }
    scoped: dict[str, str] = {}
    appeared: list[str] = []
    op_entries = []
    for node, raw_scope in ops:
        parts = [alias.get(a, a.split(".")[-1]) for a in raw_scope.split("/")]
        scope = base + ("/" + "/".join(parts) if any(parts) else "")
        inputs = [v.debugName() for v in node.inputs()]
        attributes = str({k: _attr(node, k) for k in node.attributeNames()}).replace("'", " ")
        op_entries.append((scope, inputs))
        for out in node.outputs():
            appeared.append(scope)
            shape = out.type().sizes() if out.isCompleteTensor() else None
            io_nodes[out.debugName()] = _Node(
                out.debugName(), node.kind(), inputs, shape, attributes, scope
            )
    root = next((s.split("/")[0] for s in reversed(appeared) if s), "default")
    for scope, inputs in op_entries:
        for name in inputs:
            scoped[name] = f"{scope}/{name}"
    for key, n in io_nodes.items():
        if n.io:
            scoped[key] = f"{n.io}/{n.name}"
        if n.scope is not None:
            scoped[key] = f"{n.scope}/{n.name}"
            if n.scope == "" and root:
                scoped[n.name] = f"{root}/{n.name}"
    for n in io_nodes.values():
        n.inputs = [scoped[i] for i in n.inputs]
        n.name = scoped.get(n.name, n.name)
    return list(io_nodes.values())


def graph_def(nodes: list[_Node]) -> Any:
    """The GraphDef message of resolved nodes (attrs ``attr`` and ``_output_shapes`` as torch)."""
    out = GraphDef(versions=VersionDef(producer=PRODUCER))
    for n in nodes:
        node = NodeDef(name=n.name, op=n.op, input=n.inputs)
        node.attr["attr"].CopyFrom(AttrValue(s=n.attributes.encode("utf-8")))
        if n.shape is not None:
            shape = TensorShapeProto(dim=[{"size": int(d)} for d in n.shape])
            node.attr["_output_shapes"].list.shape.append(shape)
        out.node.append(node)
    return out


def model_graph(
    model: Any, input_to_model: Any = None, verbose: bool = False, use_strict_trace: bool = True
) -> bytes:
    """Trace ``model`` on ``input_to_model``; the serialized GraphDef."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    strict = check_flag(use_strict_trace, "use_strict_trace")
    verbose = check_flag(verbose, "verbose")
    traced = trace(model, input_to_model, strict)
    if verbose:
        print(traced.graph)
    return graph_def(nodes_from_trace(traced)).SerializeToString()  # type: ignore[no-any-return]
