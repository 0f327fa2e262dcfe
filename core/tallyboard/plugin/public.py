"""The public surface: every module and name a plugin may import, in one list.

A plugin (the built-in ones included) imports from tallyboard only what :data:`PUBLIC` names;
everything else is internal and may change without notice. ``tests/test_public_surface.py``
fails when a built-in plugin or an example plugin imports a name not listed here, when a listed
name is missing or has no docstring, and when docs/plugins.md's table differs from this list.

Most plugins need only the first two entries: ``tallyboard`` (the faces and the contract's
classes) and ``tallyboard.plugin`` (the whole contract in one import). The others are the
helpers the built-in plugins are made of: argument checks, safe paths, call-site warnings,
storage that works on local paths and fsspec URLs, TFRecord framing and hand-packed protobuf,
and the TensorBoard event helpers of the ``tfevents`` plugin.
"""

from __future__ import annotations

#: module -> the names a plugin may import from it (importing the module itself is allowed too).
PUBLIC: dict[str, tuple[str, ...]] = {
    "tallyboard": (
        "CONTRACT_VERSION",
        "Deferred",
        "Kind",
        "Sink",
        "SinkOptions",
        "SinkSpec",
        "hookimpl",
        "get_registry",
        "SummaryWriter",
        "SummaryRecord",
        "read",
        "convert",
        "Aggregation",
        "Stat",
        "Event",
        "TensorboardEventHandler",
        "log_event",
        "register_event_handler",
        "unregister_event_handler",
    ),
    "tallyboard.plugin": (
        "hookimpl",
        "CONTRACT_VERSION",
        "Kind",
        "SinkSpec",
        "SinkOptions",
        "Sink",
        "SinkEntry",
        "SinkTarget",
        "Deferred",
        "resolve",
        "parse_sink",
        "parse_sinks",
        "NetworkSink",
        "NetworkSettings",
        "Refused",
        "ReaderSpec",
        "Batch",
        "ChunkedFileReader",
        "warn_corrupt",
        "get_registry",
        "add_plugin",
        "remove_plugin",
        "PluginWarning",
        "PUBLIC",
    ),
    "tallyboard.plugin.hookspecs": (
        "hookimpl",
        "CONTRACT_VERSION",
        "register_kinds",
        "register_sinks",
        "register_encoders",
        "register_readers",
        "register_decoders",
        "register_event_handlers",
        "writer_opened",
        "writer_flushing",
        "writer_closing",
    ),
    "tallyboard.plugin.kinds": ("Kind",),
    "tallyboard.plugin.sinks": (
        "SinkOptions",
        "Sink",
        "SinkSpec",
        "SinkEntry",
        "SinkTarget",
        "Deferred",
        "resolve",
        "parse_sink",
        "parse_sinks",
        "split_sink_url",
        "setting_types",
        "DEFAULT_SINKS",
    ),
    "tallyboard.plugin.network": ("NetworkSink", "NetworkSettings", "Refused", "Outcome"),
    "tallyboard.plugin.readers": (
        "Batch",
        "Batches",
        "FileReader",
        "ChunkedFileReader",
        "ReaderSpec",
        "warn_corrupt",
        "size_of",
        "read_whole",
    ),
    "tallyboard.plugin.registry": (
        "get_registry",
        "reset_registry",
        "add_plugin",
        "remove_plugin",
        "Registry",
        "PluginInfo",
        "PluginWarning",
    ),
    "tallyboard.plugin.public": ("PUBLIC",),
    "tallyboard.testing": (
        "MemoryPlugin",
        "MemorySink",
        "Record",
        "encode_any",
        "MEMORY_SINK",
        "tallyboard_registry",
        "register_plugin",
        "memory_sink",
        "IngestServer",
        "ingest_server",
    ),
    "tallyboard.monitor": (
        "Aggregation",
        "Stat",
        "Event",
        "EventHandlerHandle",
        "TensorboardEventHandler",
        "log_event",
        "register_event_handler",
        "unregister_event_handler",
        "data_value_t",
        "STAT_EVENT",
        "VALUE",
        "MEAN",
        "COUNT",
        "SUM",
        "MAX",
        "MIN",
    ),
    "tallyboard.values": (
        "to_float",
        "to_array",
        "check_tag",
        "check_text",
        "check_utf8",
        "check_utf8_array",
        "check_flag",
        "check_int",
        "check_positive_number",
        "check_step",
        "check_walltime",
        "env_seconds",
        "describe",
        "swapped_tag",
        "raise_if_swapped",
        "on_device",
        "defer_device",
        "defer_float",
        "emit_pending",
        "Pending",
    ),
    "tallyboard.paths": ("is_url", "join", "safe_relpath", "resolve_inside"),
    "tallyboard.extras": ("require", "MissingExtra"),
    "tallyboard.warn": ("warn", "warn_once", "cannot_encode", "SinkWarning", "ReadWarning"),
    "tallyboard.records.storage": ("create_unique", "create_exclusive", "makedirs", "BatchWriter"),
    "tallyboard.records.recordfile": ("RecordFile", "row_key"),
    "tallyboard.records.record_reader": ("RecordFileReader", "leading_good_crcs"),
    "tallyboard.records.rows": ("columns",),
    "tallyboard.records.framing": (
        "crc32c",
        "mask",
        "frame",
        "frame_parts",
        "frame_fixed",
        "in_call_order",
        "varint_columns",
        "byte_table",
        "pair_table",
    ),
    "tallyboard.records.wire": (
        "varint",
        "float32",
        "field_bytes",
        "field_double",
        "field_varint",
        "wall_step",
    ),
    "tallyboard.records.protobuild": ("build",),
    "tallyboard.ranks.discovery": ("current",),
    "tallyboard.faces.summary_writer": ("SummaryWriter", "default_log_dir"),
    # the tfevents plugin's helpers, for encoders of TensorBoard event files
    "tallyboard_tfevents.encoding": (
        "summary_event",
        "event_head",
        "graph_event",
        "tagged_run_metadata_event",
    ),
    "tallyboard_tfevents.proto": (
        "Event",
        "Summary",
        "SummaryValue",
        "SummaryMetadata",
        "PluginData",
        "TensorProto",
        "TensorShapeProto",
        "HistogramProto",
        "SummaryImage",
        "SummaryAudio",
        "metadata",
        "shape",
        "DT_FLOAT",
        "DT_DOUBLE",
        "DT_INT32",
        "DT_INT64",
        "DT_STRING",
        "DT_BOOL",
    ),
    # the jsonl plugin's encoder helper, and what the built-in readers hand their decoders
    "tallyboard_jsonl": ("encoder_for", "Blob"),
    "tallyboard_jsonl.reader": ("SideFile",),
    "tallyboard_mindspore.reader": ("MindSporeValue",),
}


def is_public(module: str, name: str | None = None) -> bool:
    """Whether a plugin may import ``module`` (or ``name`` from it).

    Args:
        module: A dotted module name (``"tallyboard.values"``).
        name: A name imported from it, or None for the module itself.

    Returns:
        True when :data:`PUBLIC` lists the module (and the name); a name that is itself a
        listed module (``from tallyboard.records import storage``) counts as listed.
    """
    if name is None:
        return module in PUBLIC
    return name in PUBLIC.get(module, ()) or f"{module}.{name}" in PUBLIC
