"""Protobuf message classes built at run time from a compact schema, with no generated code.

Plugins describe the messages of a file format (field names and numbers, which are facts of the
format) and get real protobuf classes, so they serialize and parse with the installed protobuf
runtime whatever its version. Example::

    Point = build("demo", {"Point": [("x", 1, "double"), ("tags", 2, "string", "repeated")]})["Point"]

A field is ``(name, number, type[, label])``. ``type`` is a scalar name (``double``,
``float``, ``int32``, ``int64``, ``uint32``, ``uint64``, ``sint32``, ``sint64``, ``bool``,
``string``, ``bytes``), the name of a message or enum of the same schema, a fully qualified
name starting with ``.`` (``.google.protobuf.Value``), or ``map<K,V>``. ``label`` is
``"repeated"``, ``"packed"`` for a repeated field with ``[packed = true]``, or
``"oneof:<group>"`` for a member of ``oneof <group>``. Declare every oneof the format has: a
member has presence, so its zero value (``0.0``, ``0``, ``""``, ``b""``, ``False``) is written
once set, where a plain proto3 field would drop it (a gauge at exactly 0 would vanish).

A message named ``"Outer.Inner"`` is nested in ``Outer`` (listed before it in the schema); its
class is reachable as ``Outer.Inner``, and fields refer to it by that dotted name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "double": _F.TYPE_DOUBLE,
    "float": _F.TYPE_FLOAT,
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
    "uint32": _F.TYPE_UINT32,
    "uint64": _F.TYPE_UINT64,
    "sint32": _F.TYPE_SINT32,
    "sint64": _F.TYPE_SINT64,
    "fixed32": _F.TYPE_FIXED32,
    "fixed64": _F.TYPE_FIXED64,
    "bool": _F.TYPE_BOOL,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}
_WELL_KNOWN = {
    ".google.protobuf.Value": "google/protobuf/struct.proto",
    ".google.protobuf.ListValue": "google/protobuf/struct.proto",
}

Field = Sequence[Any]


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_")) + "Entry"


def _fill_field(
    fd: Any,
    field: Field,
    package: str,
    names: set[str],
    enums: set[str],
    deps: set[str],
    msg: Any,
    scope: str,
) -> None:
    name, number, ftype = field[0], field[1], field[2]
    label = field[3] if len(field) > 3 else ""
    fd.name, fd.number = name, number
    fd.label = _F.LABEL_REPEATED if label in ("repeated", "packed") else _F.LABEL_OPTIONAL
    if label == "packed":
        fd.options.packed = True
    elif label.startswith("oneof:"):
        group = label[len("oneof:") :]
        groups = [decl.name for decl in msg.oneof_decl]
        if group not in groups:
            msg.oneof_decl.add().name = group
            groups.append(group)
        fd.oneof_index = groups.index(group)
    elif label not in ("", "repeated"):
        raise ValueError(f"unknown label {label!r} for field {name!r}")
    if ftype.startswith("map<"):
        key_type, value_type = (t.strip() for t in ftype[4:-1].split(","))
        entry = msg.nested_type.add()
        entry.name = _camel(name)
        entry.options.map_entry = True
        entry_scope = f"{scope}.{entry.name}"
        for entry_field in (("key", 1, key_type), ("value", 2, value_type)):
            _fill_field(
                entry.field.add(), entry_field, package, names, enums, deps, entry, entry_scope
            )
        fd.label = _F.LABEL_REPEATED
        fd.type = _F.TYPE_MESSAGE
        fd.type_name = f".{package}.{entry_scope}"
    elif ftype in _SCALARS:
        fd.type = _SCALARS[ftype]
    elif ftype.startswith("."):
        fd.type = _F.TYPE_MESSAGE
        fd.type_name = ftype
        if ftype in _WELL_KNOWN:
            deps.add(_WELL_KNOWN[ftype])
    elif ftype in enums:
        fd.type = _F.TYPE_ENUM
        fd.type_name = f".{package}.{ftype}"
    elif ftype in names:
        fd.type = _F.TYPE_MESSAGE
        fd.type_name = f".{package}.{ftype}"
    else:
        raise ValueError(f"unknown field type {ftype!r} for field {name!r}")


def build(
    package: str,
    messages: Mapping[str, Sequence[Field]],
    enums: Mapping[str, Mapping[str, int]] | None = None,
    *,
    syntax: str = "proto3",
) -> dict[str, Any]:
    """Build message classes for ``messages`` in a private pool; returns ``{name: class}``."""
    enums = enums or {}
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.name = f"tallyboard_runtime/{package.replace('.', '/')}.proto"
    fdp.package = package
    fdp.syntax = syntax
    deps: set[str] = set()
    for enum_name, values in enums.items():
        ed = fdp.enum_type.add()
        ed.name = enum_name
        for value_name, number in values.items():
            ev = ed.value.add()
            ev.name, ev.number = value_name, number
    names, enum_names = set(messages), set(enums)
    protos: dict[str, Any] = {}
    for msg_name in messages:  # a nested message goes into its parent, listed before it
        parent, _, short = msg_name.rpartition(".")
        protos[msg_name] = (protos[parent].nested_type if parent else fdp.message_type).add()
        protos[msg_name].name = short
    for msg_name, fields in messages.items():
        md = protos[msg_name]
        for field in fields:
            _fill_field(md.field.add(), field, package, names, enum_names, deps, md, msg_name)
    fdp.dependency.extend(sorted(deps))
    pool = descriptor_pool.DescriptorPool()
    if "google/protobuf/struct.proto" in deps:
        from google.protobuf import struct_pb2

        dep_proto = descriptor_pb2.FileDescriptorProto()
        struct_pb2.DESCRIPTOR.CopyToProto(dep_proto)
        pool.Add(dep_proto)
    pool.Add(fdp)
    out: dict[str, Any] = {}
    for msg_name in messages:
        out[msg_name] = message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"{package}.{msg_name}")
        )
    for enum_name in enums:
        out[enum_name] = pool.FindEnumTypeByName(f"{package}.{enum_name}")
    return out
