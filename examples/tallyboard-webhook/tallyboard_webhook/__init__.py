"""An example tallyboard plugin with a network sink (see docs/plugins.md, section 5).

- a kind, ``confusion``: a confusion matrix per step, ``writer.add_confusion(tag, matrix, step)``;
- its encoder for TensorBoard: a table in the Text dashboard;
- a sink, ``webhook``: POSTs records as JSON batches to the URL after ``webhook+``, with settings
  beside it: ``sinks=[("webhook+http://host/ingest", {"token": "...", "deadline": 5})]``.
"""

import json
import urllib.request
from dataclasses import dataclass
from typing import Any

from tallyboard.plugin import Kind, NetworkSettings, NetworkSink, SinkSpec, hookimpl
from tallyboard.values import to_array

TALLYBOARD_CONTRACT = 1


def to_matrix(value: Any) -> tuple[tuple[int, ...], ...]:
    """A square array of counts (rows: true class, columns: predicted) as nested tuples."""
    counts = to_array(value, "matrix")
    square = counts.ndim == 2 and counts.shape[0] == counts.shape[1]
    if not square or (counts < 0).any() or (counts % 1).any():  # NaN % 1 is NaN: refused too
        raise ValueError(f"matrix must be a square array of whole counts >= 0, got {counts!r}")
    return tuple(tuple(int(n) for n in row) for row in counts.tolist())


def add_confusion(
    writer: Any, tag: str, matrix: Any, global_step: Any = None, walltime: Any = None
) -> None:
    """Log the confusion matrix ``matrix`` under ``tag``."""
    writer.emit("confusion", tag, to_matrix(matrix), global_step, walltime)


def encode_confusion_tfevents(tag: str, step: int | None, wall_time: float, matrix: Any) -> bytes:
    """A 2-D string tensor, which TensorBoard's Text dashboard draws as a table."""
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import DT_STRING, SummaryValue, TensorProto, metadata, shape

    cells = [str(count).encode() for row in matrix for count in row]
    tensor = TensorProto(dtype=DT_STRING, tensor_shape=shape([len(matrix)] * 2), string_val=cells)
    value = SummaryValue(tag=tag, metadata=metadata("text"), tensor=tensor)
    return summary_event(step, wall_time, [value])


def json_encoder(kind: str) -> Any:
    """The webhook's encoder of ``kind``: one record as a dict ready for JSON."""

    def encode(tag: str, step: int | None, wall_time: float, value: Any) -> dict[str, Any]:
        value = value if kind == "confusion" else float(getattr(value, "value", value))
        return {"kind": kind, "tag": tag, "step": step, "wall_time": wall_time, "value": value}

    return encode


@dataclass(frozen=True)
class WebhookSettings(NetworkSettings):  # deadline, max_pending, batch_size, ... and a token
    token: str = ""


class WebhookSink(NetworkSink):
    """POSTs ``{"run": ..., "records": [...]}`` to the URL; a 4xx answer is a refusal."""

    def __init__(self, options: Any) -> None:
        self.url = options.location or ""
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"give the webhook a URL: webhook+http://host/path, not {self.url!r}")
        self.token = options.settings.token
        super().__init__(options, where=self.url)

    def send(self, items: list[Any]) -> None:
        body = json.dumps({"run": self.options.run, "records": items}).encode()
        request = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        urllib.request.urlopen(request, timeout=self.call_timeout()).close()

    def is_refusal(self, exc: BaseException) -> bool:  # a 4xx: not sent again; else retried
        code = getattr(exc, "code", None) or 500
        return 400 <= code < 500 and code not in (408, 429)


@hookimpl
def register_kinds(register: Any) -> None:
    register(Kind(name="confusion", convert=to_matrix, methods={"add_confusion": add_confusion}))


@hookimpl
def register_sinks(register: Any) -> None:
    register(SinkSpec(name="webhook", open=WebhookSink, settings=WebhookSettings))


@hookimpl
def register_encoders(register: Any) -> None:
    register("confusion", "tfevents", encode_confusion_tfevents)  # new kind -> built-in sink
    for kind in ("confusion", "scalar"):  # new sink <- new and built-in kinds
        register(kind, "webhook", json_encoder(kind))
