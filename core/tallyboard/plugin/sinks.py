"""What a sink plugin registers: where records go."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class SinkOptions:
    """Everything a sink factory is told when a writer opens it.

    ``log_dir`` is the run directory (a local path or an fsspec URL). The queueing options carry
    the writer's constructor arguments; ``extra`` holds face- or sink-specific options (a
    SummaryWriter sets ``"sink"``, the entry of ``sinks=`` that chose this sink, and
    ``"writer_log_dir"``, its own log_dir, which differs from ``log_dir`` for a sink given a URL).
    """

    log_dir: str
    max_queue: int = 10
    flush_secs: float = 120.0
    filename_suffix: str = ""
    purge_step: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Sink(Protocol):
    """An open destination for encoded records.

    ``write`` receives what the (kind, sink) encoder returned, or a :class:`Deferred` for heavy
    kinds, which the sink resolves when it likes (for instance on a background thread).

    Optional batch path, for the hottest kinds: a sink that also has ``write_row(row)`` and
    ``row_key(batch)`` (as :class:`tallyboard.records.recordfile.RecordFile` does) receives, for an
    encoder carrying ``encode.batch``, the caller's validated values as rows ``(key, tag, step,
    wall_time, payload)`` instead of encoded bytes; ``batch(rows)`` later turns consecutive rows
    into their framed records at once, in order (the scalar kind frames thousands per call).
    A sink used by ``SummaryRecord`` may also offer ``write_record(step, wall_time, items)`` and
    ``write_value(step, wall_time, (kind, tag, payload))``, which take one ``record()`` step (or a
    step of one value) without building a ``Recorded``; without them it gets ``write``.
    """

    def write(self, data: Any) -> None:
        """Take one encoded record (or a :class:`Deferred` to resolve); called in the caller's
        thread, possibly from several threads at once, so it must be thread-safe and cheap."""
        ...

    def flush(self) -> None:
        """Return once everything written so far is stored.

        Raises:
            OSError: storing failed (with several sinks the writer reports it and goes on).
        """
        ...

    def close(self) -> None:
        """Flush and release everything; called once per open, and must be idempotent."""
        ...


class Deferred:
    """An encode postponed until the sink is ready for it; call it to get the encoded data."""

    __slots__ = ("encode", "args", "size_hint")

    def __init__(self, encode: Callable[..., Any], args: tuple[Any, ...], size_hint: int = 0):
        self.encode = encode
        self.args = args
        self.size_hint = size_hint

    def __call__(self) -> Any:
        """Run the encode now and return the encoded data."""
        return self.encode(*self.args)


def resolve(data: Any) -> Any:
    """Return encoded data, running a :class:`Deferred` encode if needed."""
    return data() if type(data) is Deferred else data


@dataclass(frozen=True)
class SinkSpec:
    """A sink type: ``open(options)`` returns a :class:`Sink` for one run directory.

    ``schemes`` lists URL schemes that select this sink by URL (``"csv"`` for ``csv://...``).
    """

    name: str
    open: Callable[[SinkOptions], Sink]
    schemes: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"Sink name must be an identifier, got {self.name!r}")
        if not callable(self.open):
            raise TypeError(f"Sink {self.name!r}: open must be callable")


def split_sink_url(entry: str) -> tuple[str, str | None]:
    """A ``sinks=`` entry as (sink name, where it writes): ``"csv"`` -> ("csv", None),
    ``"csv+s3://bucket/run"`` -> ("csv", "s3://bucket/run"), ``"csv:///tmp/run"`` -> ("csv",
    "/tmp/run") (the sink registered for that URL scheme)."""
    if "://" not in entry:
        return entry, None
    scheme, rest = entry.split("://", 1)
    if "+" in scheme:
        name, inner = scheme.split("+", 1)
        location = f"{inner}://{rest}"
    else:
        name, location = scheme, rest
    if not location or location.endswith("://"):
        raise ValueError(f"sink URL {entry!r} names no location")
    return name, location
