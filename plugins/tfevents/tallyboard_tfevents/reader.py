"""Reading TensorBoard event files back, from any writer (torch, tensorboardX, TF, tallyboard).

Files are read in chunks (:class:`tallyboard.plugin.readers.ChunkedFileReader`), so memory holds one
chunk, not the file; many small files are read whole and decoded together
(:meth:`EventFileReader.read_many`), and a file laid out like the file before it (a sweep's runs)
is decoded from that file's layout (:class:`_Group`).
Scalars take a fast path: record bounds are found in one pass (whole cycles of records checked
at once with numpy when tags repeat in the same order every step), every CRC is checked with the
C CRC-32C, and the common scalar ``Event`` (wall_time, step, one ``simple_value``) is decoded for
all records of a chunk at once with numpy, whatever the mix of tags and step sizes, keeping file
order. Every other record is parsed with protobuf and each ``Summary.Value`` handed to the
decoders kinds registered for ``"tfevents"``: ``decode(value, step, wall_time)`` returns a row
(a dict; a ``"value"`` float for scalars), a list of rows (a summary holding several images), or
None when the value is not of that kind. A value's kind follows its plugin name
(``metadata.plugin_data.plugin_name``); writers that keep the metadata only on the first value
of a tag (TF1's FileWriter) are read as if every value carried it: the reader remembers it per
file and tag and gives it back to the later values. A decoder that raises is reported as a
damaged value (``ReadWarning`` with file and offset) and reading goes on. A value no decoder
takes (a third-party plugin, a form no kind reads) is counted in ``Batch.undecoded`` by plugin
name and tag, never dropped silently.

Records that are not summaries (``graph_def``, ``tagged_run_metadata``, ...) reach the decoders
that name the ``Event`` field they read in an ``event_field`` attribute
(``decode.event_field = "graph_def"``): such a decoder is called as ``decode(event, step,
wall_time)`` with the whole ``Event`` and returns a row whose ``"tag"`` (default: the field name)
becomes the row's tag; it sees ``Summary.Value``s too only when its ``summary_values`` attribute
is true (a graph written as a summary by TF2's ``trace_export``).
"""

from __future__ import annotations

import functools
import struct
import threading
from collections.abc import Callable, Sequence
from typing import Any

from tallyboard.plugin.readers import (
    SCALAR_KIND,
    Batch,
    Batches,
    ChunkedFileReader,
    read_whole,
    warn_corrupt,
)
from tallyboard.records.framing import crc32c, mask
from tallyboard.records.wire import read_varint

FORMAT = "tfevents"
_unpack_q = struct.Struct("<Q").unpack_from
_unpack_i = struct.Struct("<I").unpack_from
#: longest cycle of record sizes (tags logged in the same order every step) found ahead at once,
#: and records walked one by one before the first try.
_MAX_CYCLE, _WALK = 1024, 32
#: records at the end of the walked ones that must repeat with a period before it is used.
_TAIL = 16
#: fewer records decoded at once than this go to the batch's lists, not a column of their own.
_MIN_COLUMN = 16
#: verified record heads (length and length CRC) and the record size each gives; the length
#: CRC depends only on the length, so this holds for every file.
_HEADS: dict[bytes, int] = {}
#: Summary.Value payload fields besides simple_value (a proto3 float without presence).
#: Event fields that hold no value of the run (the file's header, its writer).
_NOT_VALUES = (None, "file_version")
#: templates of scalar records one reader keeps at most (a tag and layout each).
_MAX_TEMPLATES = 4096
#: records left to decode one by one from which on a chunk's are matched to templates at once.
_MIN_TEMPLATED = 32
_F32, _F64 = struct.Struct("<f"), struct.Struct("<d")
_unpack_d = _F64.unpack_from
#: a template's value read with the metadata the record holds itself.
_OWN = object()


def _value_format(value: Any) -> struct.Struct | None:
    """How the number of a scalar ``Summary.Value`` stands in its bytes: float32 (a
    ``simple_value``, a ``DT_FLOAT`` tensor), float64 (``DT_DOUBLE``); None otherwise."""
    which = value.WhichOneof("value")
    if which == "simple_value":
        return _F32
    if which == "tensor":
        return {1: _F32, 2: _F64}.get(value.tensor.dtype)
    return None


class _Template:
    """A scalar record's summary after its value's bytes (``suffix``; the value at
    ``offset``, ``size`` bytes read by ``unpack``, of numpy ``dtype``), its tag, the tag's remembered metadata it was read with
    (``_OWN``: it had its own) and the kind that then took the tag."""

    __slots__ = ("suffix", "offset", "unpack", "size", "dtype", "tag", "metadata", "kind")

    def __init__(
        self, suffix: bytes, offset: int, fmt: struct.Struct, tag: str, metadata: Any, kind: Any
    ) -> None:
        self.suffix, self.offset, self.unpack = suffix, offset, fmt.unpack_from
        self.size, self.dtype = fmt.size, fmt.format  # "<f" or "<d": a numpy dtype too
        self.tag, self.metadata, self.kind = tag, metadata, kind


def _summary_at(payload: bytes) -> tuple[int, int] | None:
    """Where the summary of an ``Event`` laid out as ``09 <wall> [10 <step>] 2a <len>
    <summary>`` begins, the summary ending the record, and the step (an int64, 0 when there is
    none); None for another layout."""
    try:
        i, step = 9, 0
        if payload[9] == 0x10:
            step, i = read_varint(payload, 10)
            if step >= 1 << 63:
                step -= 1 << 64
        if payload[i] != 0x2A:
            return None
        n, j = read_varint(payload, i + 1)
    except (IndexError, ValueError):
        return None
    return (j, step) if j + n == len(payload) else None


@functools.cache
def _Event() -> Any:
    from .proto import Event

    return Event


#: Event payloads after their wall time (``payload[9:]``) known to hold no value (a file's
#: header: file_version, source metadata): such a record is skipped without parsing it.
_NO_VALUE: set[bytes] = set()


def _alone(event: Any, value: Any, bare: bool = False) -> bytes:
    """An ``Event`` holding ``value`` alone, with ``event``'s step and wall time, serialized;
    ``bare``: without its metadata (the file's value had none)."""
    from .proto import Event

    one = Event(wall_time=event.wall_time, step=event.step)
    kept = one.summary.value.add()
    kept.CopyFrom(value)
    if bare:
        kept.ClearField("metadata")
    return bytes(one.SerializeToString())


def _first_wall(payload: bytes) -> float | None:
    """The wall time of a file's first ``Event`` (None when it does not parse)."""
    if payload[:1] == b"\x09" and len(payload) >= 9:
        return float(struct.unpack_from("<d", payload, 1)[0])
    from .proto import Event

    try:
        return float(Event.FromString(payload).wall_time)
    except Exception:  # reported as damage where the record is read
        return None


def _count(batch: Batch, plugin: str, tag: str) -> None:
    """Count a value no decoder took, by plugin name (or the field holding it) and tag."""
    key = (plugin, tag)
    batch.undecoded[key] = batch.undecoded.get(key, 0) + 1


#: id of a decoders dict -> (the dict, its Event-field decoders, its Summary.Value decoders):
#: one pair of lists for every file of a read, not one per file.
_SORTED: dict[int, tuple[Any, list[tuple[str, Any]], list[str]]] = {}


def _sorted_decoders(
    decoders: dict[str, Callable[..., Any]],
) -> tuple[list[tuple[str, Any]], list[str]]:
    """The decoders of whole ``Event`` fields, and the names of those of ``Summary.Value``s."""
    got = _SORTED.get(id(decoders))
    if got is None or got[0] is not decoders:
        event = [(n, f) for n, f in decoders.items() if hasattr(f, "event_field")]
        value = [
            n
            for n, f in decoders.items()
            if not hasattr(f, "event_field") or getattr(f, "summary_values", False)
        ]
        if len(_SORTED) > 64:
            _SORTED.clear()
        got = _SORTED[id(decoders)] = (decoders, event, value)
    return got[1], got[2]


def matches(basename: str) -> bool:
    """TensorBoard reads files whose name contains ``tfevents``."""
    return "tfevents" in basename


