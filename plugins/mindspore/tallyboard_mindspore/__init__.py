"""The ``mindspore`` sink plugin: MindSpore summary and lineage files, as MindSpore writes them.

It registers the ``mindspore`` sink, the ``anf_graph`` kind (a serialized anf_ir ``ModelProto``,
what ``SummaryRecord.add_value('graph', ...)`` takes), and teaches the sink the built-in kinds
scalar, image, tensor and histogram plus the lineage kinds (train_lineage, eval_lineage,
dataset_graph, custom_lineage_data, landscape) with MindSpore's own encodings. It reads summary
and lineage files back too (the ``mindspore`` reader, see :mod:`tallyboard_mindspore.reader`)
with decoders for scalar, image, tensor, histogram, anf_graph and the four lineage kinds. For
TensorBoard (the board, ``convert --to tfevents``, the mirror) it teaches the ``tfevents`` sink
the graphs and lineage (:mod:`tallyboard_mindspore.tensorboard`), and its reader gives each run's
lineage as hyper-parameters (:mod:`tallyboard_mindspore.hparams`).
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, SinkSpec, hookimpl

SINK = "mindspore"
#: The sink writing TensorBoard's event files, taught MindSpore's graphs and lineage here.
TFEVENTS = "tfevents"
#: ``LineageEvent`` field of each lineage kind.
LINEAGE_FIELDS = {
    "train_lineage": 6,
    "eval_lineage": 7,
    "dataset_graph": 9,
    "custom_lineage_data": 10,
}


def convert_graph(value: Any) -> bytes:
    """Check a serialized anf_ir ``ModelProto`` and return its serialized ``GraphProto``."""
    from .wire import model_graph

    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"Plugin 'graph' expects the bytes of a serialized anf_ir ModelProto, got {type(value).__name__}"
        )
    try:
        return model_graph(bytes(value))
    except ValueError as exc:
        raise ValueError(
            f"Plugin 'graph': the value is not a serialized ModelProto ({exc})"
        ) from None


def graph_from_row(row: dict[str, Any]) -> tuple[str, bytes]:
    """A graph row without its payload (JSONL's: ``data``, a serialized ``GraphProto``) as the
    kind's payload, those bytes."""
    return row["tag"], bytes(row["data"])


def graph_row(graph_proto: bytes) -> dict[str, Any]:
    """The anf_graph kind's row: ``data``, its payload (a serialized anf_ir ``GraphProto``)."""
    return {"data": graph_proto}


@hookimpl
def register_kinds(register: Any) -> None:
    register(
        Kind(
            name="anf_graph",
            convert=convert_graph,
            description="MindSpore anf_ir graph (ModelProto bytes)",
            payload=bytes,
            to_row=graph_row,
            from_row=graph_from_row,
        )
    )


@hookimpl
def register_sinks(register: Any) -> None:
    from .sink import open_sink

    register(SinkSpec(name=SINK, open=open_sink, description="MindSpore summary and lineage files"))


@hookimpl
def register_encoders(register: Any) -> None:
    from . import encoders

    register("scalar", SINK, encoders.encode_scalar)
    register("tensor", SINK, encoders.encode_tensor)
    register("image", SINK, encoders.encode_image)
    register("histogram", SINK, encoders.encode_histogram)
    register("landscape", SINK, encoders.encode_landscape)
    register("anf_graph", SINK, encoders.encode_graph)
    for kind, field in LINEAGE_FIELDS.items():
        register(kind, SINK, encoders.lineage_encoder(field))
    from . import tensorboard as tb

    register("anf_graph", TFEVENTS, tb.encode_anf_graph)
    register("dataset_graph", TFEVENTS, tb.encode_dataset_graph)
    register("train_lineage", TFEVENTS, tb.encode_train_lineage)
    register("eval_lineage", TFEVENTS, tb.encode_eval_lineage)
    register("custom_lineage_data", TFEVENTS, tb.encode_custom_lineage)


def open_reader(fs: Any, path: str, decoders: dict[str, Any]) -> Any:
    """The reader of a summary or lineage file; a lineage file's also gives the run's lineage
    as hyper-parameters (:class:`tallyboard_mindspore.hparams.LineageHParams`)."""
    from . import reader

    opened = reader.open_reader(fs, path, decoders)
    if path.endswith(reader.LINEAGE_SUFFIX):
        from .hparams import LineageHParams

        return LineageHParams(opened)
    return opened


@hookimpl
def register_readers(register: Any) -> None:
    from tallyboard.plugin.readers import ReaderSpec

    from .reader import matches

    register(
        ReaderSpec(
            name=SINK,
            matches=matches,
            open=open_reader,
            description="MindSpore summary files",
            priority=10,
        )
    )


@hookimpl
def register_decoders(register: Any) -> None:
    from . import decoders

    register(SINK, "scalar", decoders.decode_scalar)
    register(SINK, "image", decoders.decode_image)
    register(SINK, "tensor", decoders.decode_tensor)
    register(SINK, "histogram", decoders.decode_histogram)
    register(SINK, "anf_graph", decoders.decode_graph)
    for kind, field in LINEAGE_FIELDS.items():
        register(SINK, kind, decoders.lineage_decoder(field))
