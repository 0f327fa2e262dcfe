"""The ``mindspore`` sink: a MindSpore summary file, its lineage file and ``.npy`` exports.

Files are named and written as MindSpore writes them
(``<prefix>.out.events.summary.<time>.<device>.<host><suffix>`` and ``..._lineage``), created
on their first record only, the summary file starting with the version event; both become
read-only (0o400) on close. ``max_file_size`` caps each file as MindSpore does: the first record
that does not fit stops that file for good. Unlike MindSpore, an existing file is never
truncated: a name already taken moves the time stamp forward.

A ``record()`` step of float scalars only (the common case) is queued as a row ``(tag(s), step,
wall_time, value(s))`` and framed with thousands of others on the writer thread
(:func:`~tallyboard_mindspore.encoders.encode_scalar_rows`), byte for byte the Event the
per-record path writes, in call order with every other record. A step of one image or one
histogram (a NumPy array) is queued the same way, as a row of the array, and encoded with the
arrays queued beside it (:func:`~tallyboard_mindspore.encoders.encode_image_rows`,
:func:`~tallyboard_mindspore.encoders.encode_histogram_rows`). With ``max_file_size`` each
record is encoded in the caller instead, as MindSpore's budget counts every record's size.

Options (``SinkOptions.extra``): ``file_prefix``, ``file_suffix``, ``max_file_size``,
``raise_exception``, ``export_options``, ``time_second``, ``device_id``.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import stat
import struct
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import numpy as np
from tallyboard.plugin.sinks import Deferred, SinkOptions
from tallyboard.records import storage
from tallyboard.records.recordfile import RecordFile, row_key
from tallyboard.records.wire import float32 as _float32
from tallyboard.records.wire import wall_step as _wall_step
from tallyboard.warn import cannot_encode

from . import wire
from .encoders import (
    EVENT,
    HEAVY,
    LINEAGE,
    VALUE,
    Dropped,
    StepValues,
    encode_histogram,
    encode_histogram_rows,
    encode_image,
    encode_image_rows,
    encode_scalar,
    encode_scalar_rows,
    encode_step_rows,
    image_row_ok,
)
from .wire import tag_field as _tag_field

SINK = "mindspore"
NAME_MARK = ".out.events.summary."
LINEAGE_SUFFIX = "_lineage"
FREE_DISK_SPACE_TIMES = 32
DISK_CHECK_SECS = 1.0
READ_ONLY = stat.S_IRUSR
#: Bytes (estimated for values still to encode) that may wait for the writer thread before the
#: caller waits for it. Small enough that a caller outpacing the encoder reuses warm memory
#: rather than growing the heap (page faults cost more than the wait), large enough to absorb
#: bursts. At the core's 64 MiB, a run of 1x3x64x64 images paid about 15 us a step in page
#: faults while the queue grew, and peaked at 2.4 times the memory.
MAX_PENDING_BYTES = 8 * 1024 * 1024
#: Bytes a queued row of scalars is taken to need on disk (for the free-space check).
ROW_SIZE_HINT = 64
#: The key of scalar rows in a RecordFile's queue (see RecordFile.write_row).
_SCALAR_ROWS = row_key(encode_scalar_rows)
#: Keys of image and histogram rows: arrays encoded many at a time on the writer thread.
_ARRAY_ROWS = {
    "image": row_key(encode_image_rows, arrays=True),
    "histogram": row_key(encode_histogram_rows, arrays=True),
}
#: The key of rows holding the values of one record() with images, histograms or tensors: each
#: one Event, the arrays of many encoded together (a step of a SummaryCollector, of operators).
_STEP_ROWS = row_key(encode_step_rows, arrays=True)
logger = logging.getLogger("tallyboard.mindspore")


def device_id() -> int:
    """The device id in file names: ``RANK_ID`` (MindSpore launchers), else ``RANK`` (torchrun), else 0."""
    for var in ("RANK_ID", "RANK"):
        value = os.environ.get(var, "").strip()
        if value.isdigit():
            return int(value)
    return 0


def file_name(prefix: str, suffix: str, time_second: int, device: int) -> str:
    """``<prefix>.out.events.summary.<time_second>.<device>.<hostname><suffix>``."""
    return f"{prefix}{NAME_MARK}{time_second}.{device}.{platform.node()}{suffix}"


class _File:
    """One lazily created record file with MindSpore's size budget and error handling."""

    def __init__(self, sink: MindSporeSink, path: str, header: bool) -> None:
        self.sink = sink
        self.path = path
        self.header = header
        self.file: RecordFile | None = None
        self.budget = sink.max_file_size
        self.dead = False
        self._next_disk_check = 0.0
        # Rows (see write_row) go straight to the open file's write_row; None until the file is
        # open and again once it is stopped. The disk is checked when the caller's wall time
        # leaves [rows_checked, rows_check_due): at most once a second, whichever way the
        # clock moves.
        self.write_rows: Callable[[tuple[Any, ...]], None] | None = None
        self.rows_checked = 0.0
        self.rows_check_due = 0.0

    def _open(self) -> None:
        # SummaryRecord made the directory already; a SummaryWriter(sinks=["mindspore"]) has not
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        except FileExistsError:  # a file where the directory should be: the create says so
            pass
        while True:
            try:
                handle = storage.create_exclusive(self.path)
                break
            except FileExistsError:
                self.path = self.sink.next_free(self.path)
        os.chmod(self.path, stat.S_IRUSR | stat.S_IWUSR)
        self.file = RecordFile(
            handle,
            max_queue=self.sink.max_queue,
            flush_secs=self.sink.flush_secs,
            max_pending_bytes=MAX_PENDING_BYTES,
        )
        self.write_rows = self.file.write_row  # None again once the file is stopped
        if self.header:
            self.write(wire.version_event(time.time()))

    def write(self, record: bytes | Deferred) -> None:
        if self.dead:
            return
        if self.file is None:
            self.sink.guard(self, self._open)  # the log dir may have become unwritable
            if self.dead:
                return
        assert self.file is not None
        if self.budget is not None and type(record) is bytes:
            required = len(record) + 16
            if required > self.budget:
                logger.warning(
                    "'max_file_size' reached: There are %d bytes remaining, but the '%s' requires to write "
                    "%d bytes.",
                    self.budget,
                    self.path,
                    required,
                )
                self.stop()
                return
            self.budget -= required
        now = time.monotonic()
        if now >= self._next_disk_check:
            self._next_disk_check = now + DISK_CHECK_SECS
            size = len(record) if type(record) is bytes else getattr(record, "size_hint", 0)
            self.sink.check_disk(self.path, size + 16, self)
            if self.dead:
                return
        try:
            self.file.write(record)
        except (OSError, RuntimeError) as exc:
            self.sink.failed(self, exc)

    def _ready(self, wall_time: float, size: int) -> bool:
        """Open the file on first use and check the disk at most once a second of the caller's
        wall time (whichever way the clock moves); False once the file is stopped."""
        if self.write_rows is None:
            if self.dead:
                return False
            if self.file is None:
                self.sink.guard(self, self._open)
                if self.dead:
                    return False
        if not self.rows_checked <= wall_time < self.rows_check_due:
            self.rows_checked, self.rows_check_due = wall_time, wall_time + DISK_CHECK_SECS
            self.sink.check_disk(self.path, size, self)
        return not self.dead

    def _queue(self, wall_time: float, size: int, method: str, *args: Any) -> None:
        """Call the open file's ``method`` (a queueing one) once the file is ready for ``size``
        more bytes; no size budget (see the sink). An I/O error stops the file, as any does."""
        if self._ready(wall_time, size):
            try:
                getattr(self.file, method)(*args)
            except (OSError, RuntimeError) as exc:
                self.sink.failed(self, exc)

    def write_row(self, row: tuple[Any, ...], wall_time: float) -> None:
        """Queue a validated row for the file's batch encoder."""
        self._queue(wall_time, ROW_SIZE_HINT, "write_row", row)

    def write_array_row(self, row: tuple[Any, ...], wall_time: float) -> None:
        """Queue a validated row of an array (see RecordFile.write_array_row)."""
        self._queue(wall_time, int(row[4].nbytes) + 16, "write_array_row", row)

    def write_deferred(self, record: Deferred, size: int, wall_time: float) -> None:
        """Queue a Deferred encode of about ``size`` bytes."""
        self._queue(wall_time, size + 16, "write", record, size)

    def flush(self) -> None:
        if self.file is not None and not self.dead:
            self.sink.guard(self, self.file.flush)
            fsync = getattr(self.file.handle, "fsync", None)
            if fsync is not None and not self.dead:
                self.sink.guard(self, fsync)

    def stop(self) -> None:
        """Close this file for good (size budget exhausted, or an error)."""
        self.dead = True
        self.write_rows = None
        if self.file is not None:
            try:
                self.file.close()
            except Exception as exc:  # already reported once; the file is done
                logger.error("closing %s failed: %s", self.path, exc)

    def close(self) -> None:
        if self.file is None:
            return
        if not self.dead:
            self.dead = True
            self.write_rows = None
            self.sink.guard(self, self.file.close)
        _make_read_only(self.path)


