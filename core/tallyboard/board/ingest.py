"""What a reader plugin read, as TensorBoard's time series: the provider's bridge to its plugins.

The provider names no format. A reader plugin gives a :class:`~tallyboard.plugin.readers.Batch`
and each value takes one of two roads:

- **Passed through.** A reader of a format whose values are TensorBoard's own summaries (event
  files) keeps them as the file holds them (``Batch.summaries``; the loader's reader asks for
  this). Each goes through TensorBoard's own migrations, as its Python loader applies them to
  every event (``data_compat`` then ``dataclass_compat``, with the run's first metadata of each
  tag), and is served as it then is: its metadata (description, display name, plugin content),
  its tensor's dtype, shape and values, its blobs byte for byte, a value of a plugin no
  installed kind decodes included (shown when it has a data class, as RustBoard does).
- **The row road**, for every other format (MindSpore, CSV, JSONL, a third-party reader): the
  kind rebuilds each value from its row (the decoder's payload, or ``Kind.from_row``; the rows
  of one tag and step joined into one value where the kind can: ``Kind.join``) and the kind's
  encoder (its ``served`` variant when it has one) for the sink
  that writes TensorBoard's own summaries (the installed sink whose
  ``SinkSpec.tensorboard_summaries`` is set: :func:`summary_sink`) writes it; the same
  migrations then give each value its plugin name, metadata and data class. So the frontend
  sees exactly what it would for the same values converted to event files.

Scalars skip both per-value roads and go as whole columns. A tag's metadata comes from its
first value that carries some, passed through and migrated (``Batch.scalar_heads``), or else
from one value sent down the row road once per tag, which also gives the precision event files
keep (float32 for ``simple_value``): the column is then rounded the same way.

What cannot be shown is reported once per kind (or plugin name) and run, never dropped
silently: a kind with no TensorBoard encoder, one that cannot rebuild its rows, a value of no
data class TensorBoard serves, values no installed kind decodes (row road).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from tallyboard.board.reservoir import object_array
from tallyboard.board.store import BLOB_SEQUENCE, SCALAR, TENSOR, Run, Series, Store
from tallyboard.plugin.readers import SCALAR_KIND, Batch
from tallyboard.plugin.registry import Registry, get_registry

log = logging.getLogger("tallyboard.board")

Encoder = Callable[[str, Any, float, Any], Any]


class _Protos:
    """TensorBoard's message classes and migrations, imported on first use."""

    def __init__(self) -> None:
        from tensorboard import data_compat, dataclass_compat
        from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2
        from tensorboard.util import tensor_util

        self.Event = event_pb2.Event
        self.SummaryMetadata = summary_pb2.SummaryMetadata
        self.TensorProto = tensor_pb2.TensorProto
        self.migrate_value = data_compat.migrate_value
        self.migrate_legacy = data_compat.migrate_event
        self.migrate_event = dataclass_compat.migrate_event
        self.make_ndarray = tensor_util.make_ndarray


def summary_sink(reg: Registry) -> str | None:
    """The name of the installed sink whose encoders write TensorBoard's summary protos (the
    language of the frontend's plugins, hence of the data-provider protocol); None if none
    says so (``SinkSpec.tensorboard_summaries``). Several: the first by name."""
    return next((n for n in sorted(reg.sinks) if reg.sinks[n].tensorboard_summaries), None)


@functools.lru_cache(maxsize=1)
def protos() -> _Protos:
    """TensorBoard's protos and migrations (imported once, lazily)."""
    return _Protos()


