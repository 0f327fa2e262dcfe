"""MindSpore's lineage and loss-landscape messages as protobuf classes users can build.

``lineage.proto`` (``TrainLineage``, ``EvaluationLineage``, ``DatasetGraph``, ``Operation``,
``OperationParameter``, ``UserDefinedInfo``) and ``LossLandscape`` from ``summary.proto`` (with
the anf_ir ``TensorProto`` its points hold), package ``mindspore.irpb``, proto2, with MindSpore's
field numbers, so serialized messages are exactly what MindSpore writes. Nested types are real
nested classes: ``TrainLineage.HyperParameters``, ``LossLandscape.Metadata``, ...
"""

from __future__ import annotations

from typing import Any

from tallyboard.records.protobuild import build

_DATA_TYPES = [
    "DT_UNDEFINED", "DT_BOOL", "DT_INT8", "DT_INT16", "DT_INT32", "DT_INT64", "DT_UINT8", "DT_UINT16",
    "DT_UINT32", "DT_UINT64", "DT_FLOAT16", "DT_FLOAT32", "DT_FLOAT64", "DT_STRING",
]  # fmt: skip

_m = build(
    "mindspore.irpb",
    {
        "TensorProto": [
            ("dims", 1, "int64", "repeated"), ("data_type", 2, "DataType"), ("float_data", 3, "float", "packed"),
            ("int32_data", 4, "int32", "packed"), ("int64_data", 5, "int64", "packed"),
            ("double_data", 6, "double", "packed"), ("uint64_data", 7, "uint64", "packed"),
            ("raw_data", 8, "bytes"),
        ],
        "LossLandscape": [
            ("landscape", 1, "LossLandscape.Point"), ("loss_path", 2, "LossLandscape.LossPath"),
            ("metadata", 3, "LossLandscape.Metadata"), ("convergence_point", 4, "LossLandscape.Point"),
        ],
        "LossLandscape.Point": [("x", 1, "TensorProto"), ("y", 2, "TensorProto"), ("z", 3, "TensorProto")],
        "LossLandscape.LossPath": [("intervals", 1, "int32", "repeated"), ("points", 2, "LossLandscape.Point")],
        "LossLandscape.Metadata": [
            ("decomposition", 1, "string"), ("unit", 2, "string"), ("step_per_epoch", 3, "int32"),
        ],
        "TrainLineage": [
            ("hyper_parameters", 1, "TrainLineage.HyperParameters"),
            ("train_dataset", 2, "TrainLineage.TrainDataset"),
            ("algorithm", 3, "TrainLineage.Algorithm"), ("model", 4, "TrainLineage.Model"),
        ],
        "TrainLineage.HyperParameters": [
            ("optimizer", 1, "string"), ("learning_rate", 2, "float"), ("loss_function", 3, "string"),
            ("epoch", 4, "int32"), ("parallel_mode", 5, "string"), ("device_num", 6, "int32"),
            ("batch_size", 8, "int32"),
        ],
        "TrainLineage.TrainDataset": [("train_dataset_path", 1, "string"), ("train_dataset_size", 2, "int32")],
        "TrainLineage.Algorithm": [("network", 1, "string"), ("loss", 2, "float")],
        "TrainLineage.Model": [("path", 3, "string"), ("size", 4, "int64")],
        "EvaluationLineage": [("metric", 2, "string"), ("valid_dataset", 3, "EvaluationLineage.ValidDataset")],
        "EvaluationLineage.ValidDataset": [
            ("valid_dataset_path", 1, "string"), ("valid_dataset_size", 2, "int32"),
        ],
        "StrList": [("strValue", 1, "string", "repeated")],
        "OperationParameter": [
            ("mapStr", 1, "map<string,string>"), ("mapStrList", 2, "map<string,StrList>"),
            ("mapBool", 3, "map<string,bool>"), ("mapInt", 4, "map<string,int32>"),
            ("mapDouble", 5, "map<string,double>"),
        ],
        "Operation": [
            ("operationParam", 1, "OperationParameter"), ("size", 2, "int32", "repeated"),
            ("weights", 3, "float", "repeated"),
        ],
        "DatasetGraph": [
            ("children", 1, "DatasetGraph", "repeated"), ("parameter", 2, "OperationParameter"),
            ("operations", 3, "Operation", "repeated"), ("sampler", 4, "Operation"),
        ],
        "UserDefinedInfo": [
            ("user_info", 1, "UserDefinedInfo", "repeated"), ("map_dict", 2, "map<string,UserDefinedInfo>"),
            ("map_int32", 3, "map<string,int32>"), ("map_str", 4, "map<string,string>"),
            ("map_double", 5, "map<string,double>"),
        ],
    },
    {"DataType": {name: number for number, name in enumerate(_DATA_TYPES)}},
    syntax="proto2",
)  # fmt: skip

TensorProto: Any = _m["TensorProto"]
LossLandscape: Any = _m["LossLandscape"]
TrainLineage: Any = _m["TrainLineage"]
EvaluationLineage: Any = _m["EvaluationLineage"]
StrList: Any = _m["StrList"]
OperationParameter: Any = _m["OperationParameter"]
Operation: Any = _m["Operation"]
DatasetGraph: Any = _m["DatasetGraph"]
UserDefinedInfo: Any = _m["UserDefinedInfo"]