def _make_read_only(path: str) -> None:
    try:
        os.chmod(path, READ_ONLY)
    except OSError as exc:
        logger.error("cannot make %s read-only: %s", path, exc)


class MindSporeSink:
    """Write records in MindSpore's summary and lineage files under ``options.log_dir``."""

    def __init__(self, options: SinkOptions) -> None:
        from tallyboard.plugin.registry import get_registry

        extra = options.extra
        self.log_dir = os.path.realpath(os.fspath(options.log_dir))
        self.prefix: str = extra.get("file_prefix", "events")
        self.suffix: str = extra.get("file_suffix", "_MS")
        self.max_file_size: int | None = extra.get("max_file_size")
        self.raise_exception = bool(extra.get("raise_exception", False))
        export = extra.get("export_options") or {}
        self.export_tensors = export.get("tensor_format") == "npy"
        self.max_queue = options.max_queue
        self.flush_secs = options.flush_secs
        self.device = int(extra.get("device_id", device_id()))
        t = int(extra.get("time_second") or time.time())
        while any(os.path.lexists(p) for p in self._paths(t)):
            t += 1  # never truncate: a taken name moves the time stamp forward
        self.time_second = t
        summary, lineage, self.export_dir = self._paths(t)
        self.summary = _File(self, summary, header=True)
        self.lineage = _File(self, lineage, header=False)
        self.exported: list[str] = []
        self._by_kind = {
            kind: fn for (kind, sink), fn in get_registry().encoders.items() if sink == SINK
        }
        # Scalars the SummaryRecord face pools as floats are packed here, without the encoder
        # call, unless another plugin replaced the scalar encoder.
        self._fast_scalars = self._by_kind.get("scalar") is encode_scalar
        # A step of float scalars only is queued as a row, framed with thousands of others by
        # encode_scalar_rows on the writer thread. Not with max_file_size: MindSpore's budget
        # counts each record's size as it is written, so those steps are encoded here.
        self._scalar_rows = self._fast_scalars and self.max_file_size is None
        # A record() of one image or histogram: its encoder, run later on the writer thread (not
        # with max_file_size, whose budget needs each record's size when it is written).
        self._deferred: dict[str, Callable[..., Any]] = (
            {k: self._by_kind[k] for k in HEAVY - {"tensor"} if k in self._by_kind}
            if self.max_file_size is None
            else {}
        )
        # One image or histogram a step, as NumPy arrays (the face's payloads): a row, encoded
        # with the others queued beside it by the built-in batch encoders.
        self._array_rows = {
            kind: key
            for kind, key in _ARRAY_ROWS.items()
            if self._deferred.get(kind) in (encode_image, encode_histogram)
        }
        self._closed = False

    def _paths(self, t: int) -> tuple[str, str, str]:
        join = os.path.join
        return (
            join(self.log_dir, file_name(self.prefix, self.suffix, t, self.device)),
            join(self.log_dir, file_name(self.prefix, LINEAGE_SUFFIX, t, self.device)),
            join(self.log_dir, f"export_{t}"),
        )

    def next_free(self, path: str) -> str:
        """The same file name with the time stamp moved forward to a free one."""
        head, _, rest = path.rpartition(NAME_MARK)
        stamp, _, tail = rest.partition(".")
        t = int(stamp)
        while True:
            t += 1
            candidate = f"{head}{NAME_MARK}{t}.{tail}"
            if not os.path.lexists(candidate):
                return candidate

    @property
    def path(self) -> str:
        """The summary file's full path (it exists once something was written)."""
        return self.summary.path

    # -- errors ------------------------------------------------------------------------------

    def guard(self, target: _File, fn: Callable[..., Any], *args: Any) -> None:
        """Run a file operation; on error log it, stop that file, and re-raise if asked to."""
        try:
            fn(*args)
        except (OSError, RuntimeError) as exc:
            self.failed(target, exc)

    def failed(self, target: _File, exc: BaseException) -> None:
        """Log a write error and stop that file; re-raise it if ``raise_exception``."""
        logger.error("Write to %s failed: %s: %s", target.path, type(exc).__name__, exc)
        target.stop()
        if self.raise_exception:
            raise exc

    def check_disk(self, path: str, required: int, target: _File) -> None:
        def check() -> None:
            if shutil.disk_usage(os.path.dirname(path)).free < required * FREE_DISK_SPACE_TIMES:
                raise RuntimeError(f"The disk space may be soon exhausted by the '{path}'.")

        self.guard(target, check)

    # -- writing -----------------------------------------------------------------------------

    def write(self, data: Any) -> None:
        """Write one ``record()`` (a ``Recorded``) or one encoded value from a SummaryWriter."""
        items = getattr(data, "items", None)
        if items is None:
            self._write_single(data)
            return
        self.write_record(data.step, data.wall_time, items)

    def write_value(self, step: int, wall_time: float, item: tuple[str, str, Any]) -> None:
        """Write a ``record()`` of one ``(kind, tag, payload)`` value (the face's hot path)."""
        kind, tag, payload = item
        if kind == "scalar" and type(payload) is float and self._scalar_rows:
            # One float scalar a step: a row, framed later in a batch (encode_scalar_rows).
            row = (_SCALAR_ROWS, tag, step, wall_time, payload)
            summary = self.summary
            write_rows = summary.write_rows
            if write_rows is None or not summary.rows_checked <= wall_time < summary.rows_check_due:
                summary.write_row(row, wall_time)  # open the file, check the disk
                return
            try:
                write_rows(row)
            except (OSError, RuntimeError) as exc:
                self.failed(summary, exc)
            return
        key = self._array_rows.get(kind)
        if (
            key is not None
            and type(payload) is np.ndarray
            and (kind == "histogram" or image_row_ok(payload))
        ):
            # One image or histogram: a row, encoded later with its neighbours (a batch of
            # arrays of one shape costs a fraction of their NumPy calls one by one).
            self.summary.write_array_row((key, tag, step, wall_time, payload), wall_time)
            return
        encode = self._deferred.get(kind)
        if encode is not None:  # one image or histogram: encoded later on the writer thread
            size = (
                payload.nbytes
                if type(payload) is np.ndarray
                else int(getattr(payload, "nbytes", 0))
            )
            self.summary.write_deferred(
                Deferred(_value_record, (encode, tag, step, wall_time, payload), size),
                size,
                wall_time,
            )
            return
        self.write_record(step, wall_time, [item])

    def write_record(self, step: int, wall_time: float, items: list[tuple[str, str, Any]]) -> None:
        """Write the ``(kind, tag, payload)`` items of one ``record()`` as one summary Event."""
        if len(items) == 1 and self._fast_scalars:
            kind, tag, payload = items[0]
            if kind == "scalar" and type(payload) is float and self._scalar_rows:
                self.write_value(step, wall_time, items[0])
                return
            if kind == "scalar" and type(payload) is float and 0 <= step < 0x200000:
                # The hot path, one scalar a step: the whole Event in one struct.pack.
                packs = _scalar_packs.get(tag) or _scalar_structs(tag)
                try:
                    if step < 0x80:
                        record = packs[0](9, wall_time, 16, step, packs[3], payload)
                    elif step < 0x4000:
                        record = packs[1](
                            9, wall_time, 16, (step & 0x7F) | 0x80, step >> 7, packs[3], payload
                        )
                    else:
                        low, mid = (step & 0x7F) | 0x80, ((step >> 7) & 0x7F) | 0x80
                        record = packs[2](9, wall_time, 16, low, mid, step >> 14, packs[3], payload)
                except OverflowError:  # beyond float32: stored as infinity, as a C cast does
                    record = _wall_step(wall_time, step) + packs[3] + _float32(payload)
                self.summary.write(record)
                return
            if kind in self._deferred:  # one image or histogram a step
                self.write_value(step, wall_time, items[0])
                return
        if self._scalar_rows and len(items) > 1:
            tags = []
            values = []
            for kind, tag, payload in items:
                if kind != "scalar" or type(payload) is not float:
                    break
                tags.append(tag)
                values.append(payload)
            else:  # several float scalars: one row, one Event
                self.summary.write_row(
                    (_SCALAR_ROWS, tuple(tags), step, wall_time, tuple(values)), wall_time
                )
                return
        encoders = self._by_kind
        fast_scalars = self._fast_scalars
        encoded: list[bytes] = []
        heavy: list[tuple[Callable[..., Any], str, Any]] | None = None
        has_values = False
        for kind, tag, payload in items:
            if kind == "scalar" and fast_scalars and type(payload) is float:
                value = _tag_field(tag) + b"\x1d" + _float32(payload)
                if heavy is None:
                    encoded.append(value)
                else:
                    heavy.append((_encoded, tag, value))
                continue
            encode = encoders.get(kind)
            if encode is None:
                cannot_encode(SINK, kind)
                continue
            if kind in HEAVY:
                if kind == "tensor" and self.export_tensors:
                    self._export(tag, step, payload)
                if heavy is None:
                    heavy = [(_encoded, "", value) for value in encoded]
                heavy.append((encode, tag, payload))
                continue
            try:
                piece = encode(tag, step, wall_time, payload)
            except Dropped:
                has_values = True
                continue
            route = piece[0]
            if route == VALUE:
                if heavy is None:
                    encoded.append(piece[1])
                else:
                    heavy.append((_encoded, tag, piece[1]))
            elif route == EVENT:
                self.summary.write(piece[1])
            else:
                self.lineage.write(piece[1])
        if heavy is not None:
            if self.max_file_size is None:
                size = sum(int(getattr(p, "nbytes", 0)) for _, _, p in heavy)
                self.summary.write_array_row(
                    (_STEP_ROWS, "", step, wall_time, StepValues(heavy, size)), wall_time
                )
            else:
                self.summary.write(_summary_record(step, wall_time, heavy))
        elif encoded or has_values:
            self.summary.write(wire.summary_event(wall_time, step, encoded))

    def _write_single(self, data: Any) -> None:
        if type(data) is Deferred:
            self.summary.write(Deferred(_single_record, (data,), data.size_hint))
            return
        route, encoded, step, wall_time = data
        if route == LINEAGE:
            self.lineage.write(encoded)
        elif route == EVENT:
            self.summary.write(encoded)
        else:
            self.summary.write(wire.summary_event(wall_time, step or 0, [encoded]))

    def _export(self, tag: str, step: int, array: np.ndarray) -> None:
        directory = os.path.join(self.export_dir, "tensor")
        path = os.path.join(directory, f"{urllib.parse.quote(tag, safe='')}_{int(step)}.npy")

        def save() -> None:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            if shutil.disk_usage(directory).free < (array.nbytes + 128) * FREE_DISK_SPACE_TIMES:
                raise RuntimeError(f"The disk space may be soon exhausted by the '{path}'.")
            if os.path.lexists(path):
                os.remove(path)
            np.save(path, array)
            os.chmod(path, READ_ONLY)
            self.exported.append(path)

        try:
            save()
        except (OSError, RuntimeError) as exc:
            logger.error("Export to %s failed: %s: %s", path, type(exc).__name__, exc)
            if self.raise_exception:
                raise

    def flush(self) -> None:
        self.summary.flush()
        self.lineage.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.summary.close()
        finally:
            self.lineage.close()

    def abandon(self) -> None:
        """After a fork: forget the parent's files without writing to them."""
        for target in (self.summary, self.lineage):
            target.dead = True
            target.write_rows = None
            if target.file is not None:
                target.file._abandon_after_fork()
        self._closed = True

    def __repr__(self) -> str:
        return f"<MindSporeSink {self.path!r}>"


