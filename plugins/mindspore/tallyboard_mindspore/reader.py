"""Reading MindSpore summary files back (from MindSpore's ``SummaryRecord`` or tallyboard's).

Files named ``<prefix>.out.events.summary.<time>.<device>.<host><suffix>`` are read, lineage
files (``..._lineage``) included. They are TFRecord-framed like TensorBoard's, so
:class:`tallyboard.records.record_reader.RecordFileReader` reads them in chunks, checks every CRC, leaves
a torn tail for the next read and reports damage with file and offset. The version event (the
first record) is skipped.

Each ``Event`` is parsed by hand, with no protobuf. ``scalar_value`` floats go straight into the
batch's scalar columns; a run of records laid out alike (the same tags in the same order, as a
training loop writes them) is decoded at once with numpy.

Every other value goes to the decoders registered for ``"mindspore"``: the reader calls
``decode(value, step, wall_time)`` with a :class:`MindSporeValue` (``tag``; ``event_field``: 5
for a ``Summary.Value``, 4 for an ``Event.graph_def``; ``value_field``: the ``Summary.Value``
field holding the payload, 3 scalar_value, 4 image, 8 tensor, 9 histogram, 10 loss_landscape,
0 for a graph; ``data``: that field's bytes, the serialized message for a message field, 4
little-endian bytes for scalar_value; ``value.fields()`` splits ``data`` into ``(number,
wire_type, value)``). ``step`` is the Event's step (0 when absent) and ``wall_time`` its wall
time. A decoder returns a row (a dict; ``{"value": float}`` for the ``scalar`` kind) or None
when the value is not of its kind; the first kind to answer a (tag, field) keeps it. A decoder
that raises is reported as a damaged value (:class:`tallyboard.ReadWarning`) and reading goes on.
Graphs carry no tag in MindSpore files: their rows are tagged ``"graph"``.

Lineage files hold ``LineageEvent`` messages; each lineage message is handed to the decoders as
a :class:`MindSporeValue` with ``event_field`` its ``LineageEvent`` field (6 train_lineage, 7
evaluation_lineage, 9 dataset_graph, 10 user_defined_info), ``value_field`` 0, ``tag`` the
tallyboard kind writing it (``train_lineage``, ``eval_lineage``, ``dataset_graph``,
``custom_lineage_data``) and ``data`` the serialized message.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple

from tallyboard.plugin.readers import Batch, warn_corrupt
from tallyboard.records.record_reader import RecordFileReader, leading_good_crcs
from tallyboard.records.wire import read_varint

from . import LINEAGE_FIELDS
from .decoders import GRAPH_EVENT_FIELD, SCALAR, SUMMARY_EVENT_FIELD, decode_scalar

FORMAT = "mindspore"
NAME_MARK = ".out.events.summary."
LINEAGE_SUFFIX = "_lineage"
GRAPH_TAG = "graph"
#: most records decoded by one numpy pass; shorter runs are left to the record loop.
_MAX_RUN, _MIN_RUN = 65536, 16
_unpack_d = struct.Struct("<d").unpack_from
_unpack_f = struct.Struct("<f").unpack_from


#: ``LineageEvent`` field of each lineage message -> the kind (and row tag) it belongs to.
LINEAGE_KINDS = {field: kind for kind, field in LINEAGE_FIELDS.items()}


def matches(basename: str) -> bool:
    """MindSpore summary and lineage files (``*.out.events.summary.*``)."""
    return NAME_MARK in basename


class MindSporeValue(NamedTuple):
    """One value of a summary file, as the ``"mindspore"`` decoders receive it."""

    tag: str
    #: ``Event`` field holding the value: 5 (``summary``) or 4 (``graph_def``).
    event_field: int
    #: ``Summary.Value`` field of the payload (3, 4, 8, 9, 10, ...); 0 for a graph.
    value_field: int
    #: the payload's bytes: a serialized message, or 4 bytes for ``scalar_value``.
    data: bytes

    def fields(self) -> list[tuple[int, int, Any]]:
        """``data`` split into ``(field number, wire type, value)``; ValueError if malformed."""
        from .wire import fields

        return fields(self.data)


class Malformed(ValueError):
    """An Event whose protobuf encoding does not parse."""


def _varint(data: bytes, p: int, limit: int) -> tuple[int, int]:
    """The varint at ``data[p]`` and the position after it, which must be within ``limit``."""
    try:
        result, p = read_varint(data, p)
    except ValueError:
        raise Malformed("truncated or overlong varint") from None
    if p > limit:
        raise Malformed("truncated or overlong varint")
    return result, p


def _skip(data: bytes, p: int, limit: int) -> int:
    """Past one field of any wire type starting at ``p``."""
    key, p = _varint(data, p, limit)
    wire = key & 7
    if wire == 0:
        return _varint(data, p, limit)[1]
    if wire == 1:
        return p + 8
    if wire == 5:
        return p + 4
    if wire == 2:
        n, p = _varint(data, p, limit)
        return p + n
    raise Malformed(f"unsupported wire type {wire}")


#: what holds a value no decoder took, as ``Batch.undecoded`` names it: (event field, value field).
_HELD_IN = {
    (SUMMARY_EVENT_FIELD, 3): "scalar_value",
    (SUMMARY_EVENT_FIELD, 4): "image",
    (SUMMARY_EVENT_FIELD, 8): "tensor",
    (SUMMARY_EVENT_FIELD, 9): "histogram",
    (SUMMARY_EVENT_FIELD, 10): "loss_landscape",
    (GRAPH_EVENT_FIELD, 0): "graph_def",
}


class SummaryFileReader(RecordFileReader):
    """One MindSpore summary file; :meth:`read_new` returns what was appended since last call."""

    def __init__(self, fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> None:
        super().__init__(fs, path)
        self.decoders = decoders
        # the built-in scalar decoder is inlined; another one (a plugin's) is called
        self._inline_scalar = decoders.get("scalar") is decode_scalar
        self._kind_of: dict[tuple[str, int, int], str] = {}
        self._tag_of: dict[bytes, str] = {}
        self._pause = self._fails = 0

    def record(self, data: bytes, pos: int, stop: int, end: int, batch: Batch) -> int:
        try:
            layout = self._event(data, pos, stop, batch)
        except (Malformed, IndexError, struct.error) as exc:
            warn_corrupt(self.path, self.offset + pos, f"unparsable Event ({exc}); record skipped")
            return stop + 4
        nxt = stop + 4
        if layout is not None:
            if self._pause:
                self._pause -= 1
            else:
                used = self._bulk(data, nxt, end, nxt - pos, layout, batch)
                if used:
                    self._fails = 0
                else:  # back off: 1, 2, 4 ... 64 records before the next try
                    self._pause = min(64, 1 << self._fails)
                    self._fails += 1
                nxt += used
        return nxt

    def _tag(self, raw: bytes) -> str:
        tag = self._tag_of.get(raw)
        if tag is None:
            tag = raw.decode("utf-8", "replace")
            if len(self._tag_of) < 65536:
                self._tag_of[raw] = tag
        return tag

    def _event(
        self, data: bytes, pos: int, stop: int, batch: Batch
    ) -> tuple[int, int, int, list[int], list[str]] | None:
        """Decode the Event of the record at ``pos``; returns its layout when it holds scalars
        only (wall_time offset, step varint offset and length, value offsets, tags: offsets
        from ``pos``), else None."""
        p = pos + 12
        wall, step = 0.0, 0
        wall_at = step_at = klen = 0
        summaries: list[tuple[int, int]] = []
        graph: tuple[int, int] | None = None
        while p < stop:
            key = data[p]
            if key == 0x09:
                wall_at = p + 1
                wall = _unpack_d(data, wall_at)[0]
                p += 9
            elif key == 0x10:
                step_at = p + 1
                step = data[step_at]
                if step < 0x80:
                    p += 2
                else:
                    step, p = _varint(data, step_at, stop)
                    if step >= 1 << 63:
                        step -= 1 << 64
                klen = p - step_at
            elif key == 0x2A or key == 0x22:
                n = data[p + 1]
                q = p + 2
                if n >= 0x80:
                    n, q = _varint(data, p + 1, stop)
                p = q + n
                if key == 0x2A:
                    summaries.append((q, p))
                else:
                    graph = (q, p)
            elif key == 0x1A:  # version: the file's first Event, nothing to read
                return None
            else:
                p = _skip(data, p, stop)
        if p != stop:
            raise Malformed("a field runs past the end of the Event")
        values: list[tuple[bytes, int, int, int]] = []  # tag, field, start, end
        for q, e in summaries:
            while q < e:
                if data[q] != 0x0A:  # not Summary.value
                    q = _skip(data, q, e)
                    continue
                n = data[q + 1]
                q += 2
                if n >= 0x80:
                    n, q = _varint(data, q - 1, e)
                ve = q + n
                if ve > e:
                    raise Malformed("a Summary.Value runs past the end of its Summary")
                raw, field, start, fend = b"", 0, 0, 0
                while q < ve:
                    key = data[q]
                    if key == 0x0A:  # tag
                        n = data[q + 1]
                        q += 2
                        if n >= 0x80:
                            n, q = _varint(data, q - 1, ve)
                        raw = data[q : q + n]
                        q += n
                    elif key == 0x1D:  # scalar_value
                        field, start, fend = SCALAR, q + 1, q + 5
                        q += 5
                    else:
                        number, start = _varint(data, q, ve)
                        field, wire = number >> 3, number & 7
                        if wire == 2:
                            n, start = _varint(data, start, ve)
                            fend = start + n
                        else:
                            fend = _skip(data, q, ve)
                        q = fend
                if q != ve:
                    raise Malformed("a field runs past the end of its Summary.Value")
                values.append((raw, field, start, fend))
            if q != e:
                raise Malformed("a field runs past the end of its Summary")
        at = self.offset + pos
        if graph is not None:
            self._decode(
                MindSporeValue(GRAPH_TAG, GRAPH_EVENT_FIELD, 0, data[graph[0] : graph[1]]),
                step,
                wall,
                batch,
                at,
            )
        layout = wall_at > 0 and graph is None and bool(values) and self._inline_scalar
        tags, offsets = [], []
        for raw, field, start, fend in values:
            tag = self._tag(raw)
            if field == SCALAR and fend - start == 4 and self._inline_scalar:
                batch.tags.append(tag)
                batch.steps.append(step)
                batch.wall_times.append(wall)
                batch.values.append(_unpack_f(data, start)[0])
                tags.append(tag)
                offsets.append(start - pos)
            else:
                layout = False
                value = MindSporeValue(tag, SUMMARY_EVENT_FIELD, field, data[start:fend])
                self._decode(value, step, wall, batch, at)
        if not layout:
            return None
        return wall_at - pos, step_at - pos if klen else 0, klen, offsets, tags  # type: ignore[return-value]

    def _decode(self, value: MindSporeValue, step: int, wall: float, batch: Batch, at: int) -> None:
        key = (value.tag, value.event_field, value.value_field)
        kind = self._kind_of.get(key)  # the kind that took this (tag, field) is asked first
        names = (
            list(self.decoders)
            if kind is None
            else [kind, *(n for n in self.decoders if n != kind)]
        )
        for name in names:
            try:
                row = self.decoders[name](value, step, wall)
            except Exception as exc:  # a damaged value is reported; the rest is read
                warn_corrupt(
                    self.path,
                    at,
                    f"{name} value {value.tag!r} not decodable ({type(exc).__name__}: {exc}); value skipped",
                )
                return
            if row is None:
                continue
            self._kind_of[key] = name
            if name == "scalar":
                batch.tags.append(value.tag)
                batch.steps.append(step)
                batch.wall_times.append(wall)
                batch.values.append(float(row))  # the scalar kind's payload: a float
            else:
                batch.add_row(name, {"tag": value.tag, "step": step, "wall_time": wall, **row})
            return
        held = _HELD_IN.get((value.event_field, value.value_field), f"field {value.value_field}")
        batch.undecoded[(held, value.tag)] = batch.undecoded.get((held, value.tag), 0) + 1

    def _bulk(
        self,
        data: bytes,
        pos: int,
        end: int,
        size: int,
        layout: tuple[int, int, int, list[int], list[str]],
        batch: Batch,
    ) -> int:
        """Decode the run of records at ``pos`` laid out like the ``size``-byte record just
        before it (same bytes but wall_time, step, values and data CRC); returns bytes used."""
        import numpy as np

        k = min((end - pos) // size, _MAX_RUN)
        if k < _MIN_RUN:
            return 0
        wall_at, step_at, klen, offsets, tags = layout
        first = np.frombuffer(data, np.uint8, size, pos - size)
        m = np.frombuffer(data, np.uint8, k * size, pos).reshape(k, size)
        varying = np.zeros(size, bool)
        varying[wall_at : wall_at + 8] = True
        varying[step_at : step_at + klen] = True
        value_at = np.add.outer(np.asarray(offsets), np.arange(4))
        varying[value_at.ravel()] = True
        varying[size - 4 :] = True
        fixed = ~varying
        want = first[fixed]
        # compare blocks of growing size: a run that ends soon costs little, a long one O(run)
        done, block = 0, _MIN_RUN
        while done < k:
            rows = m[done : min(done + block, k)]
            same = (rows[:, fixed] == want).all(axis=1)
            if klen > 1:
                same &= (rows[:, step_at : step_at + klen - 1] >= 0x80).all(axis=1)
            if klen:
                same &= rows[:, step_at + klen - 1] < 0x80
            if not same.all():
                done += int(np.argmin(same))
                break
            done += len(rows)
            block *= 2
        k = done
        if k < _MIN_RUN:
            return 0
        k = leading_good_crcs(data, pos, size, k)  # a bad record goes to the loop, which reports it
        if not k:
            return 0
        m = m[:k]
        step = np.zeros(k, np.uint64)
        for i in range(klen):
            step |= (m[:, step_at + i] & 0x7F).astype(np.uint64) << np.uint64(7 * i)
        nv = len(offsets)
        batch.flush_lists()  # records decoded one by one before this run keep their place
        batch.columns.append(
            (
                list(tags),
                np.tile(np.arange(nv, dtype=np.int32), k),
                np.repeat(step.view(np.int64), nv),
                np.repeat(m[:, wall_at : wall_at + 8].copy().view("<f8").ravel(), nv),
                m[:, value_at].copy().view("<f4").ravel().astype(np.float64),
            )
        )
        return k * size


class LineageFileReader(SummaryFileReader):
    """One MindSpore lineage file: each lineage message becomes a row of its kind."""

    def record(self, data: bytes, pos: int, stop: int, end: int, batch: Batch) -> int:
        try:
            p = pos + 12
            wall, step = 0.0, 0
            messages: list[tuple[int, int, int]] = []
            while p < stop:
                key, q = _varint(data, p, stop)
                number, wire = key >> 3, key & 7
                if number == 1 and wire == 1:
                    wall = _unpack_d(data, q)[0]
                elif number == 2 and wire == 0:
                    step = _varint(data, q, stop)[0]
                    step = step - (1 << 64) if step >= 1 << 63 else step
                elif number == 3:
                    return stop + 4  # a version event
                elif number in LINEAGE_KINDS and wire == 2:
                    n, q = _varint(data, q, stop)
                    messages.append((number, q, q + n))
                p = _skip(data, p, stop)
            if p != stop:
                raise Malformed("a field runs past the end of the LineageEvent")
        except (Malformed, IndexError, struct.error) as exc:
            warn_corrupt(
                self.path, self.offset + pos, f"unparsable LineageEvent ({exc}); record skipped"
            )
            return stop + 4
        for number, start, fend in messages:
            value = MindSporeValue(LINEAGE_KINDS[number], number, 0, data[start:fend])
            self._decode(value, step, wall, batch, self.offset + pos)
        return stop + 4


def open_reader(fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> SummaryFileReader:
    """A reader of the summary or lineage file at ``path``."""
    if path.endswith(LINEAGE_SUFFIX):
        return LineageFileReader(fs, path, decoders)
    return SummaryFileReader(fs, path, decoders)
