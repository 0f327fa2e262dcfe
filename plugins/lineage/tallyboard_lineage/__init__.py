"""The lineage kinds: MindSpore's training lineage and loss landscapes.

Kinds ``train_lineage``, ``eval_lineage``, ``dataset_graph``, ``custom_lineage_data`` and
``landscape`` take the message classes in :mod:`tallyboard_lineage.messages` (``TrainLineage``,
``EvaluationLineage``, ``DatasetGraph``, ``UserDefinedInfo``, ``LossLandscape``), or MindSpore's
own classes of the same names (``mindspore.train.lineage_pb2``, ``summary_pb2``), and turn them
into serialized bytes: each kind's payload (``bytes``, what ``convert`` returns, encoders
receive and decoders return), whose row (``data``: the serialized message) is declared here once
(:func:`lineage_row`), so a format that writes any kind's row (JSONL) holds them with no encoder
or decoder of its own. Reach them through ``SummaryRecord.add_value(kind, name, message)``; the
``mindspore`` sink writes them (lineage kinds to the ``_lineage`` file, landscapes to the
summary file). The message classes are loaded on first use.
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl

#: kind -> name of the message class it takes.
KINDS = {
    "train_lineage": "TrainLineage",
    "eval_lineage": "EvaluationLineage",
    "dataset_graph": "DatasetGraph",
    "custom_lineage_data": "UserDefinedInfo",
    "landscape": "LossLandscape",
}
#: The protobuf package of MindSpore's messages (and of tallyboard's classes, which copy them).
PACKAGE = "mindspore.irpb"
#: Classes users build values from (exposed through ``tallyboard.faces.summary_record``).
PUBLIC = (
    "TrainLineage", "EvaluationLineage", "DatasetGraph", "Operation", "OperationParameter", "StrList",
    "UserDefinedInfo", "LossLandscape", "TensorProto",
)  # fmt: skip


class _Classes(dict):  # type: ignore[type-arg]
    """The public message classes, imported (protobuf and all) on first lookup."""

    def _load(self) -> None:
        if not dict.__len__(self):
            from . import messages

            self.update({name: getattr(messages, name) for name in PUBLIC})

    def __contains__(self, name: object) -> bool:
        if name not in PUBLIC:
            return False
        self._load()
        return True

    def __getitem__(self, name: str) -> Any:
        self._load()
        return dict.__getitem__(self, name)

    def __bool__(self) -> bool:
        return True


MESSAGE_CLASSES = _Classes()


class Convert:
    """Check that a value is the kind's message and serialize it.

    The message may be tallyboard's class or MindSpore's own (``mindspore.train.lineage_pb2``,
    ``summary_pb2``, what MindSpore's ``SummaryCollector`` builds): both are the protobuf message
    ``mindspore.irpb.<class>``, told apart from any other class by that full name, and serialize
    to the same bytes. MindSpore is never imported for the check.
    """

    message_classes = MESSAGE_CLASSES

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.class_name = KINDS[kind]
        self.full_name = f"{PACKAGE}.{self.class_name}"

    def __call__(self, value: Any) -> bytes:
        if not isinstance(value, MESSAGE_CLASSES[self.class_name]):
            descriptor = getattr(type(value), "DESCRIPTOR", None)
            if getattr(descriptor, "full_name", None) != self.full_name or not callable(
                getattr(value, "SerializeToString", None)
            ):
                plugin = "landscape" if self.kind == "landscape" else self.kind
                raise TypeError(f"Plugin {plugin!r} expects a {self.class_name} value.")
        return value.SerializeToString()  # type: ignore[no-any-return]


def __getattr__(name: str) -> Any:
    if name in PUBLIC:
        return MESSAGE_CLASSES[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def lineage_row(message: bytes) -> dict[str, Any]:
    """A lineage kind's row: ``data``, the serialized message (e.g.
    ``TrainLineage.FromString(row["data"])``)."""
    return {"data": message}


class FromRow:
    """A decoded row of the kind (``data``: the serialized message) as the message again, so
    ``tallyboard convert`` and the board can write it in another format."""

    def __init__(self, kind: str) -> None:
        self.class_name = KINDS[kind]

    def __call__(self, row: dict[str, Any]) -> tuple[str, Any]:
        return row["tag"], MESSAGE_CLASSES[self.class_name].FromString(bytes(row["data"]))


@hookimpl
def register_kinds(register: Any) -> None:
    for kind, class_name in KINDS.items():
        register(
            Kind(
                name=kind,
                convert=Convert(kind),
                description=f"MindSpore {class_name} message",
                payload=bytes,
                to_row=lineage_row,
                from_row=FromRow(kind),
            )
        )
