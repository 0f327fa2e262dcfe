"""TensorBoard's event-file messages (field numbers from tensorboard/compat/proto/*.proto).

Nested messages of the original files are flattened (``Summary.Value`` is ``SummaryValue``);
the wire format is the same.
"""

from __future__ import annotations

from typing import Any

from tallyboard.records.protobuild import build

DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_STRING = 1, 2, 3, 4, 5, 6, 7
DT_COMPLEX64, DT_INT64, DT_BOOL, DT_BFLOAT16, DT_UINT16, DT_COMPLEX128 = 8, 9, 10, 14, 17, 18
DT_HALF, DT_UINT32, DT_UINT64 = 19, 22, 23

_m = build(
    "tallyboard.tensorboard",
    {
        "Event": [
            ("wall_time", 1, "double"),
            ("step", 2, "int64"),
            ("file_version", 3, "string", "oneof:what"),
            ("graph_def", 4, "bytes", "oneof:what"),
            ("summary", 5, "Summary", "oneof:what"),
            ("log_message", 6, "LogMessage", "oneof:what"),
            ("session_log", 7, "SessionLog", "oneof:what"),
            ("tagged_run_metadata", 8, "TaggedRunMetadata", "oneof:what"),
            ("meta_graph_def", 9, "bytes", "oneof:what"),
            ("source_metadata", 10, "SourceMetadata"),
        ],
        "SourceMetadata": [("writer", 1, "string")],
        "LogMessage": [("level", 1, "int32"), ("message", 2, "string")],
        "SessionLog": [
            ("status", 1, "int32"),
            ("checkpoint_path", 2, "string"),
            ("msg", 3, "string"),
        ],
        "TaggedRunMetadata": [("tag", 1, "string"), ("run_metadata", 2, "bytes")],
        "Summary": [("value", 1, "SummaryValue", "repeated")],
        "SummaryValue": [
            ("tag", 1, "string"),
            ("simple_value", 2, "float", "oneof:value"),
            ("obsolete_old_style_histogram", 3, "bytes", "oneof:value"),
            ("image", 4, "SummaryImage", "oneof:value"),
            ("histo", 5, "HistogramProto", "oneof:value"),
            ("audio", 6, "SummaryAudio", "oneof:value"),
            ("node_name", 7, "string"),
            ("tensor", 8, "TensorProto", "oneof:value"),
            ("metadata", 9, "SummaryMetadata"),
        ],
        "SummaryMetadata": [
            ("plugin_data", 1, "PluginData"),
            ("display_name", 2, "string"),
            ("summary_description", 3, "string"),
            ("data_class", 4, "int32"),
        ],
        "PluginData": [("plugin_name", 1, "string"), ("content", 2, "bytes")],
        "SummaryImage": [
            ("height", 1, "int32"),
            ("width", 2, "int32"),
            ("colorspace", 3, "int32"),
            ("encoded_image_string", 4, "bytes"),
        ],
        "SummaryAudio": [
            ("sample_rate", 1, "float"),
            ("num_channels", 2, "int64"),
            ("length_frames", 3, "int64"),
            ("encoded_audio_string", 4, "bytes"),
            ("content_type", 5, "string"),
        ],
        "HistogramProto": [
            ("min", 1, "double"),
            ("max", 2, "double"),
            ("num", 3, "double"),
            ("sum", 4, "double"),
            ("sum_squares", 5, "double"),
            ("bucket_limit", 6, "double", "repeated"),
            ("bucket", 7, "double", "repeated"),
        ],
        "TensorShapeDim": [("size", 1, "int64"), ("name", 2, "string")],
        "TensorShapeProto": [("dim", 2, "TensorShapeDim", "repeated"), ("unknown_rank", 3, "bool")],
        "TensorProto": [
            ("dtype", 1, "int32"),
            ("tensor_shape", 2, "TensorShapeProto"),
            ("version_number", 3, "int32"),
            ("tensor_content", 4, "bytes"),
            ("float_val", 5, "float", "repeated"),
            ("double_val", 6, "double", "repeated"),
            ("int_val", 7, "int32", "repeated"),
            ("string_val", 8, "bytes", "repeated"),
            ("scomplex_val", 9, "float", "repeated"),
            ("int64_val", 10, "int64", "repeated"),
            ("bool_val", 11, "bool", "repeated"),
            ("dcomplex_val", 12, "double", "repeated"),
            ("half_val", 13, "int32", "repeated"),
            ("uint32_val", 16, "uint32", "repeated"),
            ("uint64_val", 17, "uint64", "repeated"),
        ],
    },
)

