"""MindSpore's graphs and lineage as TensorBoard summaries: encoders for the ``tfevents`` sink.

They serve ``tallyboard board`` (which draws every value through the encoders of the sink that
writes TensorBoard's summaries), ``tallyboard convert --to tfevents`` and the TensorBoard mirror
of ``SummaryRecord(tensorboard=True)``:

- ``anf_graph``: the network as the run's graph (an ``Event.graph_def``, GRAPHS' default graph);
- ``dataset_graph``: the dataset pipeline as GRAPHS' graph tagged ``dataset_graph`` (a
  ``graph_run_metadata_graph`` summary, as ``tf.summary.trace_export`` writes one);
- ``train_lineage``: the final loss as the scalar ``lineage/loss``, and its fields as the run's
  hyper-parameters (HPARAMS' ``session_start_info``; what the mirror of ``tensorboard=True``
  shows: read from MindSpore files, the run's hyper-parameters are the lineage file's train and
  custom lineage together, :mod:`tallyboard_mindspore.hparams`, and come first);
- ``eval_lineage``: each number of its metrics as the scalar ``lineage/metric/<name>`` and the
  evaluation dataset's size as ``lineage/valid_dataset_size``;
- ``custom_lineage_data``: its values as a table in TEXT, tagged ``lineage/custom``.

"""

from __future__ import annotations

import json
from typing import Any

from .hparams import SESSION_START_TAG

#: Tags of what the lineage gives TensorBoard.
LOSS_TAG = "lineage/loss"
METRIC_PREFIX = "lineage/metric/"
VALID_SIZE_TAG = "lineage/valid_dataset_size"
DATASET_GRAPH_TAG = "dataset_graph"
CUSTOM_TAG = "lineage/custom"
#: TensorBoard's plugin name (and content) of a summary holding a RunMetadata with graphs.
RUN_METADATA_GRAPH = "graph_run_metadata_graph"


def encode_anf_graph(tag: str, step: int | None, wall_time: float, graph_proto: bytes) -> bytes:
    """An anf_ir ``GraphProto`` as ``Event.graph_def`` (see :mod:`tallyboard_mindspore.graphs`)."""
    from tallyboard_tfevents.encoding import graph_event

    from .graphs import anf_graph_def

    return graph_event(step, wall_time, anf_graph_def(graph_proto))


def encode_dataset_graph(tag: str, step: int | None, wall_time: float, graph: bytes) -> bytes:
    """A lineage ``DatasetGraph`` as the GRAPHS graph tagged ``dataset_graph``."""
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import DT_STRING, SummaryValue, TensorProto, metadata

    from .graphs import dataset_graph_def, run_metadata_with

    blob = run_metadata_with(dataset_graph_def(graph))
    tensor = TensorProto(dtype=DT_STRING, string_val=[blob])
    value = SummaryValue(
        tag=DATASET_GRAPH_TAG, metadata=metadata(RUN_METADATA_GRAPH, b"1"), tensor=tensor
    )
    return summary_event(step, wall_time, [value])


def _scalars(step: int | None, wall_time: float, values: dict[str, float]) -> bytes:
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import SummaryValue

    return summary_event(
        step, wall_time, [SummaryValue(tag=t, simple_value=v) for t, v in values.items()]
    )


def session_start_value(hparams: dict[str, bool | float | str]) -> Any:
    """The hparams plugin's ``session_start_info`` summary of ``hparams`` (metadata only, as
    torch writes it): ``HParamsPluginData{version 0, session_start_info{hparams}}``, each value a
    ``google.protobuf.Value`` (number 2, string 3, bool 4)."""
    from tallyboard.records.wire import field_bytes, field_double, field_varint
    from tallyboard_tfevents.proto import SummaryValue, metadata

    entries = b""
    for name, value in hparams.items():
        if isinstance(value, bool):
            packed = field_varint(4, int(value))
        elif isinstance(value, str):
            packed = field_bytes(3, value.encode("utf-8"))
        else:
            packed = field_double(2, float(value))
        entries += field_bytes(1, field_bytes(1, name.encode("utf-8")) + field_bytes(2, packed))
    data = field_varint(1, 0) + field_bytes(3, entries)
    return SummaryValue(tag=SESSION_START_TAG, metadata=metadata("hparams", data))


def encode_train_lineage(tag: str, step: int | None, wall_time: float, message: bytes) -> bytes:
    """A ``TrainLineage`` as the run's hyper-parameters (its fields,
    :func:`tallyboard_mindspore.hparams.train_hparams`) and its final loss as the scalar
    ``lineage/loss`` when it holds one."""
    from tallyboard_lineage.messages import TrainLineage
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import SummaryValue

    from .hparams import train_hparams

    lineage = TrainLineage.FromString(message)
    values = [session_start_value(train_hparams(message))]
    if lineage.algorithm.HasField("loss"):
        values.append(SummaryValue(tag=LOSS_TAG, simple_value=float(lineage.algorithm.loss)))
    return summary_event(step, wall_time, values)


def metrics_of(metric: str) -> dict[str, float]:
    """The numbers of an ``EvaluationLineage.metric`` (the JSON MindSpore writes,
    ``{"acc": 0.25}``), flattened (``{"a": {"b": 1}}`` gives ``a/b``); {} if it is no JSON
    object. Lists and texts are left out."""
    try:
        parsed = json.loads(metric) if metric else {}
    except ValueError:
        return {}
    out: dict[str, float] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}{key}/", inner)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[prefix.rstrip("/")] = float(value)

    if isinstance(parsed, dict):
        walk("", parsed)
    return out


def encode_eval_lineage(tag: str, step: int | None, wall_time: float, message: bytes) -> bytes:
    """An ``EvaluationLineage``'s metrics as scalars ``lineage/metric/<name>``, and the
    evaluation dataset's size as ``lineage/valid_dataset_size``."""
    from tallyboard_lineage.messages import EvaluationLineage

    lineage = EvaluationLineage.FromString(message)
    values = {METRIC_PREFIX + k: v for k, v in metrics_of(lineage.metric).items()}
    if lineage.valid_dataset.HasField("valid_dataset_size"):
        values[VALID_SIZE_TAG] = float(lineage.valid_dataset.valid_dataset_size)
    return _scalars(step, wall_time, values)


def encode_custom_lineage(tag: str, step: int | None, wall_time: float, message: bytes) -> bytes:
    """A ``UserDefinedInfo`` as a Markdown table of its values (TEXT, ``lineage/custom``); the
    same values are hyper-parameters (``custom/<key>``) of the run on HPARAMS."""
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import DT_STRING, SummaryValue, TensorProto, metadata

    from .hparams import CUSTOM_PREFIX, custom_hparams

    rows = [
        f"| {key[len(CUSTOM_PREFIX) :]} | {value} |"
        for key, value in custom_hparams(message).items()
    ]
    table = "\n".join(["| custom lineage | value |", "|---|---|", *rows])
    tensor = TensorProto(dtype=DT_STRING, string_val=[table.encode("utf-8")])
    value = SummaryValue(tag=CUSTOM_TAG, metadata=metadata("text"), tensor=tensor)
    return summary_event(step, wall_time, [value])
