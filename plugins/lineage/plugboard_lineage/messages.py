"""MindSpore's lineage and loss-landscape messages as protobuf classes users can build.

``lineage.proto`` (``TrainLineage``, ``EvaluationLineage``, ``DatasetGraph``, ``Operation``,
``OperationParameter``, ``UserDefinedInfo``) and ``LossLandscape`` from ``summary.proto`` (with
the anf_ir ``TensorProto`` its points hold), package ``mindspore.irpb``, proto2, with MindSpore's
field numbers, so serialized messages are exactly what MindSpore writes. Nested types are real
nested classes: ``TrainLineage.HyperParameters``, ``LossLandscape.Metadata``, ...
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_SCALAR = {
    "double": _F.TYPE_DOUBLE, "float": _F.TYPE_FLOAT, "int32": _F.TYPE_INT32, "int64": _F.TYPE_INT64,
    "uint64": _F.TYPE_UINT64, "bool": _F.TYPE_BOOL, "string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES,
}  # fmt: skip
PACKAGE = "mindspore.irpb"

# message: [field, ...] or {"Nested": [...], ..., "": [fields]}; field = "label type name number [packed]"
_SCHEMA: dict[str, Any] = {
    "TensorProto": [
        "repeated int64 dims 1", "optional DataType data_type 2", "repeated float float_data 3 packed",
        "repeated int32 int32_data 4 packed", "repeated int64 int64_data 5 packed",
        "repeated double double_data 6 packed", "repeated uint64 uint64_data 7 packed", "optional bytes raw_data 8",
    ],
    "LossLandscape": {
        "Point": ["optional TensorProto x 1", "optional TensorProto y 2", "optional TensorProto z 3"],
        "LossPath": ["repeated int32 intervals 1", "optional LossLandscape.Point points 2"],
        "Metadata": ["optional string decomposition 1", "optional string unit 2", "optional int32 step_per_epoch 3"],
        "": [
            "optional LossLandscape.Point landscape 1", "optional LossLandscape.LossPath loss_path 2",
            "optional LossLandscape.Metadata metadata 3", "optional LossLandscape.Point convergence_point 4",
        ],
    },
    "TrainLineage": {
        "HyperParameters": [
            "optional string optimizer 1", "optional float learning_rate 2", "optional string loss_function 3",
            "optional int32 epoch 4", "optional string parallel_mode 5", "optional int32 device_num 6",
            "optional int32 batch_size 8",
        ],
        "TrainDataset": ["optional string train_dataset_path 1", "optional int32 train_dataset_size 2"],
        "Algorithm": ["optional string network 1", "optional float loss 2"],
        "Model": ["optional string path 3", "optional int64 size 4"],
        "": [
            "optional TrainLineage.HyperParameters hyper_parameters 1",
            "optional TrainLineage.TrainDataset train_dataset 2",
            "optional TrainLineage.Algorithm algorithm 3", "optional TrainLineage.Model model 4",
        ],
    },
    "EvaluationLineage": {
        "ValidDataset": ["optional string valid_dataset_path 1", "optional int32 valid_dataset_size 2"],
        "": ["optional string metric 2", "optional EvaluationLineage.ValidDataset valid_dataset 3"],
    },
    "StrList": ["repeated string strValue 1"],
    "OperationParameter": [
        "map<string,string> mapStr 1", "map<string,StrList> mapStrList 2", "map<string,bool> mapBool 3",
        "map<string,int32> mapInt 4", "map<string,double> mapDouble 5",
    ],
    "Operation": [
        "optional OperationParameter operationParam 1", "repeated int32 size 2", "repeated float weights 3",
    ],
    "DatasetGraph": [
        "repeated DatasetGraph children 1", "optional OperationParameter parameter 2",
        "repeated Operation operations 3", "optional Operation sampler 4",
    ],
    "UserDefinedInfo": [
        "repeated UserDefinedInfo user_info 1", "map<string,UserDefinedInfo> map_dict 2",
        "map<string,int32> map_int32 3", "map<string,string> map_str 4", "map<string,double> map_double 5",
    ],
}  # fmt: skip
_DATA_TYPES = [
    "DT_UNDEFINED", "DT_BOOL", "DT_INT8", "DT_INT16", "DT_INT32", "DT_INT64", "DT_UINT8", "DT_UINT16",
    "DT_UINT32", "DT_UINT64", "DT_FLOAT16", "DT_FLOAT32", "DT_FLOAT64", "DT_STRING",
]  # fmt: skip


def _field(msg: Any, scope: str, text: str) -> None:
    parts = text.split()
    if parts[0].startswith("map<"):
        key_type, value_type = parts[0][4:-1].split(",")
        name, number = parts[1], int(parts[2])
        entry = msg.nested_type.add(name=name[:1].upper() + name[1:] + "Entry")
        entry.options.map_entry = True
        _field(entry, f"{scope}.{entry.name}", f"optional {key_type} key 1")
        _field(entry, f"{scope}.{entry.name}", f"optional {value_type} value 2")
        msg.field.add(
            name=name, number=number, label=_F.LABEL_REPEATED, type=_F.TYPE_MESSAGE,
            type_name=f".{PACKAGE}.{scope}.{entry.name}",
        )  # fmt: skip
        return
    label, ftype, field_name, field_number = parts[:4]
    fd = msg.field.add(
        name=field_name,
        number=int(field_number),
        label=_F.LABEL_REPEATED if label == "repeated" else _F.LABEL_OPTIONAL,
    )
    if ftype in _SCALAR:
        fd.type = _SCALAR[ftype]
    elif ftype == "DataType":
        fd.type, fd.type_name = _F.TYPE_ENUM, f".{PACKAGE}.DataType"
    else:
        fd.type, fd.type_name = _F.TYPE_MESSAGE, f".{PACKAGE}.{ftype}"
    if parts[4:] == ["packed"]:
        fd.options.packed = True


def _build() -> dict[str, Any]:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="plugboard_lineage/mindspore.proto", package=PACKAGE, syntax="proto2"
    )
    enum = fdp.enum_type.add(name="DataType")
    for number, value_name in enumerate(_DATA_TYPES):
        enum.value.add(name=value_name, number=number)
    for name, spec in _SCHEMA.items():
        msg = fdp.message_type.add(name=name)
        if isinstance(spec, dict):
            for nested, fields in spec.items():
                if nested:
                    sub = msg.nested_type.add(name=nested)
                    for text in fields:
                        _field(sub, f"{name}.{nested}", text)
            spec = spec[""]
        for text in spec:
            _field(msg, name, text)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in _SCHEMA
    }


_classes = _build()
TensorProto: Any = _classes["TensorProto"]
LossLandscape: Any = _classes["LossLandscape"]
TrainLineage: Any = _classes["TrainLineage"]
EvaluationLineage: Any = _classes["EvaluationLineage"]
StrList: Any = _classes["StrList"]
OperationParameter: Any = _classes["OperationParameter"]
Operation: Any = _classes["Operation"]
DatasetGraph: Any = _classes["DatasetGraph"]
UserDefinedInfo: Any = _classes["UserDefinedInfo"]
