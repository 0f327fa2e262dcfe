"""The hparams plugin's messages (field numbers from tensorboard/plugins/hparams/*.proto)."""

from __future__ import annotations

from typing import Any

from tallyboard.records.protobuild import build

PLUGIN_NAME = "hparams"
PLUGIN_DATA_VERSION = 0
EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
SESSION_END_INFO_TAG = "_hparams_/session_end_info"

DATA_TYPE_STRING, DATA_TYPE_BOOL, DATA_TYPE_FLOAT64 = 1, 2, 3
STATUS_SUCCESS = 1

_m = build(
    "tallyboard.hparams",
    {
        "HParamsPluginData": [
            ("version", 1, "int32"),
            ("experiment", 2, "Experiment", "oneof:data"),
            ("session_start_info", 3, "SessionStartInfo", "oneof:data"),
            ("session_end_info", 4, "SessionEndInfo", "oneof:data"),
        ],
        "Experiment": [
            ("description", 1, "string"),
            ("user", 2, "string"),
            ("time_created_secs", 3, "double"),
            ("hparam_infos", 4, "HParamInfo", "repeated"),
            ("metric_infos", 5, "MetricInfo", "repeated"),
            ("name", 6, "string"),
        ],
        "HParamInfo": [
            ("name", 1, "string"),
            ("display_name", 2, "string"),
            ("description", 3, "string"),
            ("type", 4, "DataType"),
            ("domain_discrete", 5, ".google.protobuf.ListValue", "oneof:domain"),
        ],
        "MetricName": [("group", 1, "string"), ("tag", 2, "string")],
        "MetricInfo": [
            ("name", 1, "MetricName"),
            ("display_name", 3, "string"),
            ("description", 4, "string"),
        ],
        "SessionStartInfo": [
            ("hparams", 1, "map<string, .google.protobuf.Value>"),
            ("model_uri", 2, "string"),
            ("monitor_url", 3, "string"),
            ("group_name", 4, "string"),
            ("start_time_secs", 5, "double"),
        ],
        "SessionEndInfo": [("status", 1, "Status"), ("end_time_secs", 2, "double")],
    },
    enums={
        "DataType": {
            "DATA_TYPE_UNSET": 0,
            "DATA_TYPE_STRING": 1,
            "DATA_TYPE_BOOL": 2,
            "DATA_TYPE_FLOAT64": 3,
        },
        "Status": {
            "STATUS_UNKNOWN": 0,
            "STATUS_SUCCESS": 1,
            "STATUS_FAILURE": 2,
            "STATUS_RUNNING": 3,
        },
    },
)

HParamsPluginData: Any = _m["HParamsPluginData"]
Experiment: Any = _m["Experiment"]
HParamInfo: Any = _m["HParamInfo"]
MetricName: Any = _m["MetricName"]
MetricInfo: Any = _m["MetricInfo"]
SessionStartInfo: Any = _m["SessionStartInfo"]
SessionEndInfo: Any = _m["SessionEndInfo"]
