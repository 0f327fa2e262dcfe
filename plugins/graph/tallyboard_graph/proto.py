"""GraphDef and RunMetadata messages (field numbers from tensorboard/compat/proto/*.proto)."""

from __future__ import annotations

from typing import Any

from tallyboard.records.protobuild import build

#: ``versions.producer`` torch writes.
PRODUCER = 22

_m = build(
    "tallyboard.graph",
    {
        "TensorShapeDim": [("size", 1, "int64"), ("name", 2, "string")],
        "TensorShapeProto": [("dim", 2, "TensorShapeDim", "repeated"), ("unknown_rank", 3, "bool")],
        "AttrListValue": [
            ("s", 2, "bytes", "repeated"),
            ("i", 3, "int64", "repeated"),
            ("f", 4, "float", "repeated"),
            ("b", 5, "bool", "repeated"),
            ("type", 6, "int32", "repeated"),
            ("shape", 7, "TensorShapeProto", "repeated"),
        ],
        "AttrValue": [
            ("list", 1, "AttrListValue", "oneof:value"),
            ("s", 2, "bytes", "oneof:value"),
            ("i", 3, "int64", "oneof:value"),
            ("f", 4, "float", "oneof:value"),
            ("b", 5, "bool", "oneof:value"),
            ("type", 6, "int32", "oneof:value"),
            ("shape", 7, "TensorShapeProto", "oneof:value"),
        ],
        "NodeDef": [
            ("name", 1, "string"),
            ("op", 2, "string"),
            ("input", 3, "string", "repeated"),
            ("device", 4, "string"),
            ("attr", 5, "map<string, AttrValue>"),
        ],
        "VersionDef": [
            ("producer", 1, "int32"),
            ("min_consumer", 2, "int32"),
            ("bad_consumers", 3, "int32", "repeated"),
        ],
        "GraphDef": [
            ("node", 1, "NodeDef", "repeated"),
            ("version", 3, "int32"),
            ("versions", 4, "VersionDef"),
        ],
        "DeviceStepStats": [("device", 1, "string")],
        "StepStats": [("dev_stats", 1, "DeviceStepStats", "repeated")],
        "RunMetadata": [("step_stats", 1, "StepStats")],
    },
    syntax="proto2",  # field presence, as the oneof of AttrValue has: an empty ``s`` is still written
)

TensorShapeProto: Any = _m["TensorShapeProto"]
AttrValue: Any = _m["AttrValue"]
NodeDef: Any = _m["NodeDef"]
GraphDef: Any = _m["GraphDef"]
VersionDef: Any = _m["VersionDef"]
RunMetadata: Any = _m["RunMetadata"]


def cpu_run_metadata() -> bytes:
    """The run metadata torch writes with a graph: one CPU device, no node stats."""
    return RunMetadata(step_stats={"dev_stats": [{"device": "/device:CPU:0"}]}).SerializeToString()  # type: ignore[no-any-return]
