"""The reader contract: what a reader plugin registers (ReaderSpec) and what its readers return.

A reader plugin registers a :class:`ReaderSpec` whose ``matches(basename)`` says which files it
reads and whose ``open(fs, path, decoders)`` returns a :class:`FileReader`. The reader keeps its
byte offset, so :meth:`FileReader.read_new` called again on a growing file yields only what was
appended since; a torn last record is left for the next call. Core names no format.

``open`` gets the format's decoders by kind, in the order a reader asks them
(:meth:`tallyboard.plugin.registry.Registry.decoders_of`). What each built-in format hands a
decoder, which row fields a decoder may set (``tag``, not ``step``, ``wall_time`` or ``run``),
and which decoder takes a value several could: docs/plugins.md, "Decoders".

A reader class may also read many of its files in one call (``read_many``, returning
:class:`Batches`): core then reads a sweep's small files in groups, a vectorised pass each.
Readers without it are read file by file, as before.
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tallyboard.plugin.kinds import PAYLOAD_KEY
from tallyboard.warn import ReadWarning

#: The kind whose values a :class:`Batch` holds as columns (``tags`` ... ``values``,
#: ``columns``): the essential scalar kind. The one kind name the reading contract knows, so
#: core's readers, ``read``, ``convert`` and the board name it from here.
SCALAR_KIND = "scalar"


class PayloadRows:
    """A decoder of a kind that declares ``payload`` and ``to_row``, as readers call it: what
    it returns as the kind's payload (one, a list, or ``(tag, payload)``) becomes the kind's row
    (``to_row``) carrying the payload under :data:`PAYLOAD_KEY`; a dict (or None) passes as it
    is, so decoders that return rows keep working. Attributes of the decoder (``event_field``,
    ``summary_values``) stay visible."""

    def __init__(self, kind: Any, decode: Callable[..., Any]) -> None:
        self.kind, self.decode = kind, decode
        self.__dict__.update(getattr(decode, "__dict__", {}))

    @classmethod
    def of(cls, kind: Any, decode: Callable[..., Any]) -> Callable[..., Any]:
        """``decode`` as readers call it: wrapped when ``kind`` (a ``Kind`` or None) declares
        ``payload`` and ``to_row``, else as it is (a kind whose values readers keep as columns,
        the scalar kind, gets its payloads unwrapped)."""
        if kind is None or kind.payload is None or kind.to_row is None:
            return decode
        return cls(kind, decode)

    def _row(self, result: Any) -> Any:
        kind, types = self.kind, self.kind.payload_types
        if isinstance(result, types):
            return {**kind.to_row(result), PAYLOAD_KEY: result}
        if (
            isinstance(result, tuple)
            and len(result) == 2
            and isinstance(result[0], str)
            and isinstance(result[1], types)
        ):
            return {**kind.to_row(result[1]), "tag": result[0], PAYLOAD_KEY: result[1]}
        return result

    def __call__(self, value: Any, step: int, wall_time: float) -> Any:
        result = self.decode(value, step, wall_time)
        if isinstance(result, list):
            return [self._row(r) for r in result]
        return self._row(result)


@dataclass
class Batch:
    """What one read of one file produced: scalars as columns, other kinds as rows."""

    tags: list[str] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    wall_times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: More scalars, decoded in bulk by a reader, as ``(tag names, codes, step, wall_time,
    #: value)``: the names, then numpy arrays of int32 codes into them, int64, float64, float64.
    columns: list[tuple[list[str], Any, Any, Any, Any]] = field(default_factory=list)
    #: values no decoder took, counted by ``(plugin name, tag)`` (the plugin name, or what holds
    #: the value when it names none), so nothing is dropped silently.
    undecoded: dict[tuple[str, str], int] = field(default_factory=dict)
    #: TensorBoard's own summaries as the file holds them, from a reader asked to keep them
    #: (a reader of a format whose values are TensorBoard summaries has a ``keep_summaries``
    #: attribute; event files): every value not read as a scalar, as
    #: ``(kind, plugin, event)``: the kind that decodes it (None: no installed kind does),
    #: its plugin name (or what holds it) and a serialized ``Event`` holding it alone, in
    #: file order. Such values are then not in :attr:`rows` nor :attr:`undecoded`.
    summaries: list[tuple[str | None, str, bytes]] = field(default_factory=list)
    #: From the same readers, per scalar tag, its first value that carries metadata (its
    #: description and display name) as a serialized ``Event`` holding it alone; the values
    #: themselves are in the scalar columns.
    scalar_heads: dict[str, bytes] = field(default_factory=dict)
    #: Per tag, the display name and description its file gives it (only tags given one):
    #: ``tallyboard.read`` hands them on with its table (``DataFrame.attrs["metadata"]``).
    metadata: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: The wall time of the file's first record, when this batch begins at the file's start and
    #: the format has one (an event file's header event): a run's start, as TensorBoard takes
    #: it. None otherwise.
    start_time: float | None = None

    def add_row(self, kind: str, row: dict[str, Any]) -> None:
        """Add one decoded value of ``kind`` (its fields, with ``tag``, ``step``, ``wall_time``)."""
        self.rows.setdefault(kind, []).append(row)

    def extend(self, other: Batch) -> None:
        """Append what ``other`` holds after what this batch holds (another file of the same
        run, read later): scalar columns, rows of every kind and undecoded counts. ``other``
        gives up its scalar columns to this batch."""
        self.flush_lists()
        other.flush_lists()
        self.columns.extend(other.columns)
        for kind, rows in other.rows.items():
            self.rows.setdefault(kind, []).extend(rows)
        for key, n in other.undecoded.items():
            self.undecoded[key] = self.undecoded.get(key, 0) + n
        self.summaries.extend(other.summaries)
        for tag, head in other.scalar_heads.items():
            self.scalar_heads.setdefault(tag, head)
        for tag, names in other.metadata.items():
            self.metadata.setdefault(tag, names)
        if self.start_time is None:
            self.start_time = other.start_time

    def empty(self) -> bool:
        """Whether the batch holds nothing: no scalar, no row, no undecoded value, no start."""
        return self.start_time is None and not (
            self.tags
            or any(len(c[1]) for c in self.columns)
            or any(self.rows.values())
            or self.undecoded
            or self.summaries
        )

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


@dataclass
class Batches:
    """What one read of several files produced, file by file: the scalars of file ``i`` are
    rows ``[start(i), start(i) + counts[i])`` of the shared columns (``names``, ``codes``,
    ``step``, ``wall_time``, ``value``: the tag names, int32 codes into them, int64, float64,
    float64), followed by whatever ``batches[i]`` holds (None: nothing more).

    A reader that decodes many small files in one pass (:meth:`FileReader.read_many`) puts
    their scalars in the shared columns at once, so a sweep of ten thousand files costs a few
    array operations, not ten thousand of each; other readers give one Batch per file
    (:meth:`of`).
    """

    batches: list[Batch | None]
    names: list[str] = field(default_factory=list)
    codes: Any = None
    step: Any = None
    wall_time: Any = None
    value: Any = None
    #: shared scalar rows per file (None: no shared columns).
    counts: Any = None

    @classmethod
    def of(cls, batches: list[Batch]) -> Batches:
        """One Batch per file, nothing shared."""
        return cls(list(batches))

    @classmethod
    def concat(cls, parts: Sequence[Batches]) -> Batches:
        """Several reads' Batches as one, in order (tag codes remapped to one list of names)."""
        import numpy as np

        if len(parts) == 1:
            return parts[0]
        out = cls([b for part in parts for b in part.batches])
        shared = [p for p in parts if p.shared()]
        if not shared:
            return out
        names: dict[str, int] = {}
        codes = []
        for p in shared:
            remap = np.array([names.setdefault(n, len(names)) for n in p.names], np.int32)
            codes.append(remap[p.codes])
        out.names = list(names)
        out.codes = np.concatenate(codes)
        out.step = np.concatenate([p.step for p in shared])
        out.wall_time = np.concatenate([p.wall_time for p in shared])
        out.value = np.concatenate([p.value for p in shared])
        out.counts = np.concatenate(
            [p.counts if p.shared() else np.zeros(len(p), np.int64) for p in parts]
        )
        return out

    def __len__(self) -> int:
        return len(self.batches)

    def shared(self) -> bool:
        """Whether some scalars are in the shared columns."""
        return self.counts is not None and len(self.codes) > 0

    def batch(self, i: int) -> Batch:
        """File ``i``'s values as one :class:`Batch` (its shared scalars' steps, wall times and
        values as views, no copy; its tag codes into the names of its own tags)."""
        import numpy as np

        own = self.batches[i]
        if not self.shared() or not self.counts[i]:
            return own if own is not None else Batch()
        starts, present, local = self._per_file()
        start, stop = int(starts[i]), int(starts[i + 1])
        # the file's own tags only, as a Batch read alone names them
        codes: Any
        if present is None:
            tags, inverse = np.unique(self.codes[start:stop], return_inverse=True)
            names = [self.names[k] for k in tags.tolist()]
            codes = inverse.astype(np.int32).ravel()
        else:
            names = [self.names[k] for k in np.flatnonzero(present[i]).tolist()]
            codes = local[start:stop]
        out = Batch(
            columns=[
                (
                    names,
                    codes,
                    self.step[start:stop],
                    self.wall_time[start:stop],
                    self.value[start:stop],
                )
            ]
        )
        if own is not None:
            out.extend(own)
        return out

    def _per_file(self) -> tuple[Any, Any, Any]:
        """Each file's first shared row; and, unless files x tags is large, which tags each
        file has and every row's tag code among its file's tags (found once for all files,
        not a sort per file)."""
        import numpy as np

        found = self.__dict__.get("_per_file_cache")
        if found is None:
            counts = np.asarray(self.counts, np.int64)
            starts = np.concatenate([[0], np.cumsum(counts)])
            files, tags = len(counts), len(self.names)
            if files * tags > 1 << 22:
                found = (starts, None, None)
            else:
                file_of = np.repeat(np.arange(files), counts)
                present = np.zeros((files, tags), bool)
                present[file_of, self.codes] = True
                rank = np.cumsum(present, axis=1, dtype=np.int32) - 1
                found = (starts, present, rank[file_of, self.codes])
            self.__dict__["_per_file_cache"] = found
        return found  # type: ignore[no-any-return]

    def split(self) -> list[Batch]:
        """Every file's :meth:`batch`, in order."""
        return [self.batch(i) for i in range(len(self.batches))]


