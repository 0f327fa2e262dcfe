"""An independent reader of MindSpore summary and lineage files, for tests.

It shares no code with tallyboard's writer: its own framing and CRC-32C check (every record, both
CRCs, no torn tail tolerated) and its own proto2 definitions of MindSpore's ``summary.proto``,
``anf_ir.proto`` (the parts summary files use) and ``lineage.proto``, with MindSpore's field
numbers, built here into real protobuf classes.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import crc32c as _crc32c
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_FDP = descriptor_pb2.FieldDescriptorProto
_TYPES = {
    "double": _FDP.TYPE_DOUBLE,
    "float": _FDP.TYPE_FLOAT,
    "int32": _FDP.TYPE_INT32,
    "int64": _FDP.TYPE_INT64,
    "uint64": _FDP.TYPE_UINT64,
    "bool": _FDP.TYPE_BOOL,
    "string": _FDP.TYPE_STRING,
    "bytes": _FDP.TYPE_BYTES,
}
_LABELS = {
    "required": _FDP.LABEL_REQUIRED,
    "optional": _FDP.LABEL_OPTIONAL,
    "repeated": _FDP.LABEL_REPEATED,
}

# (label, type, name, number[, "packed"]); nested messages under "+Name"; map<K,V> becomes an entry.
TENSOR = [
    ("repeated", "int64", "dims", 1),
    ("optional", "DataType", "data_type", 2),
    ("repeated", "float", "float_data", 3, "packed"),
    ("repeated", "int32", "int32_data", 4, "packed"),
    ("repeated", "int64", "int64_data", 5, "packed"),
    ("repeated", "double", "double_data", 6, "packed"),
    ("repeated", "uint64", "uint64_data", 7, "packed"),
    ("optional", "bytes", "raw_data", 8),
]
DATA_TYPES = {
    "DT_UNDEFINED": 0, "DT_BOOL": 1, "DT_INT8": 2, "DT_INT16": 3, "DT_INT32": 4, "DT_INT64": 5,
    "DT_UINT8": 6, "DT_UINT16": 7, "DT_UINT32": 8, "DT_UINT64": 9, "DT_FLOAT16": 10,
    "DT_FLOAT32": 11, "DT_FLOAT64": 12, "DT_STRING": 13,
}  # fmt: skip
LANDSCAPE = {
    "+Point": [("optional", "TensorProto", "x", 1), ("optional", "TensorProto", "y", 2), ("optional", "TensorProto", "z", 3)],
    "+LossPath": [("repeated", "int32", "intervals", 1), ("optional", "LossLandscape.Point", "points", 2)],
    "+Metadata": [("optional", "string", "decomposition", 1), ("optional", "string", "unit", 2), ("optional", "int32", "step_per_epoch", 3)],
    "fields": [
        ("optional", "LossLandscape.Point", "landscape", 1),
        ("optional", "LossLandscape.LossPath", "loss_path", 2),
        ("optional", "LossLandscape.Metadata", "metadata", 3),
        ("optional", "LossLandscape.Point", "convergence_point", 4),
    ],
}  # fmt: skip
SUMMARY = {
    "TensorProto": TENSOR,
    "GraphProto": [("optional", "string", "name", 2)],
    "ModelProto": [
        ("optional", "int64", "ir_version", 1),
        ("optional", "string", "domain", 2),
        ("optional", "int64", "model_version", 3),
        ("optional", "GraphProto", "graph", 4),
    ],
    "LossLandscape": LANDSCAPE,
    "Summary": {
        "+Image": [
            ("required", "int32", "height", 1),
            ("required", "int32", "width", 2),
            ("required", "int32", "colorspace", 3),
            ("required", "bytes", "encoded_image", 4),
        ],
        "+Histogram": {
            "+bucket": [("required", "double", "left", 1), ("required", "double", "width", 2), ("required", "int64", "count", 3)],
            "fields": [
                ("repeated", "Summary.Histogram.bucket", "buckets", 1),
                ("optional", "int64", "nan_count", 2),
                ("optional", "int64", "pos_inf_count", 3),
                ("optional", "int64", "neg_inf_count", 4),
                ("optional", "double", "max", 5),
                ("optional", "double", "min", 6),
                ("optional", "double", "sum", 7),
                ("optional", "int64", "count", 8),
            ],
        },
        "+Value": [
            ("required", "string", "tag", 1),
            ("optional", "float", "scalar_value", 3),
            ("optional", "Summary.Image", "image", 4),
            ("optional", "TensorProto", "tensor", 8),
            ("optional", "Summary.Histogram", "histogram", 9),
            ("optional", "LossLandscape", "loss_landscape", 10),
        ],
        "fields": [("repeated", "Summary.Value", "value", 1)],
    },
    "Event": [
        ("required", "double", "wall_time", 1),
        ("optional", "int64", "step", 2),
        ("optional", "string", "version", 3),
        ("optional", "GraphProto", "graph_def", 4),
        ("optional", "Summary", "summary", 5),
    ],
}  # fmt: skip
LINEAGE = {
    "TrainLineage": {
        "+HyperParameters": [
            ("optional", "string", "optimizer", 1), ("optional", "float", "learning_rate", 2),
            ("optional", "string", "loss_function", 3), ("optional", "int32", "epoch", 4),
            ("optional", "string", "parallel_mode", 5), ("optional", "int32", "device_num", 6),
            ("optional", "int32", "batch_size", 8),
        ],
        "+TrainDataset": [("optional", "string", "train_dataset_path", 1), ("optional", "int32", "train_dataset_size", 2)],
        "+Algorithm": [("optional", "string", "network", 1), ("optional", "float", "loss", 2)],
        "+Model": [("optional", "string", "path", 3), ("optional", "int64", "size", 4)],
        "fields": [
            ("optional", "TrainLineage.HyperParameters", "hyper_parameters", 1),
            ("optional", "TrainLineage.TrainDataset", "train_dataset", 2),
            ("optional", "TrainLineage.Algorithm", "algorithm", 3),
            ("optional", "TrainLineage.Model", "model", 4),
        ],
    },
    "EvaluationLineage": {
        "+ValidDataset": [("optional", "string", "valid_dataset_path", 1), ("optional", "int32", "valid_dataset_size", 2)],
        "fields": [("optional", "string", "metric", 2), ("optional", "EvaluationLineage.ValidDataset", "valid_dataset", 3)],
    },
    "StrList": [("repeated", "string", "strValue", 1)],
    "OperationParameter": [
        ("repeated", "map<string,string>", "mapStr", 1), ("repeated", "map<string,StrList>", "mapStrList", 2),
        ("repeated", "map<string,bool>", "mapBool", 3), ("repeated", "map<string,int32>", "mapInt", 4),
        ("repeated", "map<string,double>", "mapDouble", 5),
    ],
    "Operation": [
        ("optional", "OperationParameter", "operationParam", 1), ("repeated", "int32", "size", 2),
        ("repeated", "float", "weights", 3),
    ],
    "DatasetGraph": [
        ("repeated", "DatasetGraph", "children", 1), ("optional", "OperationParameter", "parameter", 2),
        ("repeated", "Operation", "operations", 3), ("optional", "Operation", "sampler", 4),
    ],
    "UserDefinedInfo": [
        ("repeated", "UserDefinedInfo", "user_info", 1), ("repeated", "map<string,UserDefinedInfo>", "map_dict", 2),
        ("repeated", "map<string,int32>", "map_int32", 3), ("repeated", "map<string,string>", "map_str", 4),
        ("repeated", "map<string,double>", "map_double", 5),
    ],
    "LineageEvent": [
        ("required", "double", "wall_time", 1), ("optional", "int64", "step", 2), ("optional", "string", "version", 3),
        ("optional", "TrainLineage", "train_lineage", 6), ("optional", "EvaluationLineage", "evaluation_lineage", 7),
        ("optional", "DatasetGraph", "dataset_graph", 9), ("optional", "UserDefinedInfo", "user_defined_info", 10),
    ],
}  # fmt: skip


def _add_field(msg: Any, spec: tuple[Any, ...], package: str) -> None:
    label, ftype, name, number = spec[:4]
    fd = msg.field.add()
    fd.name, fd.number, fd.label = name, number, _LABELS[label]
    if ftype.startswith("map<"):
        key, value = ftype[4:-1].split(",")
        entry = msg.nested_type.add()
        entry.name = "".join(p[:1].upper() + p[1:] for p in name.split("_")) + "Entry"
        entry.options.map_entry = True
        _add_field(entry, ("optional", key, "key", 1), package)
        _add_field(entry, ("optional", value, "value", 2), package)
        fd.type, fd.type_name = _FDP.TYPE_MESSAGE, f".{package}.{msg.name}.{entry.name}"
    elif ftype in _TYPES:
        fd.type = _TYPES[ftype]
    elif ftype == "DataType":
        fd.type, fd.type_name = _FDP.TYPE_ENUM, f".{package}.DataType"
    else:
        fd.type, fd.type_name = _FDP.TYPE_MESSAGE, f".{package}.{ftype}"
    if len(spec) > 4 and spec[4] == "packed":
        fd.options.packed = True


def _add_message(container: Any, name: str, spec: Any, package: str, scope: str) -> None:
    msg = container.add()
    msg.name = name
    fields = spec if isinstance(spec, list) else spec["fields"]
    if isinstance(spec, dict):
        for key, sub in spec.items():
            if key.startswith("+"):
                _add_message(msg.nested_type, key[1:], sub, package, f"{scope}{name}.")
    for field in fields:
        _add_field(msg, field, package)


def _build(package: str, file: str, messages: dict[str, Any]) -> dict[str, Any]:
    fdp = descriptor_pb2.FileDescriptorProto(name=file, package=package, syntax="proto2")
    enum = fdp.enum_type.add(name="DataType")
    for value_name, number in DATA_TYPES.items():
        enum.value.add(name=value_name, number=number)
    for name, spec in messages.items():
        _add_message(fdp.message_type, name, spec, package, "")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
        for name in messages
    }


_SUMMARY = _build("mindspore.irpb", "reader/summary.proto", SUMMARY)
_LINEAGE = _build(
    "mindspore.irpb",
    "reader/lineage.proto",
    {**LINEAGE, "TensorProto": TENSOR, "LossLandscape": LANDSCAPE},
)
Event = _SUMMARY["Event"]
Summary = _SUMMARY["Summary"]
TensorProto = _SUMMARY["TensorProto"]
ModelProto = _SUMMARY["ModelProto"]
GraphProto = _SUMMARY["GraphProto"]
LossLandscape = _SUMMARY["LossLandscape"]
LineageEvent = _LINEAGE["LineageEvent"]
TrainLineage = _LINEAGE["TrainLineage"]
EvaluationLineage = _LINEAGE["EvaluationLineage"]
DatasetGraph = _LINEAGE["DatasetGraph"]
UserDefinedInfo = _LINEAGE["UserDefinedInfo"]


def _masked_crc(data: bytes) -> int:
    crc = _crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class BadRecord(AssertionError):
    """The file is not a sequence of well-framed records with correct CRCs."""


def read_records(path: str | Path) -> list[bytes]:
    """Every record payload of a file; raises BadRecord on any framing or CRC error."""
    data = Path(path).read_bytes()
    out, pos = [], 0
    while pos < len(data):
        if pos + 12 > len(data):
            raise BadRecord(f"{path}: truncated header at {pos}")
        header = data[pos : pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8 : pos + 12])
        if length_crc != _masked_crc(header):
            raise BadRecord(f"{path}: bad length CRC at {pos}")
        end = pos + 12 + length
        if end + 4 > len(data):
            raise BadRecord(f"{path}: truncated record at {pos}")
        payload = data[pos + 12 : end]
        (payload_crc,) = struct.unpack("<I", data[end : end + 4])
        if payload_crc != _masked_crc(payload):
            raise BadRecord(f"{path}: bad payload CRC at {pos}")
        out.append(payload)
        pos = end + 4
    return out


def _parse(cls: Any, payload: bytes) -> Any:
    message = cls()
    message.ParseFromString(payload)
    if not message.IsInitialized():  # proto2 required fields
        raise BadRecord(
            f"{cls.__name__} lacks required fields: {message.FindInitializationErrors()}"
        )
    if message.SerializeToString(deterministic=True) != payload:
        raise BadRecord(f"{cls.__name__} is not canonically encoded")
    return message


def read_events(path: str | Path, *, canonical: bool = True) -> list[Any]:
    """The Events of a summary file, each checked complete (and byte-canonical)."""
    return [_parse(Event, p) if canonical else Event.FromString(p) for p in read_records(path)]


def read_lineage(path: str | Path) -> list[Any]:
    """The LineageEvents of a lineage file."""
    return [_parse(LineageEvent, p) for p in read_records(path)]


def values(path: str | Path) -> list[tuple[int, str, str, Any]]:
    """``(step, tag, kind, value)`` for every summary value, in file order."""
    out = []
    for event in read_events(path):
        if event.HasField("summary"):
            for value in event.summary.value:
                kind = _which(value)
                out.append((event.step, value.tag, kind, getattr(value, kind) if kind else None))
    return out


def _which(value: Any) -> str | None:
    for kind in ("scalar_value", "image", "tensor", "histogram", "loss_landscape"):
        if value.HasField(kind):
            return kind
    return None