_ScalarPacks = tuple[Callable[..., bytes], Callable[..., bytes], Callable[..., bytes], bytes]
_scalar_packs: dict[str, _ScalarPacks] = {}


def _scalar_structs(tag: str) -> _ScalarPacks:
    """How a one-scalar summary Event of ``tag`` is packed: a ``struct`` pack for each length of
    the step's varint (1 to 3 bytes), and the bytes between the step and the float32 value (the
    ``summary`` field's header, the ``Value`` header, the tag, and the ``scalar_value`` key)."""
    value_head = b"\x0a" + wire.varint(len(_tag_field(tag)) + 5) + _tag_field(tag) + b"\x1d"
    head = b"\x2a" + wire.varint(len(value_head) + 4) + value_head
    n = len(head)
    packs = (
        struct.Struct(f"<BdBB{n}sf").pack,
        struct.Struct(f"<BdBBB{n}sf").pack,
        struct.Struct(f"<BdBBBB{n}sf").pack,
        head,
    )
    if len(_scalar_packs) < 10_000:
        _scalar_packs[tag] = packs
    return packs


def _encoded(
    tag: str, step: Any, wall_time: float, payload: bytes
) -> tuple[str, bytes, Any, float]:
    return VALUE, payload, step, wall_time


def _summary_record(
    step: int, wall_time: float, values: list[tuple[Callable[..., Any], str, Any]]
) -> bytes:
    """One summary Event holding every value of one ``record()`` that encodes (others are logged)."""
    out = []
    for encode, tag, payload in values:
        try:
            out.append(encode(tag, step, wall_time, payload)[1])
        except Dropped:
            continue
    return wire.summary_event(wall_time, int(step), out)


def _value_record(
    encode: Callable[..., Any], tag: str, step: int, wall_time: float, payload: Any
) -> bytes:
    """One summary Event of one value (``_summary_record`` of one value, a tuple less)."""
    try:
        values = [encode(tag, step, wall_time, payload)[1]]
    except Dropped:
        values = []
    return wire.summary_event(wall_time, int(step), values)


def _single_record(deferred: Deferred) -> bytes:
    route, encoded, step, wall_time = deferred()
    if route == VALUE:
        return wire.summary_event(wall_time, step or 0, [encoded])
    return encoded  # type: ignore[no-any-return]


def open_sink(options: SinkOptions) -> MindSporeSink:
    return MindSporeSink(options)