class FileReader(Protocol):
    """An open file of a run; ``read_new`` returns the records appended since the last call.

    A reader class may also offer ``read_many(readers) -> Batches`` (a classmethod taking
    several readers of that class, each of its own file): it reads them all at once and must
    give, file by file, what ``read_new`` would give (the same values in the same order), and
    leave each reader as ``read_new`` would. Core calls it for groups of small files, so a
    format can decode many files in one vectorised pass; readers without it are read one by
    one. A ``read_many`` that takes a ``light`` keyword is called with ``light=True`` by a
    listing (``tallyboard ls``), which needs the tags, steps and wall times only: it may then
    skip the data CRC of records whose tag and step bytes are those of records it checked
    (and leave their values unchecked); it never lists a tag or step it did not check.
    """

    def read_new(self) -> Batch:
        """The records appended since the last call (all of them the first time); a record
        still being written is left for the next call."""
        ...


#: bytes a :class:`ChunkedFileReader` reads at a time.
CHUNK = 4 << 20


class ChunkedFileReader:
    """A file read in chunks of :attr:`chunk_size` bytes, from where the last read stopped.

    A format's reader implements :meth:`_scan`, which decodes the whole records (lines, ...) of
    a chunk into the batch and returns the bytes it consumed; what is left (a torn tail) starts
    the next chunk, or waits for the next :meth:`read_new` when the file ends there. So memory
    holds one chunk, a live file is read safely, and each read returns only what is new.

    A unit longer than :attr:`max_unit` is damage, never read into memory: a record whose header
    claims more is reported and the rest of the file skipped (no later boundary can be trusted);
    a line (formats that set :attr:`unit_end`) is reported and skipped up to its end. Nothing past
    the file's size is ever asked for, so a header claiming more than the file holds is a torn
    tail that costs no memory.
    """

    #: bytes read at a time (a class attribute, so tests can make records straddle chunks).
    chunk_size: int = CHUNK
    #: the longest unit (record, line) read whole; protobuf's own limit for a message is 2 GiB.
    max_unit: int = 1 << 31
    #: The byte ending a unit, for formats that can skip an overlong one (``b"\n"`` for lines).
    unit_end: bytes | None = None
    #: when set (on an instance, by a caller that wants the new bytes in windows), one
    #: :meth:`read_new` consumes about this many bytes at most (whole chunks and units) and
    #: sets ``capped`` when it stopped for it; the next call goes on from there.
    read_limit: int | None = None

    def __init__(self, fs: Any, path: str) -> None:
        self.fs, self.path = fs, path
        #: file offset of the first byte not yet consumed.
        self.offset = 0
        #: True once the rest of the file cannot be trusted (say, a bad record length).
        self.dead = False
        #: set by :meth:`_scan` when it stops at a unit it has not all of: that unit's size, so
        #: a unit longer than a chunk is read in one call, not grown chunk by chunk.
        self._need = 0
        #: True while the bytes up to the next :attr:`unit_end` belong to an overlong unit.
        self._skipping = False

    def read_new(self) -> Batch:
        """Decode everything whole appended since the last call into a fresh :class:`Batch`."""
        batch = Batch()
        if self.dead:
            return batch
        limit, first = self.read_limit, self.offset
        with self.fs.open(self.path, "rb") as f:
            size = size_of(f)  # never read past it: a live file grows later
            f.seek(self.offset)
            rest = b""
            while not self.dead:
                if limit is not None and self.offset - first >= limit:
                    self.capped = True  # the caller reads on from here in its next call
                    break
                wanted = self._wanted(rest)
                if len(rest) + wanted > self.max_unit:
                    warn_corrupt(
                        self.path,
                        self.offset,
                        f"a record claims {len(rest) + wanted} bytes (framing included), more than the "
                        f"{self.max_unit} a record may hold; the rest of the file is skipped",
                    )
                    self.dead = True
                    break
                n = max(self.chunk_size, wanted, len(rest))  # a long unit: in doubling reads
                if limit is not None:
                    n = max(min(n, limit - (self.offset - first)), wanted, 1)
                if isinstance(size, int):
                    left = size - self.offset - len(rest)
                    if wanted > left:
                        break  # the unit is not all there yet: a torn tail of a live file
                    n = min(n, left)
                data = f.read(n) if n > 0 else b""
                if not data:
                    break
                if self._skipping:
                    data = self._skip_rest(data)
                if rest:
                    data = rest + data
                used = self._scan(data, batch)
                self.offset += used
                rest = data[used:]
                del data  # one chunk in memory at a time
                while self.unit_end is not None and len(rest) > self.max_unit:
                    rest = self._skip_long(rest)
                    used = self._scan(rest, batch)  # the whole units after it, now
                    self.offset += used
                    rest = rest[used:]
                batch.flush_lists()  # a chunk's scalars as numpy columns, not Python objects
        return batch

    def _skip_long(self, rest: bytes) -> bytes:
        """Report the overlong unit ``rest`` starts and drop it; what follows its end is kept."""
        warn_corrupt(
            self.path,
            self.offset,
            f"a line longer than {self.max_unit} bytes; skipped up to its end",
        )
        self._skipping = True
        return self._skip_rest(rest)

    def _skip_rest(self, data: bytes) -> bytes:
        """``data`` after the end of the unit being skipped (all of it skipped when it has none)."""
        assert self.unit_end is not None
        cut = data.find(self.unit_end)
        if cut < 0:
            self.offset += len(data)
            return b""
        self._skipping = False
        self.offset += cut + len(self.unit_end)
        return data[cut + len(self.unit_end) :]

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


def read_whole(fs: Any, path: str, offset: int, limit: int) -> bytes | None:
    """The bytes of ``path`` on ``fs`` from ``offset`` to its end (as large as it is now), or
    None when they are more than ``limit`` or its size cannot be told: for a reader that
    decodes small files whole. The file system a reader is given reads a local file so with
    one ``open``, ``fstat`` and ``pread``, no file object."""
    read_from = getattr(fs, "read_from", None)
    if read_from is not None:
        return read_from(path, offset, limit)  # type: ignore[no-any-return]
    with fs.open(path, "rb") as f:
        size = size_of(f)
        if size is None or size - offset > limit:
            return None
        if size <= offset:
            return b""
        f.seek(offset)
        return f.read(size - offset)  # type: ignore[no-any-return]


def size_of(f: Any) -> int | None:
    """The size of an open file: fsspec's ``size``, else ``fstat`` of a plain file."""
    size = getattr(f, "size", None)
    if isinstance(size, int):
        return size
    try:
        return os.fstat(f.fileno()).st_size
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
