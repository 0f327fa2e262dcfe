"""Reading TensorBoard event files back, from any writer (torch, tensorboardX, TF, tallyboard).

Files are read in chunks (:class:`tallyboard.plugin.readers.ChunkedFileReader`), so memory holds one
chunk, not the file.
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

import struct
from collections.abc import Callable
from typing import Any

from tallyboard.plugin.readers import Batch, ChunkedFileReader, warn_corrupt
from tallyboard.records.framing import crc32c, mask

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


def _count(batch: Batch, plugin: str, tag: str) -> None:
    """Count a value no decoder took, by plugin name (or the field holding it) and tag."""
    key = (plugin, tag)
    batch.undecoded[key] = batch.undecoded.get(key, 0) + 1


def matches(basename: str) -> bool:
    """TensorBoard reads files whose name contains ``tfevents``."""
    return "tfevents" in basename


class EventFileReader(ChunkedFileReader):
    """One event file; :meth:`read_new` returns records appended since the previous call."""

    def __init__(self, fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> None:
        super().__init__(fs, path)
        self.decoders = decoders
        self._event_decoders = [(n, f) for n, f in decoders.items() if hasattr(f, "event_field")]
        self._value_decoders = [
            n
            for n, f in decoders.items()
            if not hasattr(f, "event_field") or getattr(f, "summary_values", False)
        ]
        #: tag -> the kind that decoded its last value, tried first for the next one.
        self._kind_of_tag: dict[str, str] = {}
        #: tag -> the metadata of its first value that carried some.
        self._metadata: dict[str, Any] = {}

    def _bounds(self, data: bytes) -> tuple[Any, int, bool]:
        """Record start offsets of the whole records of ``data``, the end of the last one, and
        whether a bad length CRC stopped the scan there.

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
        wait = pause = _WALK
        pos = 0
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
        <f32>``) is recognised and decoded for all records at once with numpy, whatever mix of
        tags and step sizes the file holds. Other records go through :meth:`_slow` in file order;
        scalars keep file order across both paths.
        """
        import numpy as np

        offs, used, bad_length = self._bounds(data)
        r = len(offs)
        if r:
            mv = memoryview(data)
            p = offs + 12  # payload start
            stop = np.empty(r, np.int64)  # payload end (data CRC start)
            stop[:-1] = offs[1:] - 4
            stop[-1] = used - 4
            crc: Callable[[Any], int] = crc32c  # takes any buffer
            c = np.fromiter(
                map(crc, map(mv.__getitem__, map(slice, p.tolist(), stop.tolist()))),
                np.uint64,
                r,
            )
            u8 = np.frombuffer(data, np.uint8)
            last = len(data) - 1

            def at(i: Any) -> Any:
                return u8[np.minimum(i, last)].astype(np.int64)

            def unaligned(dtype: str, offsets: Any) -> Any:
                size = np.dtype(dtype).itemsize
                view = np.ndarray((len(data) - size + 1,), dtype, data, 0, (1,))
                return view[offsets]

            crc_ok = (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF == unaligned("<u4", stop)
            # the scalar Event layout, step varint of 0 (step 0 left out) to 10 bytes
            b9 = at(p + 9)
            has_step = b9 == 0x10
            step = np.zeros(r, np.uint64)
            klen = np.where(has_step, -1, 0)  # -1: varint not ended yet
            for i in range(10):
                open_ = klen < 0
                if not open_.any():
                    break
                b = at(p[open_] + 10 + i)
                step[open_] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * i)
                klen[np.flatnonzero(open_)[b < 0x80]] = i + 1
            q = p + 9 + np.where(has_step, 1 + klen, 0)  # the summary field
            tl = at(q + 5)
            fast = (
                crc_ok
                & (at(p) == 0x09)
                & (has_step | (b9 == 0x2A))
                & (klen >= 0)
                & (q + 11 + tl == stop)
                & (at(q) == 0x2A)
                & (at(q + 1) == tl + 9)
                & (at(q + 2) == 0x0A)
                & (at(q + 3) == tl + 7)
                & (at(q + 4) == 0x0A)
                & (tl + 9 < 0x80)
                & (at(q + 6 + tl) == 0x15)
            )
            f = np.flatnonzero(fast)
            qf, tf = q[f] + 6, tl[f]
            names: list[str] = []
            codes = np.empty(len(f), np.int32)
            for n in np.flatnonzero(np.bincount(tf)).tolist():  # tags of one length at a time
                sel = np.flatnonzero(tf == n)
                raw = np.zeros((len(sel), -(-n // 8) * 8 or 8), np.uint8)
                raw[:, :n] = u8[qf[sel][:, None] + np.arange(n)]
                reps, inv = self._distinct(raw.view(np.uint64))
                codes[sel] = inv + len(names)
                names.extend(bytes(raw[i, :n]).decode("utf-8", "replace") for i in reps.tolist())
            cols: list[Any] = [
                codes,
                step[f].view(np.int64),
                unaligned("<f8", p[f] + 1),
                unaligned("<f4", qf + tf + 1).astype(np.float64),
            ]
            done = 0  # fast records already in batch.columns

            def emit(upto: int) -> None:
                part = [col[done:upto] for col in cols]
                if upto - done < _MIN_COLUMN:  # a few records (a live tail): the lists are cheaper
                    batch.tags.extend(names[i] for i in part[0].tolist())
                    for col, values in zip(lists[1:], part[1:]):
                        col.extend(values.tolist())
                    return
                names_, codes_ = names, part[0]
                if upto - done < len(cols[0]) and len(names) > 1:
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
            if len(f) > done:
                emit(len(f))
        if bad_length:
            warn_corrupt(
                self.path, self.offset + used, "bad length CRC; the rest of the file is skipped"
            )
            self.dead = True
        return used

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
        from .proto import Event

        try:
            event = Event.FromString(payload)
        except Exception as exc:  # protobuf raises DecodeError; anything unparsable is reported
            warn_corrupt(self.path, self.offset + pos, f"unparsable Event ({exc}); record skipped")
            return
        step, wall = int(event.step), float(event.wall_time)
        what = event.WhichOneof("what")
        if what == "summary":
            for value in event.summary.value:
                self._value(value, step, wall, pos, batch)
            return
        if what in _NOT_VALUES:
            return
        decoded = False
        for name, fn in self._event_decoders:
            if getattr(fn, "event_field", None) == what:
                for row in self._rows(self._decode(name, fn, event, step, wall, pos)):
                    tag = row.pop("tag", what)
                    batch.add_row(name, {"tag": tag, "step": step, "wall_time": wall, **row})
                    decoded = True
        if not decoded:
            tag = event.tagged_run_metadata.tag if what == "tagged_run_metadata" else what
            _count(batch, str(what), tag)

    def _value(self, value: Any, step: int, wall: float, pos: int, batch: Batch) -> None:
        """Decode one ``Summary.Value`` into ``batch``, or count it as undecoded.

        Its kind follows its plugin name: the metadata a writer left on the first value of a tag
        (TF1's FileWriter strips it from the later ones) is remembered per tag and given back to
        the later values before they reach the decoders.
        """
        tag = value.tag
        if value.HasField("metadata"):
            if tag not in self._metadata:
                # a copy: a sub-message would keep the whole parsed chunk's memory alive
                kept = type(value.metadata)()
                kept.CopyFrom(value.metadata)
                self._metadata[tag] = kept
        else:
            known = self._metadata.get(tag)
            if known is not None:
                value.metadata.CopyFrom(known)
        payload = value.WhichOneof("value")
        plugin = value.metadata.plugin_data.plugin_name
        if payload == "simple_value" or (payload is None and plugin in ("", "scalars")):
            # a simple_value (0.0 may be written as no field at all)
            batch.tags.append(tag)
            batch.steps.append(step)
            batch.wall_times.append(wall)
            batch.values.append(float(value.simple_value))
            return
        kind = self._kind_of_tag.get(tag)
        names = self._value_decoders if kind is None else [kind, *self._value_decoders]
        for name in names:
            result = self._decode(name, self.decoders[name], value, step, wall, pos)
            if not result:  # None, or a list of no rows
                continue
            self._kind_of_tag[tag] = name
            if name == "scalar":  # one number
                batch.tags.append(tag)
                batch.steps.append(step)
                batch.wall_times.append(wall)
                batch.values.append(float(result["value"]))
                return
            for row in self._rows(result):
                batch.add_row(name, {"tag": tag, "step": step, "wall_time": wall, **row})
            return
        _count(batch, plugin or str(payload or "no value"), tag)

    @staticmethod
    def _rows(result: Any) -> list[dict[str, Any]]:
        """A decoder's result as a list of rows: it returns None, one row, or a list of rows (an
        image summary holding several images)."""
        if result is None:
            return []
        return result if isinstance(result, list) else [result]

    def _decode(
        self, name: str, fn: Callable[..., Any], value: Any, step: int, wall: float, pos: int
    ) -> dict[str, Any] | None:
        """A decoder's row; one that raises is reported, and the value skipped."""
        try:
            return fn(value, step, wall)  # type: ignore[no-any-return]
        except Exception as exc:
            warn_corrupt(
                self.path, self.offset + pos, f"the {name} decoder failed ({exc!r}); value skipped"
            )
            return None


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
