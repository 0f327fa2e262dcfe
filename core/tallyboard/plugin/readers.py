"""The reader contract: what a reader plugin registers (ReaderSpec) and what its readers return.

A reader plugin registers a :class:`ReaderSpec` whose ``matches(basename)`` says which files it
reads and whose ``open(fs, path, decoders)`` returns a :class:`FileReader`. The reader keeps its
byte offset, so :meth:`FileReader.read_new` called again on a growing file yields only what was
appended since; a torn last record is left for the next call. Core names no format.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from tallyboard.warn import ReadWarning


@dataclass
class Batch:
    """What one read of one file produced: scalars as columns, other kinds as rows."""

    tags: list[str] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    wall_times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: more scalars, decoded in bulk by a reader: ``(tag names, codes, step, wall_time, value)``,
    #: numpy arrays of int32 codes into the names, int64, float64, float64.
    columns: list[tuple[list[str], Any, Any, Any, Any]] = field(default_factory=list)
    #: values no decoder took, counted by ``(plugin name, tag)`` (the plugin name, or what holds
    #: the value when it names none), so nothing is dropped silently.
    undecoded: dict[tuple[str, str], int] = field(default_factory=dict)

    def add_row(self, kind: str, row: dict[str, Any]) -> None:
        self.rows.setdefault(kind, []).append(row)

    def scalars(self) -> tuple[Any, Any, Any, Any]:
        """Every scalar of this batch as numpy arrays ``(tag, step, wall_time, value)``, in file
        order (tags as an object array of str)."""
        import numpy as np

        self.flush_lists()
        if not self.columns:
            return (
                np.empty(0, object),
                np.empty(0, np.int64),
                np.empty(0, np.float64),
                np.empty(0, np.float64),
            )
        parts = self.columns
        return (
            np.concatenate([np.asarray(names, dtype=object)[codes] for names, codes, *_ in parts]),
            np.concatenate([p[2] for p in parts]),
            np.concatenate([p[3] for p in parts]),
            np.concatenate([p[4] for p in parts]),
        )

    def flush_lists(self) -> None:
        """Move the list scalars to the end of ``columns``, keeping file order."""
        import numpy as np

        if not self.tags:
            return
        index: dict[str, int] = {}
        codes = [index.setdefault(t, len(index)) for t in self.tags]
        self.columns.append(
            (
                list(index),
                np.fromiter(codes, np.int32, len(codes)),
                np.fromiter(self.steps, np.int64, len(self.steps)),
                np.fromiter(self.wall_times, np.float64, len(self.wall_times)),
                np.fromiter(self.values, np.float64, len(self.values)),
            )
        )
        for column in (self.tags, self.steps, self.wall_times, self.values):
            del column[:]


class FileReader(Protocol):
    """An open file of a run; ``read_new`` returns the records appended since the last call."""

    def read_new(self) -> Batch: ...


#: bytes a :class:`ChunkedFileReader` reads at a time.
CHUNK = 4 << 20


class ChunkedFileReader:
    """A file read in chunks of :attr:`chunk_size` bytes, from where the last read stopped.

    A format's reader implements :meth:`_scan`, which decodes the whole records (lines, ...) of
    a chunk into the batch and returns the bytes it consumed; what is left (a torn tail) starts
    the next chunk, or waits for the next :meth:`read_new` when the file ends there. So memory
    holds one chunk, a live file is read safely, and each read returns only what is new.
    """

    #: bytes read at a time (a class attribute, so tests can make records straddle chunks).
    chunk_size: int = CHUNK

    def __init__(self, fs: Any, path: str) -> None:
        self.fs, self.path = fs, path
        #: file offset of the first byte not yet consumed.
        self.offset = 0
        #: True once the rest of the file cannot be trusted (say, a bad record length).
        self.dead = False
        #: set by :meth:`_scan` when it stops at a unit it has not all of: that unit's size, so
        #: a unit longer than a chunk is read in one call, not grown chunk by chunk.
        self._need = 0

    def read_new(self) -> Batch:
        """Decode everything whole appended since the last call into a fresh :class:`Batch`."""
        batch = Batch()
        if self.dead:
            return batch
        with self.fs.open(self.path, "rb") as f:
            f.seek(self.offset)
            rest = b""
            while not self.dead:
                data = f.read(max(self.chunk_size, self._wanted(rest)))
                if not data:
                    break
                if rest:
                    data = rest + data
                used = self._scan(data, batch)
                self.offset += used
                rest = data[used:]
                del data  # one chunk in memory at a time
                batch.flush_lists()  # a chunk's scalars as numpy columns, not Python objects
        return batch

    def _wanted(self, rest: bytes) -> int:
        """Bytes still missing from the unit ``rest`` starts, as :attr:`_need` says."""
        need, self._need = self._need, 0
        return need - len(rest) if need > len(rest) else 0

    def _scan(self, data: bytes, batch: Batch) -> int:
        """Decode the whole units of ``data`` into ``batch``; return the bytes consumed."""
        raise NotImplementedError


@dataclass(frozen=True)
class ReaderSpec:
    """A file format tallyboard can read back.

    ``priority`` is for formats a writer puts side by side holding the same values (event files
    next to their csv or MindSpore mirror, ``sinks=["tfevents", "csv"]``): such formats compete,
    and a run directory is read in the one of lowest priority it holds (that has a decoder for
    the kind asked for), so no value is counted twice. ``None`` marks a format that holds what no
    other does (the projector's config): it is always read.
    """

    name: str
    matches: Callable[[str], bool]
    open: Callable[[Any, str, dict[str, Callable[..., Any]]], FileReader]
    description: str = ""
    priority: int | None = None


def warn_corrupt(path: str, offset: int, what: str) -> None:
    """Report a damaged record, naming the file and byte offset."""
    warnings.warn(f"{path}: {what} at offset {offset}", ReadWarning, stacklevel=3)
