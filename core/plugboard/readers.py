"""Reading runs back: reader plugins, run discovery and incremental reads.

A reader plugin registers a :class:`ReaderSpec` whose ``matches(basename)`` says which files it
reads and whose ``open(fs, path, decoders)`` returns a :class:`FileReader`. The reader keeps its
byte offset, so :meth:`FileReader.read_new` called again on a growing file yields only what was
appended since; a torn last record is left for the next call. Core names no format.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol


class ReadWarning(UserWarning):
    """A record could not be read (corrupt, unparsable); the rest of the data is still read."""


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
    """A file format plugboard can read back.

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


def _format_names(
    formats: str | Iterable[str] | None, readers: dict[str, ReaderSpec]
) -> set[str] | None:
    if formats is None:
        return None
    names = {formats} if isinstance(formats, str) else formats
    if not isinstance(names, Iterable) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"formats must be None, a str or an iterable of str, got {formats!r}")
    unknown = sorted(set(names) - set(readers))
    if unknown:
        raise ValueError(
            f"formats: unknown format(s) {unknown}; readable formats: {sorted(readers)}"
        )
    return set(names)


def _reader_for(readers: dict[str, ReaderSpec], basename: str) -> ReaderSpec | None:
    for spec in readers.values():
        if spec.matches(basename):
            return spec
    return None


class RunReader:
    """Reads every recognised file under a log dir; calling :meth:`read` again yields only new data.

    Runs are directories holding readable files, named by their path relative to the log dir
    (``"."`` for the log dir itself).
    """

    def __init__(
        self, logdir: str, formats: str | Iterable[str] | None = None, kind: str | None = None
    ) -> None:
        import fsspec

        from .registry import get_registry

        if not isinstance(logdir, str) or not logdir:
            raise TypeError(f"logdir must be a non-empty str path or URL, got {logdir!r}")
        reg = get_registry()
        self._readers = reg.readers
        self._decoders = reg.decoders
        self.formats = _format_names(formats, self._readers)
        self.kind = kind
        self.fs, root = fsspec.core.url_to_fs(logdir)
        self.root = root.rstrip("/") or "/"
        if not self.fs.isdir(self.root):
            raise ValueError(f"logdir {logdir!r} is not a directory")
        self._open: dict[str, tuple[str, FileReader]] = {}
        self._chosen: dict[str, str] = {}  # run directory -> the competing format read there
        #: run directory -> competing formats found there but not read (same values again).
        self.skipped: dict[str, set[str]] = {}

    def _choose(self, parent: str, present: set[str]) -> str | None:
        """The competing format read in ``parent``: kept once chosen, so re-reads stay whole."""
        chosen = self._chosen.get(parent)
        if chosen is None and present:
            able = {
                f
                for f in present
                if (f, self.kind) in self._decoders or self.kind in (None, "scalar")
            }
            chosen = min(able or present, key=lambda f: (self._readers[f].priority, f))
            self._chosen[parent] = chosen
        if chosen is not None and present - {chosen}:
            self.skipped.setdefault(parent, set()).update(present - {chosen})
        return chosen

    def discover(self) -> list[tuple[str, FileReader]]:
        """``(run, reader)`` for every recognised file, new files included: read them one by one
        (``reader.read_new()``) to hold one file's records at a time."""
        found: dict[str, list[tuple[str, ReaderSpec]]] = {}
        for path in sorted(self.fs.find(self.root)):
            spec = _reader_for(self._readers, path.rsplit("/", 1)[-1])
            if spec is not None and (self.formats is None or spec.name in self.formats):
                found.setdefault(path.rsplit("/", 1)[0], []).append((path, spec))
        for parent, files in found.items():
            chosen = None
            if self.formats is None:  # asked for no format: one of the competing ones
                chosen = self._choose(parent, {s.name for _, s in files if s.priority is not None})
            for path, spec in files:
                if path in self._open or (
                    spec.priority is not None and chosen not in (None, spec.name)
                ):
                    continue
                run = parent[len(self.root) :].strip("/") or "."
                decoders = {k: fn for (fmt, k), fn in self._decoders.items() if fmt == spec.name}
                self._open[path] = (run, spec.open(self.fs, path, decoders))
        return list(self._open.values())

    def read(self) -> list[tuple[str, Batch]]:
        """``(run, batch)`` per file, holding what was appended since the last call."""
        return [(run, reader.read_new()) for run, reader in self.discover()]