class Ingest:
    """Turns the batches read from each run into points of the store's series.

    ``note(key, message)`` is called once per distinct problem (a kind that cannot be shown, a
    value that could not be encoded); the loader logs it.
    """

    def __init__(
        self,
        store: Store,
        note: Callable[[tuple[Any, ...], str], None],
        registry: Registry | None = None,
    ) -> None:
        self.store = store
        self.note = note
        self.reg = registry or get_registry()
        #: the sink whose encoders give TensorBoard's summaries (None: no value can be shown)
        self.wire = summary_sink(self.reg)
        self.p = protos()
        #: per run: the metadata of each tag's first value (``dataclass_compat``'s state)
        self._initial: dict[str, dict[str, Any]] = {}
        #: per scalar tag: (metadata of its series, whether values are kept as float32), as
        #: the row road gives them (one value sent down it)
        self._scalar_meta: dict[str, tuple[Any, bool]] = {}
        #: per (run, scalar tag) passed through: the same, from the tag's head
        self._head_meta: dict[tuple[str, str], tuple[Any, bool]] = {}
        self._encoders: dict[str, tuple[Encoder | None, str]] = {}

    def forget(self, run: str) -> None:
        """Drop what is remembered of ``run`` (deleted)."""
        self._initial.pop(run, None)
        for key in [k for k in self._head_meta if k[0] == run]:
            del self._head_meta[key]

    def add(self, run_name: str, batch: Batch) -> int:
        """Put everything of ``batch`` into the series of ``run_name``; returns the points
        offered."""
        run = self.store.run(run_name)
        for (plugin, tag), n in batch.undecoded.items():
            self.note(
                ("undecoded", run_name, plugin),
                f"run {run_name!r}: {n} value(s) of plugin {plugin!r} (first tag {tag!r}) are "
                "of no kind an installed plugin decodes; not shown",
            )
        count = self._add_scalars(run, batch)
        for kind, rows in batch.rows.items():
            count += self._add_rows(run, kind, rows)
        if batch.summaries:
            count += self._add_summaries(run, batch.summaries)
        return count

    # -- scalars: whole columns -------------------------------------------------------------

    def _add_scalars(self, run: Run, batch: Batch) -> int:
        batch.flush_lists()
        columns, batch.columns = batch.columns, []
        count = 0
        for names, codes, steps, walls, values in columns:
            if not len(codes):
                continue
            order = np.argsort(codes, kind="stable")
            sorted_codes = codes[order]
            bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
            for part in np.split(order, bounds):
                tag = names[int(codes[part[0]])]
                head = batch.scalar_heads.get(tag)
                series = run.series.get(tag) or self._scalar_series(run, tag, head)
                if series is None:
                    continue
                if series.data_class != SCALAR:
                    self.note(
                        ("class", run.name, tag),
                        f"run {run.name!r}: tag {tag!r} holds scalars and other values; "
                        "the scalars are not shown",
                    )
                    continue
                vals = values[part]
                known = self._head_meta.get((run.name, tag)) or self._scalar_info(run.name, tag)
                if known is None or known[1]:
                    vals = vals.astype(np.float32).astype(np.float64)
                w = walls[part]
                series.reservoir.offer(steps[part], w, vals)
                run.saw(float(w.min()))
                count += len(part)
        return count

    def _scalar_info(self, run: str, tag: str) -> tuple[Any, bool] | None:
        """The metadata of a scalar tag's series and whether event files keep its values as
        float32, learnt from one value sent down the road (once per tag)."""
        known = self._scalar_meta.get(tag)
        if known is None:
            values = self._encode(run, SCALAR_KIND, tag, 0, 0.0, 0.0, probe=True)
            if not values:
                return None
            value = values[0]
            float32 = value.tensor.dtype == 1  # DT_FLOAT: what a simple_value keeps
            known = self._scalar_meta[tag] = (value.metadata, float32)
        return known

    def _head_info(self, run: str, tag: str, head: bytes) -> tuple[Any, bool] | None:
        """The metadata of a scalar tag's series and whether its values are float32, from its
        first value carrying metadata as the file holds it (migrated as TensorBoard does)."""
        try:
            values = self._migrated(run, head)
        except Exception:  # a head that cannot be parsed: the tag reads as any scalar
            return None
        value = next((v for v in values if v.tag == tag), None)
        if value is None or value.metadata.data_class != SCALAR:
            return None
        known = self._head_meta[(run, tag)] = (value.metadata, value.tensor.dtype == 1)
        return known

    def _scalar_series(self, run: Run, tag: str, head: bytes | None = None) -> Series | None:
        """A new scalar series of ``run`` for ``tag`` (its metadata from ``head``, its first
        value carrying metadata as the file holds it, when there is one)."""
        known = None if head is None else self._head_info(run.name, tag, head)
        if known is None:
            known = self._scalar_info(run.name, tag)
        if known is None:
            return None
        meta = self.p.SummaryMetadata()
        meta.CopyFrom(known[0])
        self._initial.setdefault(run.name, {}).setdefault(tag, meta)
        return self.store.new_series(run, tag, meta)

    # -- other kinds: row by row -------------------------------------------------------------

    def _add_rows(self, run: Run, kind: str, rows: list[dict[str, Any]]) -> int:
        pending: dict[str, tuple[Series, list[int], list[float], list[Any]]] = {}
        encode, why = self._encoder(kind)
        if encode is None:
            self.note(
                ("kind", run.name, kind), f"run {run.name!r}: {why}; its values are not shown"
            )
            return 0
        # consecutive rows of one tag and step joined where the kind can (Kind.join): the
        # images of one summary, a row each, are one value, as the file's summary held them
        for group, built in self.reg.kinds[kind].rebuild_rows(rows, join=True):
            row = group[0]
            try:
                step, wall = int(row["step"]), float(row["wall_time"])
            except (KeyError, TypeError, ValueError):
                self.note(("row", kind), f"kind {kind!r}: a row without step or wall_time")
                continue
            for value_tag, value in [] if isinstance(built, Exception) else built:
                values = self._encode(run.name, kind, value_tag, step, wall, value)
                self._collect(run, step, wall, values or [], pending)
            if isinstance(built, Exception):
                self._failed(run.name, kind, row.get("tag"), step, built)
        return self._offer(run, pending)

    # -- passed through: TensorBoard's own summaries as the file holds them --------------------

    def _migrated(self, run: str, data: bytes) -> list[Any]:
        """The ``Summary.Value``s of one serialized ``Event`` after TensorBoard's migrations
        (``data_compat``, then ``dataclass_compat`` with the run's first metadata per tag)."""
        event = self.p.migrate_legacy(self.p.Event.FromString(data))
        out: list[Any] = []
        for ev in self.p.migrate_event(event, self._initial.setdefault(run, {})):
            if ev.HasField("summary"):
                out.extend(ev.summary.value)
        return out

    def _add_summaries(self, run: Run, summaries: list[tuple[str | None, str, bytes]]) -> int:
        """Serve each value as the file holds it, migrated as TensorBoard's loader does."""
        pending: dict[str, tuple[Series, list[int], list[float], list[Any]]] = {}
        for _kind, plugin, data in summaries:
            try:
                event = self.p.Event.FromString(data)
                step, wall = int(event.step), float(event.wall_time)
                values = self._migrated(run.name, data)
            except Exception as exc:  # the reader checked its CRC: a value TensorBoard cannot read
                self.note(
                    ("summary", run.name, plugin),
                    f"run {run.name!r}: a value of plugin {plugin!r} could not be read as "
                    f"TensorBoard's summaries: {exc!r}; such values are not shown",
                )
                continue
            self._collect(run, step, wall, values, pending)
        return self._offer(run, pending)

    def _collect(
        self,
        run: Run,
        step: int,
        wall: float,
        values: list[Any],
        pending: dict[str, tuple[Series, list[int], list[float], list[Any]]],
    ) -> None:
        """Add the migrated ``values`` of one step to the points pending per tag."""
        for value in values:
            got = self._payload(run, value)
            if got is None:
                continue
            series, payload = got
            entry = pending.get(value.tag)
            if entry is None or entry[0] is not series:
                entry = pending[value.tag] = (series, [], [], [])
            entry[1].append(step)
            entry[2].append(wall)
            entry[3].append(payload)

    def _offer(
        self, run: Run, pending: dict[str, tuple[Series, list[int], list[float], list[Any]]]
    ) -> int:
        """Offer the pending points of each series; returns how many."""
        count = 0
        for series, steps, walls, payloads in pending.values():
            values = payloads if series.data_class == SCALAR else object_array(payloads)
            series.reservoir.offer(steps, walls, values)
            run.saw(min(walls))
            count += len(steps)
        return count

    def _encoder(self, kind: str) -> tuple[Encoder | None, str]:
        got = self._encoders.get(kind)
        if got is None:
            k = self.reg.kinds.get(kind)
            wire = self.wire or ""
            encode = self.reg.encoders.get((kind, wire)) if wire else None
            if encode is None and ("*", wire) in self.reg.encoders:
                encode = functools.partial(self.reg.encoders[("*", wire)], kind)
            why = ""
            if not wire:
                why = "no installed sink writes TensorBoard's summaries"
            elif k is None:
                why = f"no installed kind {kind!r}"
            elif k.log is not None:
                why = f"kind {kind!r} is logged as files beside the run"
            elif encode is None:
                why = f"kind {kind!r} has no encoder for TensorBoard's summaries ({wire})"
            elif not k.rebuildable and kind != SCALAR_KIND:
                why = f"kind {kind!r} cannot be rebuilt from what was read (no from_row)"
            got = self._encoders[kind] = (None if why else encode, why)
        return got

    def _failed(self, run: str, kind: str, tag: Any, step: int, exc: Exception) -> None:
        self.note(
            ("value", run, kind),
            f"run {run!r}: a {kind} value ({tag!r} at step {step}) could not be written as "
            f"TensorBoard summaries: {exc!r}; such values are not shown",
        )

    def _encode(
        self, run: str, kind: str, tag: Any, step: int, wall: float, value: Any, probe: bool = False
    ) -> list[Any] | None:
        """The migrated ``Summary.Value``s of one payload (``probe``: a value the kind
        converts), [] when this value failed (noted), or None when no value of ``kind`` can be
        shown (noted once). An encoder's ``served`` variant, when it has one, writes the value
        as the board serves it (say, in a precision TensorBoard's migration would lose)."""
        encode, why = self._encoder(kind)
        if encode is None:
            self.note(("kind", run, kind), f"run {run!r}: {why}; its values are not shown")
            return None
        encode = getattr(encode, "served", encode)
        try:
            if probe:
                value = self.reg.kinds[kind].payload_of(value)
            data = encode(tag, step, wall, value)
            event = self.p.Event.FromString(bytes(data))
        except Exception as exc:  # this value cannot be shown: say so once per kind and run
            self._failed(run, kind, tag, step, exc)
            return []
        if event.HasField("summary"):
            for i, v in enumerate(event.summary.value):
                migrated = self.p.migrate_value(v)
                if migrated is not v:
                    event.summary.value[i].CopyFrom(migrated)
        initial = self._initial.setdefault(run, {}) if not probe else {}
        out = []
        for ev in self.p.migrate_event(event, initial):
            if ev.HasField("summary"):
                out.extend(ev.summary.value)
        return out

    def _payload(self, run: Run, value: Any) -> tuple[Series, Any] | None:
        """The series of a migrated value (made on its tag's first value) and what it keeps of
        the value: a float, a ``TensorProto`` or a tuple of blobs."""
        tag = value.tag
        series = run.series.get(tag)
        if series is None:
            meta = self._initial.get(run.name, {}).get(tag)
            if meta is None or not meta.data_class:
                meta = value.metadata
            if meta.data_class not in (SCALAR, TENSOR, BLOB_SEQUENCE):
                self.note(
                    ("unknown-class", run.name, tag),
                    f"run {run.name!r}: tag {tag!r} (plugin {meta.plugin_data.plugin_name!r}) "
                    "has no data class TensorBoard serves; not shown",
                )
                return None
            copy = self.p.SummaryMetadata()
            copy.CopyFrom(meta)
            series = self.store.new_series(run, tag, copy)
        tensor = value.tensor
        if series.data_class == SCALAR:
            try:
                return series, float(self.p.make_ndarray(tensor).item())
            except Exception:
                self.note(
                    ("scalar", run.name, tag),
                    f"run {run.name!r}: tag {tag!r} holds a value that is not one number; "
                    "such values are not shown",
                )
                return None
        if series.data_class == TENSOR:
            payload = self.p.TensorProto()
            payload.CopyFrom(tensor)
            return series, payload
        return series, tuple(bytes(b) for b in tensor.string_val)