class EventFileReader(ChunkedFileReader):
    """One event file; :meth:`read_new` returns records appended since the previous call."""

    def __init__(self, fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> None:
        super().__init__(fs, path)
        self.decoders = decoders
        self._event_decoders, self._value_decoders = _sorted_decoders(decoders)
        #: tag -> the kind that decoded its last value, tried first for the next one.
        self._kind_of_tag: dict[str, str] = {}
        #: tag -> the metadata of its first value that carried some.
        self._metadata: dict[str, Any] = {}
        #: scalar tags whose first value carrying metadata went to ``batch.scalar_heads``.
        self._headed: set[str] = set()
        #: summary length -> the value's offset in it -> the summary's bytes before the value
        #: -> a scalar record read one by one, as a template (:class:`_Template`): a record
        #: whose summary is one of them but for the value's bytes is read from its bytes (a
        #: scalar in tensor form: TF2's, torch's new_style).
        self._templates: dict[int, dict[int, dict[bytes, _Template]]] = {}
        self._n_templates = 0

    #: Keep TensorBoard's summaries as the file holds them (``Batch.summaries`` and
    #: ``Batch.scalar_heads``) instead of decoded rows: set by a consumer that shows them as
    #: they are (True: ``tallyboard board``; every scalar, in tensor form too, still goes to the
    #: columns, so a chart of them loads at the columns' speed) or copies them (``"exact"``:
    #: ``convert`` to event files; scalars in tensor form, say, are kept whole too).
    keep_summaries: bool | str = False

    def _bounds_guessed(
        self, data: bytes, guess: tuple[Any, Any, Any, Any] | None
    ) -> tuple[Any, int, bool, tuple[Any, Any, Any, Any] | None]:
        """:meth:`_bounds` of ``data``, with the layout of another file of a sweep as a guess:
        ``guess`` holds that file's record starts, ends, lengths and length CRCs; the records
        of ``data`` are taken as laid out alike up to the first whose head (length and its CRC)
        differs from the guessed one, which costs a few array operations instead of a walk.
        Returns the bounds and the guess for the next file."""
        import numpy as np

        n = len(data)
        if guess is None or n < 12:
            offs, used, bad = self._bounds(data)
        else:
            g_offs, g_ends, g_len, g_crc = guess
            m = int(np.searchsorted(g_ends, n, "right"))  # guessed records wholly inside
            k = 0
            if m:
                go = g_offs[:m]
                lengths = np.ndarray((n - 7,), "<u8", data, 0, (1,))
                crcs = np.ndarray((n - 3,), "<u4", data, 0, (1,))
                ok = (lengths[go] == g_len[:m]) & (crcs[go + 8] == g_crc[:m])
                k = m if ok.all() else int(np.argmin(ok))
            if k and n - int(g_ends[k - 1]) < 12:  # nothing after them but a torn head
                return g_offs[:k], int(g_ends[k - 1]), False, guess
            if k:
                offs, used, bad = self._bounds(data, int(g_ends[k - 1]), g_offs[:k])
            else:
                offs, used, bad = self._bounds(data)
            if k == len(offs):  # laid out as guessed, all of it
                return offs, used, bad, guess
        if bad or not len(offs):
            return offs, used, bad, guess
        lengths = np.ndarray((n - 7,), "<u8", data, 0, (1,))
        crcs = np.ndarray((n - 3,), "<u4", data, 0, (1,))
        ends = np.empty_like(offs)
        ends[:-1] = offs[1:]
        ends[-1] = used
        return offs, used, bad, (offs, ends, lengths[offs], crcs[offs + 8])

    def _bounds(self, data: bytes, pos: int = 0, known: Any = None) -> tuple[Any, int, bool]:
        """Record start offsets of the whole records of ``data``, the end of the last one, and
        whether a bad length CRC stopped the scan there; ``known`` holds the starts of records
        already checked, which end at ``pos``, where the scan starts.

        Records are walked one by one; when the sizes of the last records repeat with a period of
        at most :data:`_MAX_CYCLE` records (a writer logging the same tags every step), whole
        cycles ahead are checked at once with numpy: every record head (length and length CRC)
        must equal the head already verified at that place of the cycle.
        """
        import numpy as np

        heads, unpack_q, unpack_i, crc, msk = _HEADS, _unpack_q, _unpack_i, crc32c, mask
        end = len(data)
        parts: list[Any] = []
        offs: list[int] = []
        if known is not None:  # its last records start the walk, so a cycle is found at once
            parts.append(known[:-_WALK])
            offs = known[-_WALK:].tolist()
        wait = pause = _WALK
        while pos + 12 <= end:
            head = data[pos : pos + 12]
            size = heads.get(head)
            if size is None:
                if unpack_i(head, 8)[0] != msk(crc(head[:8])):
                    parts.append(np.array(offs, np.int64))
                    return np.concatenate(parts), pos, True
                size = unpack_q(head)[0] + 16
                if len(heads) < 65536:
                    heads[head] = size
            if pos + size > end:
                self._need = size  # a torn tail (read again later), or a record past the chunk
                break
            offs.append(pos)
            pos += size
            wait -= 1
            if not wait:
                ahead, pos = self._cycles(data, offs, pos)
                gained = sum(map(len, ahead))
                if gained:
                    parts.append(np.array(offs, np.int64))
                    parts.extend(ahead)
                    offs = []
                # no cycle here, or a short one: try less often
                pause = _WALK if gained >= 2 * pause else min(pause * 2, 1 << 14)
                wait = pause
        parts.append(np.array(offs, np.int64))
        return np.concatenate(parts), pos, False

    def _scan(self, data: bytes, batch: Batch) -> int:
        """Decode whole records of ``data`` into ``batch``; returns the bytes consumed.

        Record bounds come from :meth:`_bounds`, every data CRC from the C CRC-32C, and the
        common scalar ``Event`` (``09 <wall f64> [10 <step varint>] 2a L 0a L' 0a T <tag> 15
        <f32>``) is recognised and decoded for all records at once with numpy
        (:func:`_decode_records`), whatever mix of tags and step sizes the file holds. Other
        records go through :meth:`_slow` in file order; scalars keep file order across both
        paths.
        """
        import numpy as np

        offs, used, bad_length = self._bounds(data)
        r = len(offs)
        if r:
            stop = np.empty(r, np.int64)  # payload end (data CRC start)
            stop[:-1] = offs[1:] - 4
            stop[-1] = used - 4
            crc_ok, fast, names, cols = _decode_records(data, offs, stop)
            self._place(data, offs, stop, crc_ok, fast, names, cols, batch)
        if bad_length:
            warn_corrupt(
                self.path, self.offset + used, "bad length CRC; the rest of the file is skipped"
            )
            self.dead = True
        return used

    def _place(
        self,
        data: bytes,
        offs: Any,
        stop: Any,
        crc_ok: Any,
        fast: Any,
        names: list[str],
        cols: list[Any],
        batch: Batch,
    ) -> None:
        """Put the decoded scalar records (``cols``: codes into ``names``, step, wall time,
        value of the records ``fast`` marks) into ``batch`` and decode the other records one by
        one, keeping file order between the two."""
        import numpy as np

        if self._templates and not self.keep_summaries:
            decoded = (fast, names, cols)
            fast, names, cols = self._by_templates(data, offs, stop, crc_ok, decoded)
        f_count = len(cols[0])
        done = 0  # fast records already in batch.columns

        def emit(upto: int) -> None:
            part = [col[done:upto] for col in cols]
            if upto - done < _MIN_COLUMN:  # a few records (a live tail): the lists are cheaper
                batch.tags.extend(names[i] for i in part[0].tolist())
                for col, values in zip(lists[1:], part[1:]):
                    col.extend(values.tolist())
                return
            names_, codes_ = names, part[0]
            if upto - done < f_count and len(names) > 1:
                present, codes_ = np.unique(codes_, return_inverse=True)
                names_ = [names[i] for i in present.tolist()]
            batch.flush_lists()  # scalars decoded one by one before these keep their place
            codes_ = codes_.astype(np.int32).ravel()
            batch.columns.append((names_, codes_, part[1], part[2], part[3]))

        before = np.cumsum(fast) - fast  # fast records before each record
        lists: list[list[Any]] = [batch.tags, batch.steps, batch.wall_times, batch.values]
        for i in np.flatnonzero(~fast).tolist():
            start = int(offs[i])
            if not crc_ok[i]:
                warn_corrupt(self.path, self.offset + start, "bad data CRC; record skipped")
                continue
            had = len(batch.tags)
            self._slow(data[start + 12 : int(stop[i])], start, batch)
            if len(batch.tags) > had and before[i] > done:
                # scalars of this record come after the fast ones before it
                moved = [col[had:] for col in lists]
                for col in lists:
                    del col[had:]
                emit(int(before[i]))
                done = int(before[i])
                for col, extra in zip(lists, moved):
                    col.extend(extra)
        if f_count > done:
            emit(f_count)

    #: files with at most this many new bytes are read whole and decoded together by
    #: :meth:`read_many`; a larger one is read in chunks by :meth:`read_new`.
    whole_limit: int = 8 << 20

    @classmethod
    def read_many(cls, readers: Sequence[EventFileReader], light: bool = False) -> Batches:
        """Read the new records of several event files in one pass.

        Each file's new bytes are read whole, its record bounds found on their own (guessed
        from the file before, as the runs of a sweep repeat one layout, and checked), then the
        records of all files are checked and decoded together by :func:`_decode_records`: the
        scalars of every file land in shared columns (:class:`Batches`), at a cost per file of
        a read and a few list operations. Records of other kinds go through :meth:`_slow`,
        file by file, as :meth:`read_new` would take them; every CRC is checked and every
        damaged record reported with its file and offset. A file with more new bytes than
        :attr:`whole_limit` is read by :meth:`read_new`.

        ``light`` is for a listing (``tallyboard ls``): scalar records of a file laid out like
        the file before it, whose tags and steps are the bytes of records already checked, are
        taken without checking their own data CRC (their wall times and values unchecked);
        every other record is checked as always.
        """
        parts: list[Batches] = []
        start = 0
        datas: list[bytes] = []
        files: list[int] = []  # reader index of each data
        for i, reader in enumerate(readers):
            if reader.dead:
                continue
            data = reader._read_whole()
            if data is None:  # too large: read alone, in its turn (so warnings keep file order)
                parts.append(cls._decode_files(readers[start:i], datas, files, start, light))
                parts.append(Batches.of([reader.read_new()]))
                start, datas, files = i + 1, [], []
                continue
            if data:
                datas.append(data)
                files.append(i)
        parts.append(cls._decode_files(readers[start:], datas, files, start, light))
        return Batches.concat(parts)

    @classmethod
    def _decode_files(
        cls,
        readers: Sequence[EventFileReader],
        datas: list[bytes],
        files: list[int],
        first: int,
        light: bool = False,
    ) -> Batches:
        """Decode the new bytes ``datas`` of the readers ``files`` (indexes, less ``first``,
        into ``readers``) together, then each file's other records in its turn."""
        import numpy as np

        out: list[Batch | None] = [None] * len(readers)
        files = [i - first for i in files]
        if not datas:
            return Batches(out)
        group = _Group([readers[i] for i in files], datas, light)
        codes, steps, walls, values = [], [], [], []
        fast_of = np.zeros(len(readers), np.int64)
        remap_names = group.names
        for j, i in enumerate(files):
            reader, data = readers[i], datas[j]
            offs, used, bad = group.found[j]
            ok, fast, cols = group.results(j)
            batch: Batch | None = None
            slow_scalars: list[int] = []  # the record of each scalar decoded one by one
            for idx in group.slow(j):
                start = int(offs[idx])
                stop = int(offs[idx + 1]) - 4 if idx + 1 < len(offs) else used - 4
                payload = data[start + 12 : stop]
                good = bool(ok[idx])
                if good and payload[:1] == b"\x09" and payload[9:] in _NO_VALUE and start:
                    continue  # a header event (file_version) met before: nothing in it
                if batch is None:
                    batch = Batch()
                if not good:
                    warn_corrupt(reader.path, reader.offset + start, "bad data CRC; record skipped")
                    continue
                had = len(batch.tags)
                reader._slow(payload, start, batch)
                slow_scalars.extend([idx] * (len(batch.tags) - had))
            n_fast = len(cols[0])
            if batch is not None and slow_scalars and n_fast:
                # scalars decoded both ways in one file: merged in record order, its own column
                _merge_in_order(batch, remap_names, cols, np.flatnonzero(fast), slow_scalars)
            elif n_fast:
                codes.append(cols[0])
                steps.append(cols[1])
                walls.append(cols[2])
                values.append(cols[3])
                fast_of[i] = n_fast
            if bad:
                warn_corrupt(
                    reader.path,
                    reader.offset + used,
                    "bad length CRC; the rest of the file is skipped",
                )
                reader.dead = True
            reader.offset += used
            reader._need = group.need[j]
            reader._check_need()
            out[i] = batch
        if not codes:
            return Batches(out, remap_names, *_empty_columns(), fast_of)
        return Batches(
            out,
            remap_names,
            np.concatenate(codes),
            np.concatenate(steps),
            np.concatenate(walls),
            np.concatenate(values),
            fast_of,
        )

    def _read_whole(self) -> bytes | None:
        """The file's bytes from :attr:`offset` to its end, or None when they are more than
        :attr:`whole_limit` (or the size cannot be told): then :meth:`read_new` reads it."""
        limit = (
            self.whole_limit if self.read_limit is None else min(self.whole_limit, self.read_limit)
        )
        return read_whole(self.fs, self.path, self.offset, limit)

    def _check_need(self) -> None:
        """What :meth:`read_new` does with a unit it stopped at: one longer than
        :attr:`max_unit` is damage, reported and the rest of the file skipped."""
        need, self._need = self._need, 0
        if need > self.max_unit and not self.dead:
            warn_corrupt(
                self.path,
                self.offset,
                f"a record claims {need} bytes (framing included), more than the "
                f"{self.max_unit} a record may hold; the rest of the file is skipped",
            )
            self.dead = True

    @staticmethod
    def _distinct(keys: Any) -> tuple[Any, Any]:
        """Distinct rows of ``keys`` (records x words of their tag): the index of one record of
        each and every record's number among them. A log's few tags are found by comparing all
        rows with one at a time, which is much faster than sorting; past 16, the rest are sorted.
        """
        import numpy as np

        codes = np.empty(len(keys), np.int64)
        left = np.ones(len(keys), bool)
        reps: list[int] = []
        j = 0
        while len(reps) < 16:
            same = (keys == keys[j]).all(axis=1)
            codes[same] = len(reps)
            reps.append(j)
            left &= ~same
            j = int(np.argmax(left))
            if not left[j]:
                return np.array(reps, np.int64), codes
        rest = np.flatnonzero(left)
        words = keys[rest].view(f"V{keys.shape[1] * 8}").ravel()
        _, first, inv = np.unique(words, return_index=True, return_inverse=True)
        codes[rest] = inv.ravel() + len(reps)
        return np.concatenate([np.array(reps, np.int64), rest[first]]), codes

    @staticmethod
    def _cycles(data: bytes, offs: list[int], pos: int) -> tuple[list[Any], int]:
        """Record starts of the whole cycles at ``pos`` when the sizes of the records at ``offs``
        (walked so far) repeat with a period (arrays; none without a period) and the new ``pos``.

        The period is that of the last records only (:func:`_period`), so records before the
        cycle began (a file's first ``file_version`` event, the steps before the step varint
        grew a byte) do not hide it. Windows of 16, 64, 256, ... cycles are checked at once: each record head (length and its
        CRC, so its size) must equal the verified head at its place in the last walked cycle; the
        first record that differs ends the run, so a failed try costs at most four times what it
        gained before.
        """
        import numpy as np

        window = offs[-2 * _MAX_CYCLE :] + [pos]
        period = _period([b - a for a, b in zip(window, window[1:])])
        if not period:
            return [], pos
        starts = np.array(window[-period - 1 : -1], np.int64)
        span, rel = pos - int(starts[0]), starts - starts[0]
        n = len(data)
        lengths = np.ndarray((n - 7,), "<u8", data, 0, (1,))
        crcs = np.ndarray((n - 3,), "<u4", data, 0, (1,))
        want_len, want_crc = lengths[starts], crcs[starts + 8]
        out: list[Any] = []
        w = 16
        while True:
            w = min(w, (n - pos) // span)
            if w <= 0:
                break
            at = pos + np.arange(w, dtype=np.int64)[:, None] * span + rel
            ok = ((lengths[at] == want_len) & (crcs[at + 8] == want_crc)).ravel()
            at = at.ravel()
            if not ok.all():
                k = int(np.argmin(ok))
                out.append(at[:k])
                return out, int(at[k])
            out.append(at)
            pos += w * span
            w *= 4
        return out, pos

    def _slow(self, payload: bytes, pos: int, batch: Batch) -> None:
        headed = payload[:1] == b"\x09"  # the wall time first, as every writer puts it
        if self.offset + pos == 0:  # the file's first event: the run's start, as TensorBoard's
            batch.start_time = _first_wall(payload)
        if headed and payload[9:] in _NO_VALUE:
            return
        templated = headed and self._templates and not self.keep_summaries
        if templated and self._templated(payload, batch):
            return
        try:
            event = _Event().FromString(payload)
        except Exception as exc:  # protobuf raises DecodeError; anything unparsable is reported
            warn_corrupt(self.path, self.offset + pos, f"unparsable Event ({exc}); record skipped")
            return
        step, wall = int(event.step), float(event.wall_time)
        what = event.WhichOneof("what")
        if what == "summary":
            values = event.summary.value
            keep = self.keep_summaries
            if headed and not keep and len(values) == 1:  # may serve as a template
                value, had = values[0], len(batch.values)
                own = value.HasField("metadata")
                self._value(value, step, wall, pos, batch)
                if len(batch.values) == had + 1:
                    self._template(payload, value, own, batch.values[-1])
                return
            for value in values:
                if keep:  # as the file holds it: before the tag's metadata is given back
                    if len(values) == 1:
                        self._value(value, step, wall, pos, batch, lambda: payload)
                    else:  # made only when kept: a copy of the value costs
                        bare = not value.HasField("metadata")  # given back below, not kept
                        raw = functools.partial(_alone, event, value, bare)
                        self._value(value, step, wall, pos, batch, raw)
                else:
                    self._value(value, step, wall, pos, batch)
            return
        if what in _NOT_VALUES:
            if headed and len(payload) <= 256 and len(_NO_VALUE) < 1024:
                _NO_VALUE.add(payload[9:])  # the rest decides it: the same bytes, no value
            return
        decoded = None
        for name, fn in self._event_decoders:
            if getattr(fn, "event_field", None) == what:
                for row in self._rows(self._decode(name, fn, event, step, wall, pos)):
                    tag = row.pop("tag", what)
                    decoded = decoded or name
                    if not self.keep_summaries:
                        batch.add_row(name, {"tag": tag, "step": step, "wall_time": wall, **row})
        if self.keep_summaries:
            batch.summaries.append((decoded, str(what), payload))
        elif decoded is None:
            tag = event.tagged_run_metadata.tag if what == "tagged_run_metadata" else what
            _count(batch, str(what), tag)

    def _template(self, payload: bytes, value: Any, own: bool, number: float) -> None:
        """Keep a record just read as one scalar, ``number``, as a template of the records
        that differ from it only in the value's bytes (wall time and step aside): a
        ``simple_value`` or a float or double tensor, whose value's bytes stand once in the
        summary. Such a record decodes as this one did while the tag's remembered metadata
        (given to a record without its own) and kind are what they were."""
        fmt = _value_format(value)
        where = _summary_at(payload)
        if fmt is None or where is None or self._n_templates >= _MAX_TEMPLATES:
            return
        summary = payload[where[0] :]
        try:
            pattern = fmt.pack(number)
        except (OverflowError, struct.error):
            return
        found = summary.find(pattern)
        if found < 0 or found != summary.rfind(pattern):
            return  # not there as packed (a NaN's bits), or there twice: no template
        tag = value.tag
        template = _Template(
            summary[found + fmt.size :],
            found,
            fmt,
            tag,
            _OWN if own else self._metadata.get(tag),
            self._kind_of_tag.get(tag),
        )
        by_offset = self._templates.setdefault(len(summary), {})
        by_offset.setdefault(found, {})[summary[:found]] = template
        self._n_templates += 1

    def _by_templates(
        self, data: bytes, offs: Any, stop: Any, crc_ok: Any, decoded: tuple[Any, Any, Any]
    ) -> tuple[Any, list[str], list[Any]]:
        """The records that ``decoded`` (``(fast, names, cols)``, as :meth:`_place` takes
        them) leaves to be decoded one by one and a template fits (:meth:`_template`), read at
        once from their bytes and put among the fast ones: ``decoded`` with them, in record
        order."""
        import numpy as np
        from numpy.lib.stride_tricks import sliding_window_view as windows

        fast, names, cols = decoded
        idx = np.flatnonzero(~fast & crc_ok)
        if len(idx) < _MIN_TEMPLATED:
            return decoded
        u8 = np.frombuffer(data, np.uint8)
        last = len(u8) - 1

        def at(i: Any) -> Any:
            return u8[np.minimum(i, last)]

        p = offs[idx].astype(np.int64) + 12  # payload start
        ok = (at(p) == 0x09) & (stop[idx] - p >= 11)
        step = np.zeros(len(idx), np.uint64)
        klen = np.zeros(len(idx), np.int64)
        going = at(p + 9) == 0x10  # a step, a varint of up to 10 bytes
        has_step = going.copy()
        for j in range(10):
            b = at(p + 10 + j).astype(np.uint64)
            step |= np.where(going, (b & np.uint64(0x7F)) << np.uint64(7 * j), np.uint64(0))
            klen += going
            going &= b >= 0x80
        ok &= ~going
        q = p + 9 + np.where(has_step, 1 + klen, 0)  # the summary field
        b1, b2 = at(q + 1).astype(np.int64), at(q + 2).astype(np.int64)
        two = b1 >= 0x80
        length = np.where(two, (b1 & 0x7F) | (b2 << 7), b1)
        start = q + np.where(two, 3, 2)
        ok &= (at(q) == 0x2A) & (~two | (b2 < 0x80)) & (start + length == stop[idx])
        hit = np.zeros(len(idx), bool)
        found: list[tuple[Any, str, Any]] = []  # (rows of idx, tag, values)
        for size, by_offset in self._templates.items():
            sel = np.flatnonzero(ok & (length == size))
            if not len(sel):
                continue
            rows = windows(u8, size)[start[sel]]  # no index array of k x size
            for offset, by_prefix in by_offset.items():
                if not offset:  # a summary begins with a field's key: never the value
                    continue
                free = ~hit[sel]
                prefix = np.ascontiguousarray(rows[:, :offset]).view(f"V{offset}").ravel()
                keys, inverse = np.unique(prefix, return_inverse=True)
                inverse = inverse.ravel()
                for k, key in enumerate(keys.tolist()):
                    t = by_prefix.get(bytes(key))
                    if t is None or not self._fits(t):
                        continue
                    end = offset + t.size
                    suffix = np.frombuffer(t.suffix, np.uint8)
                    m = free & (inverse == k) & (rows[:, end:] == suffix).all(axis=1)
                    if not m.any():
                        continue
                    values = np.ascontiguousarray(rows[m, offset:end]).view(t.dtype)
                    found.append((sel[m], t.tag, values.ravel().astype(np.float64)))
                    hit[sel[m]] = True
        # a record decoded one by one may change a tag's remembered metadata or kind: the
        # records after the first of them are left to the one-by-one path, which checks
        missed = np.flatnonzero(~hit)
        cut = missed[0] if len(missed) else len(idx)
        found = [(rows[rows < cut], tag, values[rows < cut]) for rows, tag, values in found]
        found = [f for f in found if len(f[0])]
        if not found:
            return decoded
        rec = np.concatenate([idx[rows] for rows, _, _ in found])
        index = {name: i for i, name in enumerate(names)}
        names = list(names)
        t_codes = np.concatenate(
            [
                np.full(len(rows), index.setdefault(tag, len(index)), np.int32)
                for rows, tag, _ in found
            ]
        )
        names.extend(list(index)[len(names) :])
        t_rows = np.concatenate([rows for rows, _, _ in found])
        p_hit = p[t_rows]
        t_cols = [
            t_codes,
            step[t_rows].view(np.int64),
            np.ascontiguousarray(windows(u8, 8)[p_hit + 1]).view("<f8").ravel(),
            np.concatenate([values for _, _, values in found]),
        ]
        merged = fast.copy()
        merged[rec] = True
        order = np.flatnonzero(merged)
        at_old = np.searchsorted(order, np.flatnonzero(fast))
        at_new = np.searchsorted(order, rec)
        out = []
        for old, new in zip(cols, t_cols):
            col = np.empty(len(order), np.result_type(old.dtype, new.dtype))
            col[at_old] = old
            col[at_new] = new
            out.append(col)
        out[0] = out[0].astype(np.int32)
        return merged, names, out

    def _fits(self, t: _Template) -> bool:
        """Whether a template still reads its tag's records as they would be decoded."""
        return (
            t.metadata is _OWN or self._metadata.get(t.tag) is t.metadata
        ) and self._kind_of_tag.get(t.tag) == t.kind

    def _templated(self, payload: bytes, batch: Batch) -> bool:
        """Read ``payload`` by a template (:meth:`_template`) when one fits: True when read."""
        where = _summary_at(payload)
        if where is None:
            return False
        at, step = where
        for offset, by_prefix in self._templates.get(len(payload) - at, {}).items():
            t = by_prefix.get(payload[at : at + offset])
            if t is not None and payload.endswith(t.suffix) and self._fits(t):
                batch.tags.append(t.tag)
                batch.steps.append(step)
                batch.wall_times.append(_unpack_d(payload, 1)[0])
                batch.values.append(t.unpack(payload, at + offset)[0])
                return True
        return False

    def _value(
        self,
        value: Any,
        step: int,
        wall: float,
        pos: int,
        batch: Batch,
        raw: Callable[[], bytes] | None = None,
    ) -> None:
        """Decode one ``Summary.Value`` into ``batch``, or count it as undecoded.

        Its kind follows its plugin name: the metadata a writer left on the first value of a tag
        (TF1's FileWriter strips it from the later ones) is remembered per tag and given back to
        the later values before they reach the decoders.

        ``raw`` (gives the value alone in its ``Event``, as the file holds it) is given when the
        reader keeps summaries (:attr:`keep_summaries`): a scalar then goes to the scalar
        columns, the first of a tag that carries metadata to ``batch.scalar_heads`` too, and
        every other value to ``batch.summaries`` instead of the rows; to copy
        (``"exact"``), only plain ``simple_value`` values (no plugin name but ``scalars``) are
        scalars so, and tensor-form scalars and a ``simple_value`` carrying another plugin's
        metadata are kept whole.

        A ``simple_value`` carrying a plugin's metadata (not ``scalars``) reaches the decoders
        like any value; one that no decoder takes is read as a scalar.
        """
        tag = value.tag
        own_metadata = value.HasField("metadata")
        if own_metadata:
            if tag not in self._metadata:
                # a copy: a sub-message would keep the whole parsed chunk's memory alive
                kept = type(value.metadata)()
                kept.CopyFrom(value.metadata)
                self._metadata[tag] = kept
                if kept.display_name or kept.summary_description:
                    batch.metadata[tag] = (kept.display_name, kept.summary_description)
        else:
            known = self._metadata.get(tag)
            if known is not None:
                value.metadata.CopyFrom(known)
        payload = value.WhichOneof("value")
        plugin = value.metadata.plugin_data.plugin_name
        plain = plugin in ("", "scalars")
        scalar_form = payload == "simple_value" or (payload is None and plain)
        columns = raw is not None and self.keep_summaries != "exact"  # every scalar a column
        if scalar_form and (plain or columns):  # 0.0 may be written as no field at all
            self._scalar(tag, step, wall, float(value.simple_value), batch, raw, own_metadata)
            return
        kind = self._kind_of_tag.get(tag)
        names = self._value_decoders if kind is None else [kind, *self._value_decoders]
        for name in names:
            result = self._decode(name, self.decoders[name], value, step, wall, pos)
            if result is None or (type(result) in (list, dict) and not result):  # no row
                continue
            self._kind_of_tag[tag] = name
            if name == SCALAR_KIND and (raw is None or columns):  # the payload: a float
                self._scalar(tag, step, wall, float(result), batch, raw, own_metadata)
                return
            if raw is not None:  # kept as it is (a scalar in tensor form too: its dtype)
                batch.summaries.append((name, plugin, raw()))
                return
            for row in self._rows(result):
                batch.add_row(name, {"tag": tag, "step": step, "wall_time": wall, **row})
            return
        if raw is not None:
            batch.summaries.append((None, plugin or str(payload or "no value"), raw()))
        elif scalar_form:  # a simple_value of a plugin no installed kind decodes: a scalar
            self._scalar(tag, step, wall, float(value.simple_value), batch, None, False)
        else:
            _count(batch, plugin or str(payload or "no value"), tag)

    def _scalar(
        self,
        tag: str,
        step: int,
        wall: float,
        number: float,
        batch: Batch,
        raw: Callable[[], bytes] | None,
        own_metadata: bool,
    ) -> None:
        """One scalar into the batch's lists; with kept summaries, the tag's first value that
        carries metadata into ``batch.scalar_heads`` (once per file)."""
        batch.tags.append(tag)
        batch.steps.append(step)
        batch.wall_times.append(wall)
        batch.values.append(number)
        if raw is not None and own_metadata and tag not in self._headed:
            self._headed.add(tag)
            batch.scalar_heads.setdefault(tag, raw())

    @staticmethod
    def _rows(result: Any) -> list[dict[str, Any]]:
        """A decoder's result as a list of rows: it returns None, one row, or a list of rows (an
        image summary holding several images)."""
        if result is None:
            return []
        return result if isinstance(result, list) else [result]

    def _decode(
        self, name: str, fn: Callable[..., Any], value: Any, step: int, wall: float, pos: int
    ) -> Any:
        """What a decoder returns (a row, rows, a payload, None); one that raises is
        reported, and the value skipped."""
        try:
            return fn(value, step, wall)
        except Exception as exc:
            warn_corrupt(
                self.path, self.offset + pos, f"the {name} decoder failed ({exc!r}); value skipped"
            )
            return None


#: records checked and decoded at once: the temporaries of a slice take about 200 bytes a record.
_SLICE = 1 << 15


def _decode_records(data: bytes, offs: Any, stop: Any) -> tuple[Any, Any, list[str], list[Any]]:
    """:func:`_decode_slice` over slices of :data:`_SLICE` records, so the temporaries stay
    small whatever the number of records; the results joined (tag codes into one list)."""
    import numpy as np

    r = len(offs)
    if r <= _SLICE:
        return _decode_slice(data, offs, stop)
    index: dict[str, int] = {}
    crc_ok, fast, codes, cols = [], [], [], []
    for a in range(0, r, _SLICE):
        ok, f, names, c = _decode_slice(data, offs[a : a + _SLICE], stop[a : a + _SLICE])
        crc_ok.append(ok)
        fast.append(f)
        remap = np.array([index.setdefault(n, len(index)) for n in names], np.int32)
        codes.append(remap[c[0]] if len(names) else c[0])
        cols.append(c[1:])
    joined = [np.concatenate(codes)] + [np.concatenate(parts) for parts in zip(*cols)]
    return np.concatenate(crc_ok), np.concatenate(fast), list(index), joined


def _decode_slice(data: bytes, offs: Any, stop: Any) -> tuple[Any, Any, list[str], list[Any]]:
    """Check and decode the records starting at ``offs`` (payloads end at ``stop``) of
    ``data`` at once: ``(crc_ok, fast, names, cols)``, where ``crc_ok`` says which data CRCs
    hold, ``fast`` which records are good scalar Events of the common layout, and ``cols``
    their tag codes (int32, into ``names``), steps, wall times and values, in record order.

    The layout (``09 <wall f64> [10 <step varint>] 2a L 0a L' 0a T <tag> 15 <f32>``) is checked
    with a few 8-byte words per record. Records of that layout with the same tag and step
    length differ only in their wall time, step and value bytes, and CRC-32C is linear: each
    one's CRC is the CRC of the first of them corrected by a table lookup per pair of bytes
    that differ (:func:`_layout_crcs`), all records at once. The CRC of every other record
    comes from the C CRC-32C, one call each.
    """
    import numpy as np

    r, n = len(offs), len(data)
    u8 = np.frombuffer(data, np.uint8)
    words = np.ndarray((max(n - 7, 0),), "<u8", data, 0, (1,))
    top = n - 8

    def word(i: Any) -> Any:
        return words[np.minimum(i, top)]

    p = offs + 12  # payload start
    w0, w1 = word(p), word(p + 8)
    has_step = (w1 >> 8) & 0xFF == 0x10
    cand = (w0 & 0xFF == 0x09) & (has_step | ((w1 >> 8) & 0xFF == 0x2A))
    wall_all = (w0 >> 8) | (w1 << 56)
    del w0, w1
    # the step varint (up to 8 bytes; longer ones take the slow path)
    vw = word(p + 10)
    term = ~vw & 0x8080808080808080
    lsb = term & (~term + np.uint64(1))
    del term
    klen = np.frexp(lsb.astype(np.float64))[1] // 8  # bytes of the varint, 0: over 8
    klen[~has_step] = 0
    cand &= ~has_step | (klen > 0)
    kept = vw & ((lsb << np.uint64(1)) - np.uint64(1))
    del vw, lsb
    step = kept & 0x7F
    for j in range(1, int(klen.max(initial=0))):
        step |= (kept >> j) & (0x7F << (7 * j))
    step[~has_step] = 0
    q = p + 9 + np.where(has_step, 1 + klen, 0)  # the summary field
    wq = word(q)
    tl = (wq >> 40) & 0xFF
    head = (
        np.uint64(0x0A_00_0A_00_2A) | ((tl + 9) << np.uint64(8)) | ((tl + 7) << np.uint64(24))
    ) | (tl << np.uint64(40))
    tl = tl.astype(np.int64)
    cand &= (
        ((wq & 0xFFFFFFFFFFFF) == head)
        & (q + 11 + tl == stop)
        & (tl + 9 < 0x80)
        & (u8[np.minimum(q + 6 + tl, n - 1)] == 0x15)
    )
    del wq, head
    c_idx = np.flatnonzero(cand)
    crc_ok = np.zeros(r, bool)
    other = np.flatnonzero(~cand)
    if len(other):
        mv = memoryview(data)
        crc: Callable[[Any], int] = crc32c  # takes any buffer
        c = np.fromiter(
            map(crc, map(mv.__getitem__, map(slice, p[other].tolist(), stop[other].tolist()))),
            np.uint64,
            len(other),
        )
        stored = np.ndarray((n - 3,), "<u4", data, 0, (1,))[stop[other]]
        crc_ok[other] = (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF == stored
    # tags of the layout's records, as codes into names (tags of one length at a time)
    qc, tc = q[c_idx] + 6, tl[c_idx]
    codes = np.empty(len(c_idx), np.int32)
    names: list[str] = []
    for length in np.flatnonzero(np.bincount(tc)).tolist() if len(tc) else []:
        sel = np.flatnonzero(tc == length)
        if length == 0:
            codes[sel] = len(names)
            names.append("")
            continue
        nw = -(-length // 8)
        keys = words[qc[sel][:, None] + 8 * np.arange(nw)]
        rem = length - 8 * (nw - 1)
        if rem < 8:
            keys[:, -1] &= np.uint64((1 << (8 * rem)) - 1)
        reps, inv = EventFileReader._distinct(keys)
        codes[sel] = inv + len(names)
        for i in reps.tolist():
            at = int(qc[sel[i]])
            names.append(data[at : at + length].decode("utf-8", "replace"))
    wall_bits = wall_all[c_idx]
    del wall_all
    tail = words[stop[c_idx] - 4]  # the value, then the stored data CRC
    value_bits = (tail & 0xFFFFFFFF).astype(np.uint32)
    good = _layout_crcs(
        data,
        p[c_idx],
        stop[c_idx],
        klen[c_idx],
        codes,
        wall_bits,
        kept[c_idx],
        value_bits,
        tail >> 32,
    )
    crc_ok[c_idx] = good
    fast = np.zeros(r, bool)
    fast[c_idx[good]] = True
    if not good.all():
        codes, wall_bits, value_bits = codes[good], wall_bits[good], value_bits[good]
        c_idx = c_idx[good]
    cols: list[Any] = [
        codes,
        step[c_idx].view(np.int64),
        wall_bits.view(np.float64),
        value_bits.view(np.float32).astype(np.float64),
    ]
    return crc_ok, fast, names, cols


def _layout_crcs(
    data: bytes,
    p: Any,
    stop: Any,
    klen: Any,
    codes: Any,
    wall: Any,
    step: Any,
    value: Any,
    stored: Any,
) -> Any:
    """Whether the data CRC of each scalar record of the common layout holds (payloads from
    ``p`` to ``stop``; the step varint ``klen`` bytes long, 0 when absent; the tag's code; the
    wall time, step varint and value bytes as integers; the stored, masked CRC).

    Records of one tag and step length hold the same bytes but those three fields, so with
    ``t`` the first such record, ``crc(x) = crc(t) ^ crc0(x ^ t)``, where ``crc0`` (CRC-32C
    without its initial value and final xor) is linear: a lookup per pair of differing bytes,
    in tables that depend only on the distance to the payload's end.
    """
    import numpy as np
    from tallyboard.records.framing import byte_table, pair_table

    good = np.zeros(len(p), bool)
    if not len(p):
        return good
    key = klen.astype(np.int64) * (int(codes.max()) + 1) + codes
    present = np.flatnonzero(np.bincount(key))
    if len(present) <= 8:  # a few groups: one pass each beats a sort
        groups = [np.flatnonzero(key == v) for v in present.tolist()]
    else:
        order = np.argsort(key, kind="stable")
        groups = np.split(order, np.flatnonzero(np.diff(key[order])) + 1)
    for g in groups:
        t = int(g[0])
        size = int(stop[t] - p[t])
        k = int(klen[t])
        crc = np.full(len(g), crc32c(data[int(p[t]) : int(stop[t])]), np.uint32)
        fields = [(1, wall[g] ^ wall[t], 8), (size - 4, value[g] ^ value[t], 4)]
        if k:
            fields.append((10, step[g] ^ step[t], k))
        for offset, diff, width in fields:
            diff = diff.astype(np.uint64)
            for j in range(0, width, 2):
                d = size - offset - j  # distance of the low byte from the payload's end
                pair = (diff >> np.uint64(8 * j)) & np.uint64(0xFFFF if j + 1 < width else 0xFF)
                table = pair_table(d) if j + 1 < width else None
                if table is not None:
                    crc ^= table[pair.astype(np.intp)]
                else:
                    crc ^= byte_table(d)[(pair & np.uint64(0xFF)).astype(np.intp)]
                    if j + 1 < width:
                        crc ^= byte_table(d - 1)[(pair >> np.uint64(8)).astype(np.intp)]
        c = crc.astype(np.uint64)
        good[g] = (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF == stored[g]
    return good


def _empty_columns() -> tuple[Any, Any, Any, Any]:
    import numpy as np

    return (
        np.empty(0, np.int32),
        np.empty(0, np.int64),
        np.empty(0, np.float64),
        np.empty(0, np.float64),
    )


class _Group:
    """The record bounds and decoded records of several files read whole, found together.

    A file the same size as the file before it that was laid out on its own (its
    *template*), whose bytes equal the template's everywhere but in the wall times, values
    and data CRCs of the template's scalar records (and in the bytes of its other records,
    decoded one by one anyway), has the template's record bounds and scalar records of the
    same tags and steps, as the runs of a sweep do: it costs a comparison of its bytes, a read
    of its wall times and values, and a table lookup per pair of bytes that differ to check
    each record's CRC against the template record's (:func:`_template_crcs`). Every other file
    has its bounds found by :meth:`EventFileReader._bounds_guessed` and its records decoded by
    :func:`_decode_records`, all such files at once. ``light``: the CRCs of the scalar records
    of files laid out as their template are taken as good, unchecked (a listing's read).

    For file ``j``: :attr:`found` ``[j]`` its ``(record starts, end of whole records, bad
    length CRC)``, :attr:`need` ``[j]`` the size of the torn record it ends with (0: none),
    :meth:`results` its per-record CRC and scalar flags and scalar columns (tag codes into
    :attr:`names`), :meth:`slow` its other records.
    """

    def __init__(self, readers: list[EventFileReader], datas: list[bytes], light: bool) -> None:
        n = len(datas)
        self.found: list[Any] = [None] * n
        self.need = [0] * n
        self._ok: list[Any] = [None] * n
        self._fast: list[Any] = [None] * n
        self._cols: list[Any] = [None] * n
        self._slow: list[list[int]] = [[]] * n
        self._index: dict[str, int] = {}
        # each file's template: -1 the layout of the last group read (this thread's), j itself
        # (laid out on its own), or the index of the file before it that it may be laid out as
        last: _Layout | None = getattr(_LAST, "layout", None)
        template = list(range(n))
        guess = None
        t = -1 if last is not None else None
        for j, data in enumerate(datas):
            if t is not None and len(data) == (last.size if t < 0 else len(datas[t])):  # type: ignore[union-attr]
                template[j] = t
                continue
            self._bound(readers[j], j, data, guess)
            guess = self._guess if self._guess is not None else guess
            t = j if self._can_template(j) else None
        heads = [j for j in range(n) if template[j] == j]
        self._general(heads, datas)
        layouts: dict[int, _Layout] = {}
        unmatched: list[int] = []
        j = 0
        while j < n:
            if template[j] == j:
                j += 1
                continue
            t, k = template[j], j
            while k < n and template[k] == t:
                k += 1
            if t < 0:
                layout = last
            else:
                layout = layouts.get(t)
                if layout is None:
                    layout = layouts[t] = _Layout(
                        datas[t],
                        self.found[t],
                        self.need[t],
                        self._fast[t],
                        self._cols[t],
                        self.names,
                    )
            assert layout is not None
            unmatched.extend(self._alike(layout, list(range(j, k)), datas, light))
            j = k
        for j in unmatched:
            self._bound(readers[j], j, datas[j], None)
        self._general(unmatched, datas)
        kept = heads[-1] if heads and self._can_template(heads[-1]) else None
        if kept is not None and len(datas[kept]) <= _Layout.max_size:
            _LAST.layout = layouts.get(kept) or _Layout(
                datas[kept],
                self.found[kept],
                self.need[kept],
                self._fast[kept],
                self._cols[kept],
                self.names,
            )

    _guess: Any = None

    def _can_template(self, t: int) -> bool:
        found = self.found[t]
        return found is not None and not found[2] and len(found[0]) > 0

    def _bound(self, reader: EventFileReader, j: int, data: bytes, guess: Any) -> None:
        offs, used, bad, self._guess = reader._bounds_guessed(data, guess)
        self.found[j] = (offs, used, bad)
        self.need[j], reader._need = reader._need, 0

    @property
    def names(self) -> list[str]:
        return list(self._index)

    def results(self, j: int) -> tuple[Any, Any, list[Any]]:
        return self._ok[j], self._fast[j], self._cols[j]

    def slow(self, j: int) -> list[int]:
        return self._slow[j]

    def _general(self, files: list[int], datas: list[bytes]) -> None:
        """Decode the records of ``files`` by :func:`_decode_records`, all at once."""
        import numpy as np

        files = [j for j in files if len(self.found[j][0])]
        if not files:
            for j in range(len(datas)):
                if self._ok[j] is None and self.found[j] is not None and not len(self.found[j][0]):
                    self._set_empty(j)
            return
        sizes = np.array([len(datas[j]) for j in files], np.int64)
        bases = np.cumsum(sizes) - sizes
        counts = np.array([len(self.found[j][0]) for j in files], np.int64)
        used = np.array([self.found[j][1] for j in files], np.int64)
        buf = datas[files[0]] if len(files) == 1 else b"".join(datas[j] for j in files)
        offs = np.concatenate([self.found[j][0] for j in files]) + np.repeat(bases, counts)
        stop = np.empty(len(offs), np.int64)  # payload ends: the next record's start - 4 ...
        stop[:-1] = offs[1:] - 4
        stop[np.cumsum(counts) - 1] = bases + used - 4  # ... or the file's end
        ok, fast, names, cols = _decode_records(buf, offs, stop)
        del buf
        remap = np.array([self._index.setdefault(n, len(self._index)) for n in names], np.int32)
        codes = remap[cols[0]] if len(names) else cols[0]
        rec_at = np.concatenate([[0], np.cumsum(counts)]).tolist()
        fast_at = np.concatenate([[0], np.cumsum(fast)[np.cumsum(counts) - 1]]).tolist()
        for m, j in enumerate(files):
            a, b = rec_at[m], rec_at[m + 1]
            fa, fb = fast_at[m], fast_at[m + 1]
            self._ok[j] = ok[a:b]
            self._fast[j] = fast[a:b]
            self._cols[j] = [codes[fa:fb], cols[1][fa:fb], cols[2][fa:fb], cols[3][fa:fb]]
            self._slow[j] = np.flatnonzero(~fast[a:b]).tolist()
        for j in range(len(datas)):
            if self._ok[j] is None and self.found[j] is not None and not len(self.found[j][0]):
                self._set_empty(j)

    def _set_empty(self, j: int) -> None:
        import numpy as np

        self._ok[j] = np.zeros(0, bool)
        self._fast[j] = np.zeros(0, bool)
        self._cols[j] = list(_empty_columns())
        self._slow[j] = []

    def _alike(
        self, layout: _Layout, members: list[int], datas: list[bytes], light: bool
    ) -> list[int]:
        """Decode the files ``members`` laid out as ``layout``; returns those that are not
        (left for :meth:`_general`)."""
        import numpy as np

        size = layout.size
        block = _scratch("block", size * len(members))
        into = memoryview(block)
        for at, j in zip(range(0, len(block), size), members):
            into[at : at + size] = datas[j]
        rows = block.reshape(len(members), size)
        differ = _scratch("differ", rows.size).view(bool).reshape(rows.shape)
        np.not_equal(rows, layout.ref, out=differ)
        differ &= layout.fixed
        same = ~differ.any(axis=1)
        out = [j for j, alike in zip(members, same.tolist()) if not alike]
        matched = [j for j, alike in zip(members, same.tolist()) if alike]
        if not matched:
            return out
        m_rows = np.flatnonzero(same)
        f_idx, slow_idx = layout.f_idx, layout.slow_idx
        words = np.ndarray((len(block) - 7,), "<u8", block, 0, (1,))
        shift = (m_rows * size)[:, None]
        tp, te = layout.p[f_idx], layout.stop[f_idx]
        wall_bits = words[tp[None, :] + shift + 1]
        tail = words[te[None, :] + shift - 4]
        value_bits = tail & np.uint64(0xFFFFFFFF)
        ok: Any
        if light:
            ok = np.ones(wall_bits.shape, bool)
        else:
            ok = _template_crcs(
                (te - tp)[None, :],
                layout.tail >> 32,
                wall_bits ^ layout.wall,
                value_bits ^ (layout.tail & np.uint64(0xFFFFFFFF)),
                tail >> 32,
            )
        walls = wall_bits.view(np.float64)
        values = value_bits.astype(np.uint32).view(np.float32).astype(np.float64)
        remap = np.array(
            [self._index.setdefault(name, len(self._index)) for name in layout.names], np.int32
        )
        t_codes = remap[layout.codes] if len(layout.names) else layout.codes
        t_steps = layout.steps
        if len(slow_idx):  # the other records' CRCs, one by one, as _decode_records checks them
            mv = memoryview(block)
            starts = (shift + layout.p[slow_idx][None, :]).ravel()
            stops = (shift + layout.stop[slow_idx][None, :]).ravel()
            crc: Callable[[Any], int] = crc32c  # takes any buffer
            c = np.fromiter(
                map(crc, map(mv.__getitem__, map(slice, starts.tolist(), stops.tolist()))),
                np.uint64,
                len(starts),
            )
            stored = words[stops - 4] >> np.uint64(32)
            slow_ok: Any = ((((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF == stored).reshape(
                len(matched), len(slow_idx)
            )
        slow_list = slow_idx.tolist()
        found = (layout.offs, layout.used, False)
        all_good = ok.all(axis=1).tolist()
        slow_good = slow_ok.all(axis=1).tolist() if len(slow_idx) else [True] * len(matched)
        for m, j in enumerate(matched):
            self.found[j] = found
            self.need[j] = layout.need
            if all_good[m]:  # the template's flags and columns, shared (read-only)
                fast = layout.fast
                self._cols[j] = [t_codes, t_steps, walls[m], values[m]]
                self._slow[j] = slow_list
            else:  # a damaged record: one by one, where its CRC is reported
                good = ok[m]
                fast = np.zeros(len(layout.offs), bool)
                fast[f_idx] = good
                self._cols[j] = [t_codes[good], t_steps[good], walls[m][good], values[m][good]]
                self._slow[j] = np.flatnonzero(~fast).tolist()
            self._fast[j] = fast
            if all_good[m] and slow_good[m]:
                self._ok[j] = layout.all_ok
            else:
                self._ok[j] = rec_ok = fast.copy()
                if len(slow_idx):
                    rec_ok[slow_idx] = slow_ok[m]
        return out


#: per thread: the layout of the last group of files read, the template of the next group's
#: first files (the tasks of a sweep come one after another); and the scratch buffers.
_LAST = threading.local()

#: the largest scratch buffer kept for the next group (a group's files are about a pool task).
_SCRATCH_KEPT = 4 << 20


def _scratch(name: str, size: int) -> Any:
    """``size`` bytes (uint8) of this thread's buffer ``name``, reused from group to group: a
    temporary as large as a group's files, allocated afresh each time, costs a page fault per
    4 KiB, which takes longer than the work done in it."""
    import numpy as np

    buf = getattr(_LAST, name, None)
    if buf is None or len(buf) < size:
        buf = np.empty(max(size, 1 << 16), np.uint8)
        if size <= _SCRATCH_KEPT:
            setattr(_LAST, name, buf)
    return buf[:size]


class _Layout:
    """A file laid out on its own and decoded, as the template of the files laid out alike:
    its bytes, record bounds, torn tail, which records are scalars of the common layout (their
    tag codes into ``names`` and steps), and the bytes that may differ in a file laid out
    alike (the scalar records' wall times, values and CRCs; other records' payloads)."""

    #: the largest file kept as the template of the next group.
    max_size = 1 << 20

    def __init__(
        self, data: bytes, found: Any, need: int, fast: Any, cols: list[Any], names: list[str]
    ) -> None:
        import numpy as np

        self.size = len(data)
        self.offs: Any = found[0]
        self.used: int = found[1]
        self.need = need
        self.ref: Any = np.frombuffer(data, np.uint8)
        n_rec = len(self.offs)
        self.stop: Any = np.empty(n_rec, np.int64)
        self.stop[:-1] = self.offs[1:] - 4
        self.stop[-1] = self.used - 4
        self.p: Any = self.offs + 12
        self.f_idx: Any = np.flatnonzero(fast)
        self.slow_idx: Any = np.flatnonzero(~fast)
        # the record flags of a file laid out alike whose records all hold (read-only, shared)
        self.fast: Any = np.array(fast, bool)
        self.all_ok: Any = np.ones(n_rec, bool)
        self.fast.flags.writeable = self.all_ok.flags.writeable = False
        present = np.unique(cols[0]) if len(cols[0]) else np.empty(0, np.int32)
        self.names = [names[i] for i in present.tolist()]
        self.codes: Any = np.searchsorted(present, cols[0]).astype(np.int32)
        self.steps: Any = cols[1]
        free = np.zeros(self.size, bool)
        fp, fe = self.p[self.f_idx], self.stop[self.f_idx]
        free[(fp[:, None] + np.arange(1, 9)).ravel()] = True  # wall times
        free[(fe[:, None] + np.arange(-4, 4)).ravel()] = True  # values and data CRCs
        for i in self.slow_idx.tolist():  # other records: payload and data CRC
            free[int(self.p[i]) : int(self.stop[i]) + 4] = True
        self.fixed: Any = ~free
        words = np.ndarray((self.size - 7,), "<u8", data, 0, (1,))
        self.wall: Any = words[fp + 1]
        self.tail: Any = words[fe - 4]


def _template_crcs(length: Any, t_crc: Any, wall_diff: Any, value_diff: Any, stored: Any) -> Any:
    """Whether each record's stored (masked) data CRC holds, for records that differ from a
    checked record of the same payload ``length`` (its masked CRC ``t_crc``) only in their wall
    time (``wall_diff``: the xor of the two, bytes 1-8 of the payload) and value
    (``value_diff``: its last 4 bytes): the template's CRC corrected by a lookup per pair of
    bytes that differ (CRC-32C without its initial value and final xor is linear). Arrays of
    one shape (files x records); ``length`` and ``t_crc`` broadcast along the files."""
    import numpy as np
    from tallyboard.records.framing import byte_table, pair_table

    c = (t_crc - np.uint64(0xA282EAD8)) & np.uint64(0xFFFFFFFF)  # unmask the template's CRC
    crc = (((c >> np.uint64(17)) | (c << np.uint64(15))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    crc = np.broadcast_to(crc, wall_diff.shape).copy()
    length = np.broadcast_to(length, wall_diff.shape)
    for size in np.unique(length[0]).tolist():
        cols = np.flatnonzero(length[0] == size)
        part = crc[:, cols]
        for diff, offset, width in ((wall_diff[:, cols], 1, 8), (value_diff[:, cols], size - 4, 4)):
            for j in range(0, width, 2):
                pair = (diff >> np.uint64(8 * j)) & np.uint64(0xFFFF)
                if not pair.any():
                    continue  # these bytes are the template's in every record
                d = size - offset - j  # distance of the low byte from the payload's end
                table = pair_table(d)
                if table is not None:
                    part ^= table[pair.astype(np.intp)]
                else:
                    part ^= byte_table(d)[(pair & np.uint64(0xFF)).astype(np.intp)]
                    part ^= byte_table(d - 1)[(pair >> np.uint64(8)).astype(np.intp)]
        crc[:, cols] = part
    m = crc.astype(np.uint64)
    return (((m >> 15) | (m << 17)) + 0xA282EAD8) & 0xFFFFFFFF == stored


def _merge_in_order(
    batch: Batch, names: list[str], fast: list[Any], fast_recs: Any, slow_recs: list[int]
) -> None:
    """Put the scalars of one file into ``batch`` as one column, in record order: those decoded
    at once (``fast``: codes into ``names``, step, wall time, value; of the records
    ``fast_recs``) and those decoded one by one (``batch``'s lists, of the records
    ``slow_recs``)."""
    import numpy as np

    index = {name: code for code, name in enumerate(names)}
    all_names = list(names)
    slow_codes = [index.setdefault(t, len(index)) for t in batch.tags]
    all_names.extend(list(index)[len(names) :])
    order = np.argsort(np.concatenate([fast_recs, np.array(slow_recs, np.int64)]), kind="stable")
    merged = [
        np.concatenate([fast[0], np.array(slow_codes, np.int32)])[order],
        np.concatenate([fast[1], np.array(batch.steps, np.int64)])[order],
        np.concatenate([fast[2], np.array(batch.wall_times, np.float64)])[order],
        np.concatenate([fast[3], np.array(batch.values, np.float64)])[order],
    ]
    for column in (batch.tags, batch.steps, batch.wall_times, batch.values):
        del column[:]
    batch.columns.append((all_names, merged[0], merged[1], merged[2], merged[3]))


def _period(sizes: list[int]) -> int:
    """The shortest period ``p`` with which the last ``max(2p, _TAIL)`` of ``sizes`` (record
    sizes) repeat, or 0 when none does.

    Only periods under which the last size repeats are compared in full, and a long window is
    narrowed first with a few vectorised comparisons of its last sizes (one numpy operation
    over every period each): comparing list slices for every period was quadratic.
    """
    n = len(sizes)
    last = sizes[-1]
    if n > 128:
        import numpy as np

        arr = np.array(sizes, np.int64)
        cand = np.arange(1, n // 2 + 1)
        for j in range(1, _TAIL + 1):
            cand = cand[arr[n - j - cand] == arr[n - j]]
        periods: Any = cand.tolist()
    else:
        periods = (p for p in range(1, n // 2 + 1) if sizes[n - 1 - p] == last)
    for p in periods:
        tail = min(n, max(2 * p, _TAIL))
        if sizes[n - tail : n - p] == sizes[n - tail + p :]:
            return int(p)
    return 0


def open_reader(fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> EventFileReader:
    return EventFileReader(fs, path, decoders)