Event: Any = _m["Event"]
SourceMetadata: Any = _m["SourceMetadata"]
SessionLog: Any = _m["SessionLog"]
TaggedRunMetadata: Any = _m["TaggedRunMetadata"]
Summary: Any = _m["Summary"]
SummaryValue: Any = _m["SummaryValue"]
SummaryMetadata: Any = _m["SummaryMetadata"]
PluginData: Any = _m["PluginData"]
SummaryImage: Any = _m["SummaryImage"]
SummaryAudio: Any = _m["SummaryAudio"]
HistogramProto: Any = _m["HistogramProto"]
TensorShapeProto: Any = _m["TensorShapeProto"]
TensorProto: Any = _m["TensorProto"]

SESSION_START = 1


#: ``SummaryMetadata.data_class``: how TensorBoard's data layer serves a plugin's values
#: (``tallyboard board`` and RustBoard serve only these three; 0 is unknown).
DATA_CLASS_UNKNOWN, DATA_CLASS_SCALAR, DATA_CLASS_TENSOR, DATA_CLASS_BLOB_SEQUENCE = 0, 1, 2, 3


def metadata(
    plugin_name: str,
    content: bytes = b"",
    *,
    data_class: int = DATA_CLASS_UNKNOWN,
    display_name: str = "",
    description: str = "",
) -> Any:
    """SummaryMetadata naming the TensorBoard plugin that shows a value.

    Args:
        plugin_name: The plugin's name (``"scalars"``, ``"images"``, your own): a value's kind
            on the way back follows it (decoders get ``value.metadata.plugin_data``).
        content: The plugin's own bytes (``plugin_data.content``).
        data_class: How TensorBoard's data layer serves the values (keyword only):
            :data:`DATA_CLASS_SCALAR` (one number a point; the SCALARS dashboard),
            :data:`DATA_CLASS_TENSOR` or :data:`DATA_CLASS_BLOB_SEQUENCE`. A value of a
            plugin TensorBoard does not know needs one to be served at all; a ``simple_value``
            is served as a scalar whatever it says (TensorBoard migrates it so).
        display_name: The name dashboards show (keyword only; TensorBoard defaults to the tag).
        description: A description, markdown (keyword only).

    Raises:
        TypeError: an argument has the wrong type.
        ValueError: ``data_class`` is not one of the four.
    """
    if not isinstance(plugin_name, str):
        raise TypeError(f"plugin_name must be a str, got {type(plugin_name).__name__}")
    if not isinstance(content, (bytes, bytearray)):
        raise TypeError(f"content must be bytes, got {type(content).__name__}")
    if isinstance(data_class, bool) or not isinstance(data_class, int):
        raise TypeError(f"data_class must be an int, got {type(data_class).__name__}")
    if data_class not in (0, 1, 2, 3):
        raise ValueError(
            f"data_class must be DATA_CLASS_UNKNOWN, _SCALAR, _TENSOR or _BLOB_SEQUENCE "
            f"(0-3), got {data_class}"
        )
    for arg, text in (("display_name", display_name), ("description", description)):
        if not isinstance(text, str):
            raise TypeError(f"{arg} must be a str, got {type(text).__name__}")
    return SummaryMetadata(
        plugin_data=PluginData(plugin_name=plugin_name, content=bytes(content)),
        data_class=data_class,
        display_name=display_name,
        summary_description=description,
    )


def shape(dims: Any) -> Any:
    """TensorShapeProto for a sequence of dimension sizes."""
    return TensorShapeProto(dim=[{"size": int(d)} for d in dims])
