"""An example tallyboard plugin distribution (see docs/plugins.md).

It contributes:

- a kind, ``interval``: a (low, high) pair per step, logged with
  ``writer.add_interval(tag, low, high, step)`` or ``writer.add_value("interval", tag, (low, high), step)``;
- its encoder for the built-in ``tfevents`` sink (TensorBoard shows ``<tag>/low`` and ``<tag>/high``);
- a sink, ``textlog``: one human-readable line per record in ``<log_dir>/tallyboard.log``;
- encoders for ``textlog``: of its own ``interval`` kind and of the built-in ``scalar`` kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tallyboard import Kind, SinkOptions, SinkSpec, hookimpl

#: The hook contract this plugin was written for; tallyboard refuses it if that changes.
TALLYBOARD_CONTRACT = 1

KIND = "interval"
SINK = "textlog"


class Interval(tuple):  # type: ignore[type-arg]
    """A validated (low, high) pair of floats with low <= high."""

    __slots__ = ()

    def __new__(cls, low: Any, high: Any) -> Interval:
        from tallyboard.values import to_float

        lo, hi = to_float(low, "low"), to_float(high, "high")
        if not lo <= hi:
            raise ValueError(f"interval low {lo} must not exceed high {hi}")
        return super().__new__(cls, (lo, hi))

    @property
    def low(self) -> float:
        return float(self[0])

    @property
    def high(self) -> float:
        return float(self[1])


def convert(value: Any) -> Interval:
    """``add_value("interval", tag, value)``: ``value`` is a (low, high) pair."""
    try:
        low, high = value
    except (TypeError, ValueError):
        raise TypeError(f"an interval is a (low, high) pair, got {value!r}") from None
    return Interval(low, high)


def add_interval(
    writer: Any, tag: str, low: Any, high: Any, global_step: Any = None, walltime: Any = None
) -> None:
    """Log the interval [low, high] under ``tag``."""
    writer.emit(KIND, tag, Interval(low, high), global_step, walltime)


def encode_interval_tfevents(tag: str, step: int | None, wall_time: float, iv: Interval) -> bytes:
    """Two TensorBoard scalars, ``<tag>/low`` and ``<tag>/high``, in one Event."""
    from tallyboard_tfevents.encoding import summary_event
    from tallyboard_tfevents.proto import SummaryValue

    values = [
        SummaryValue(tag=f"{tag}/low", simple_value=iv.low),
        SummaryValue(tag=f"{tag}/high", simple_value=iv.high),
    ]
    return summary_event(step, wall_time, values)


def _prefix(tag: str, step: int | None, wall_time: float) -> str:
    return f"{wall_time:.6f} step={'-' if step is None else step} {tag}"


def encode_scalar_textlog(tag: str, step: int | None, wall_time: float, value: Any) -> str:
    """``<wall_time> step=<step> <tag> = <value>``."""
    return f"{_prefix(tag, step, wall_time)} = {float(getattr(value, 'value', value))!r}\n"


def encode_interval_textlog(tag: str, step: int | None, wall_time: float, iv: Interval) -> str:
    """``<wall_time> step=<step> <tag> in [<low>, <high>]``."""
    return f"{_prefix(tag, step, wall_time)} in [{iv.low!r}, {iv.high!r}]\n"


class TextLogSink:
    """Appends lines to ``tallyboard.log`` (local path or fsspec URL), batched like every sink."""

    def __init__(self, options: SinkOptions) -> None:
        from tallyboard.records import storage

        self.path, handle = storage.create_unique(options.log_dir, "tallyboard", ".log")
        out = storage.BatchWriter(
            handle, max_lines=options.max_queue, flush_secs=options.flush_secs
        )
        self.write, self.flush, self.close, self.abandon = (
            out.write,
            out.flush,
            out.close,
            out.abandon,
        )


@hookimpl
def register_kinds(register: Callable[[Kind], None]) -> None:
    register(
        Kind(
            name=KIND,
            convert=convert,
            methods={"add_interval": add_interval},
            description="a (low, high) pair",
        )
    )


@hookimpl
def register_sinks(register: Callable[[SinkSpec], None]) -> None:
    register(
        SinkSpec(
            name=SINK, open=TextLogSink, schemes=(SINK,), description="human-readable log lines"
        )
    )


@hookimpl
def register_encoders(register: Callable[[str, str, Callable[..., Any]], None]) -> None:
    register(KIND, "tfevents", encode_interval_tfevents)  # a new kind teaches a built-in sink
    register(KIND, SINK, encode_interval_textlog)
    register("scalar", SINK, encode_scalar_textlog)  # a new sink teaches itself a built-in kind
