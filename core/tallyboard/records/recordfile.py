"""A file of framed records written by a background thread, safe to trust with a training run.

The caller frames each record (C CRC) and appends it to a deque: one bytes object per record,
nothing else kept. Small records of one layout (scalars) can instead be queued as rows of
validated values (:meth:`RecordFile.write_row`), queued as their fields (no tuple for the
garbage collector to track): the writer thread frames thousands of them in one call of their
batch encoder (NumPy columns, :func:`tallyboard.records.framing.frame_fixed`; the rows handed
over as :class:`tallyboard.records.rows.QueuedRows`, whose fields come as lists without a tuple
per row), which costs less in total than framing each in the caller. Rows whose payload is an
array (an image, a histogram's values: :meth:`RecordFile.write_array_row`) count the array's
bytes as pending, and let their encoder work on many arrays at once. Every ``max_queue``
records the writer thread, if asleep, is woken; while only rows wait it lets them gather for up
to 50 ms, then writes everything pending, in the order it was queued, one ``write`` per up to
8,192 records (rows: a batch of up to 32,768); it also writes anything pending ``flush_secs``
after it last wrote, so nothing waits longer.
Guarantees:

- ``flush()`` returns once every record accepted before it is in the file.
- Memory is bounded: when more than ``max_pending_bytes`` wait, the caller waits for the thread.
- An I/O error (disk full, file too large) is raised once, with its own type, from the next
  ``write``/``flush``/``close``; the file is cut back to its last complete record so that records
  written later stay readable; nothing ever hangs.
- In a forked child the inherited writer is abandoned: the child neither writes the parent's
  pending records nor touches the parent's file.
"""

from __future__ import annotations

import struct
import threading
import time
import weakref
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, repeat, starmap
from queue import Empty, SimpleQueue
from typing import Any

from tallyboard.plugin.sinks import Deferred
from tallyboard.records import lifecycle
from tallyboard.records.framing import _MASK_DELTA as _DELTA
from tallyboard.records.framing import _U32, _header, frame
from tallyboard.records.framing import _header_cache as _headers
from tallyboard.records.framing import _pack_i as _pack_crc
from tallyboard.records.framing import crc32c as _crc32c
from tallyboard.records.rows import ROW_FIELDS, QueuedRows
from tallyboard.records.storage import AppendFile

DEFAULT_MAX_PENDING_BYTES = 64 * 1024 * 1024
# What one queued row counts for in pending bytes. A row queued as its five fields takes about
# 120 bytes; counting 1 KiB keeps queued rows within about 8 MiB at the default limit.
ROW_BYTES = 1024
_BATCH = 8192  # records per write at most (rows: ROWS_PER_BATCH)
#: Rows the writer thread lets gather (waiting, the GIL released) before it frames them, and for
#: how long at most. Each time the thread takes the GIL a running caller may wait for it, and a
#: batch is framed in about the same number of GIL stretches whatever its size: fewer, larger
#: batches make fewer waits. (At most a quarter of the pending-bytes limit: 16,384 rows at the
#: default 64 MiB.)
ROWS_PER_BATCH = 32768
GATHER_SECS = 0.05
_GATHER_LOOK = 0.005
# Records are joined into one write until they reach this many bytes; a record this large is
# written by itself. The joined copy is the only memory the pending-bytes limit does not count,
# so it must stay small: joining a whole batch of large records (stored PNGs) doubled the peak.
WRITE_BYTES = 1 << 20
# A framed record this large checks the pending-bytes limit at once, as a Deferred one does, not
# only every ``max_queue`` records: ten large records could otherwise overshoot it by ten.
LARGE_RECORD = 64 * 1024
_unpack_len = struct.Struct("<Q").unpack_from
_STOP = object()
_BYTES = {bytes}
_batches: list[Callable[[list[Any]], bytes]] = []  # by row key
_row_keys: dict[Callable[[list[Any]], bytes], int] = {}
_array_keys: set[int] = set()  # keys of rows whose payload counts its ``nbytes`` as pending
_row_keys_lock = threading.Lock()
_live: weakref.WeakSet[RecordFile] = weakref.WeakSet()


def row_key(batch: Callable[[list[Any]], bytes], arrays: bool = False) -> int:
    """The small int that stands for ``batch`` in queued rows (see :meth:`RecordFile.write_row`;
    ``arrays``: rows of :meth:`RecordFile.write_array_row`, whose payloads are arrays).

    Rows hold an int, not the function: CPython's garbage collector stops tracking a tuple of
    numbers and strings, but not one holding a function, and tracked queued rows made every
    collection slower (about 40% of add_scalar's time in a 200,000-call run).
    """
    key = _row_keys.get(batch)
    if key is None:
        with _row_keys_lock:  # two writers opened at once must not share a key
            key = _row_keys.get(batch)
            if key is None:
                key = len(_batches)
                _batches.append(batch)  # before the key is visible to readers without the lock
                if arrays:
                    _array_keys.add(key)
                _row_keys[batch] = key
    if arrays != (key in _array_keys):
        raise ValueError(f"row_key: {batch!r} was registered with arrays={not arrays}")
    return key


class WriterStopped(RuntimeError):
    """The writer thread is gone (the process forked, or the writer was abandoned)."""


class RecordFile:
    """Append framed records to ``handle`` from a background thread."""

    def __init__(
        self,
        handle: AppendFile,
        *,
        max_queue: int = 10,
        flush_secs: float = 120.0,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.handle = handle
        self.name = handle.name
        self._max_queue = max(1, int(max_queue))
        self._flush_secs = float(flush_secs)
        self._max_pending_bytes = max_pending_bytes
        self._pending: deque[Any] = deque()
        self._count = 0
        self._bytes_in = 0
        self._bytes_out = 0
        self._offset = 0  # end of the last complete record in the file
        self._error: BaseException | None = None
        self._closed = False
        self._accepting = True  # False once closed or an error waits to be raised: the slow path
        self._deferred = 0  # Deferred records queued and not yet taken by _drain_locked
        self._abandoned = False
        self._idle = True
        self._io_lock = threading.Lock()
        self._room = threading.Condition(threading.Lock())
        self._wake: SimpleQueue[object] = SimpleQueue()
        self._thread = threading.Thread(
            target=self._run, name=f"tallyboard-writer:{self.name}", daemon=True
        )
        self._thread.start()
        _live.add(self)

    # -- caller side -------------------------------------------------------------------------

    def write(self, record: bytes | Deferred, size: int | None = None) -> None:
        """Queue one record payload (bytes, or a Deferred encode returning bytes)."""
        # Frame bytes here: the CRC is cheap in C, and errors stay with the caller. One object
        # per record, and no more Python work per record on the writer thread (see _drain_locked).
        if type(record) is bytes and self._accepting:
            n = len(record)
            crc = _crc32c(record)
            self._pending.append(
                (_headers.get(n) or _header(n))
                + record
                + _pack_crc((((crc >> 15) | (crc << 17)) + _DELTA) & _U32)
            )
            self._bytes_in += n + 16 - ROW_BYTES  # _handoff adds ROW_BYTES per record
            if n >= LARGE_RECORD and self._bytes_in - self._bytes_out > self._max_pending_bytes:
                self._count += 1
                self._handoff()  # wait for room now, not max_queue records later
                return
        elif isinstance(record, Deferred) and self._accepting:  # an encode postponed
            self._bytes_in += (record.size_hint if size is None else size) - ROW_BYTES
            self._deferred += 1
            self._pending.append(record)
            if self._bytes_in - self._bytes_out > self._max_pending_bytes:
                self._count += 1
                self._handoff()  # a large record: wait for room now, not max_queue records later
                return
        else:
            self._raise_if_failed()
            if type(record) is bytes or isinstance(record, Deferred):
                self._accepting = True  # the error was raised before: accept records again
                self.write(record, size)
                return
            if isinstance(record, (bytes, bytearray, memoryview)):
                self.write(bytes(record), size)
                return
            raise TypeError(
                "a record file takes the bytes of one record (an encoder for this sink "
                "returns bytes: for the tfevents sink, one serialized Event, as "
                f"tallyboard_tfevents.encoding.summary_event makes) or a Deferred, got "
                f"{type(record).__name__}"
            )
        self._count += 1
        if self._count >= self._max_queue:
            self._handoff()

    def write_row(self, row: tuple[Any, ...]) -> None:
        """Queue one row ``(key, tag, step, wall_time, payload)`` (always five fields), framed
        later with its neighbours by ``batch(rows)``.

        ``key`` is :func:`row_key` of ``batch``, which takes a list of consecutive rows of that
        key and returns their framed records, in order. It runs on the writer thread (or in
        ``flush``/``close``), so a row must be validated already: encoding it cannot fail. Rows
        of numbers and strings cost the garbage collector little: CPython stops tracking them.
        """
        if len(row) != ROW_FIELDS:
            raise ValueError(
                f"write_row: a row is (key, tag, step, wall_time, payload), got {len(row)} fields"
            )
        if self._accepting:
            # Flattened into the queue (one atomic C call, so its fields stay together): a
            # queued tuple would be one more object for the garbage collector to track, and
            # every 700 of them a collection ran in the caller (p99.9 of add_scalar 33 us).
            self._pending.extend(row)
            self._count += 1
            if self._count >= self._max_queue:
                self._handoff()
            return
        self._raise_if_failed()
        self._accepting = True  # the error was raised before: accept rows again
        self.write_row(row)

    def write_array_row(self, row: tuple[Any, ...]) -> None:
        """Queue one row like :meth:`write_row` whose payload is a NumPy array (an image, the
        values of a histogram): its key is a ``row_key(batch, arrays=True)``, and the array's
        bytes count as pending until ``batch`` has encoded it, so memory stays bounded. Such
        rows let an encoder work on many arrays at once (NumPy calls over a stack of them)
        rather than on each alone. The caller must not change the array afterwards."""
        if len(row) != ROW_FIELDS:
            raise ValueError(
                f"write_array_row: a row is (key, tag, step, wall_time, payload), got {len(row)} fields"
            )
        if row[0] not in _array_keys:
            raise ValueError("write_array_row: the row's key is not a row_key(batch, arrays=True)")
        if not self._accepting:
            self._raise_if_failed()
            self._accepting = True  # the error was raised before: accept rows again
        self._pending.extend(row)
        self._bytes_in += int(row[4].nbytes)
        self._count += 1
        if self._count >= self._max_queue or (
            self._bytes_in - self._bytes_out > self._max_pending_bytes
        ):
            self._handoff()

    def _handoff(self) -> None:
        # Pending bytes: every record counts ROW_BYTES here, and records other than rows have
        # already added their size minus ROW_BYTES: one addition per batch, none per row.
        self._bytes_in += self._count * ROW_BYTES
        self._count = 0
        if self._idle:  # wake the thread only when it sleeps: one wake-up per batch it writes
            self._idle = False
            self._wake.put(None)
        if self._bytes_in - self._bytes_out > self._max_pending_bytes:
            self._wait_for_room()

    def _raise_closed(self) -> None:
        raise ValueError(f"write to closed record file {self.name}")

    def _raise_if_failed(self) -> None:
        """Raise the I/O error not raised yet, else that the file is closed, if it is."""
        if self._error is not None:
            self._raise_error()
        if self._closed:
            self._raise_closed()

    def write_now(self, record: bytes) -> None:
        """Write one record synchronously (ahead of nothing pending): for headers."""
        with self._io_lock:
            self._drain_locked()
            self._write_locked(frame(record))
        if self._error is not None:
            self._raise_error()

    def flush(self) -> None:
        """Write every record accepted so far, then raise any I/O error that occurred."""
        if self._abandoned or self._closed:
            return
        self._drain_and_flush()
        if self._error is not None:
            self._raise_error()

    def _drain_and_flush(self) -> None:
        """Write every pending record and flush the file; an I/O error is kept, not raised."""
        with self._io_lock:
            self._drain_locked()
            try:
                self.handle.flush()
            except OSError as exc:
                self._fail(exc)

    def close(self) -> None:
        """Flush, stop the thread and release the file; idempotent, even after an error."""
        if self._closed:
            return
        self._closed = True
        self._accepting = False
        _live.discard(self)
        if self._abandoned:
            return
        try:
            self._drain_and_flush()
        finally:
            self._wake.put(_STOP)
            if self._thread is not threading.current_thread():
                self._thread.join(timeout=10.0)
            try:
                self.handle.close()
            except OSError as exc:
                self._fail(exc)
        if self._error is not None:
            self._raise_error()

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran: nothing more is written."""
        return self._closed

    @property
    def pending(self) -> int:
        """Records accepted but not yet written."""
        count, skip = 0, 0
        for item in list(self._pending):
            if skip:
                skip -= 1
                continue
            count += 1
            if type(item) is int:  # a row's key: its other fields follow
                skip = ROW_FIELDS - 1
        return count

    def _fail(self, exc: BaseException) -> None:
        """Keep the first error, to be raised once from the next write/flush/close."""
        self._error = self._error or exc
        self._accepting = False

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        assert error is not None
        raise error

    def _wait_for_room(self) -> None:
        with self._room:
            while (
                self._bytes_in - self._bytes_out > self._max_pending_bytes
                and self._error is None
                and not self._abandoned
            ):
                if not self._thread.is_alive():
                    # The thread cannot drain: do it here rather than wait forever.
                    self._room.release()
                    try:
                        with self._io_lock:
                            self._drain_locked()
                    finally:
                        self._room.acquire()
                    break
                self._wake.put(None)
                self._room.wait(timeout=0.5)
        if self._error is not None:
            self._raise_error()

    # -- writer side -------------------------------------------------------------------------

    def _run(self) -> None:
        wake = self._wake
        more = False  # records came while the last batch was written: no sleep before the next
        while True:
            self._idle = True
            try:
                token = wake.get_nowait() if more else wake.get(timeout=self._flush_secs)
            except Empty:
                token = None
            self._idle = False
            if token is _STOP or self._abandoned:
                return
            if token is None and not self._gather():
                return
            with self._io_lock:
                if self._abandoned:
                    return
                # what is pending now, not what the caller adds meanwhile: that gathers anew
                self._drain_locked(len(self._pending))
            more = bool(self._pending)

    def _gather(self) -> bool:
        """Before framing rows, let them gather into a large batch: wait (the GIL released)
        while nothing but rows is pending, fewer than :data:`ROWS_PER_BATCH` (and than a quarter
        of the pending-bytes limit, so the caller never waits for room meanwhile), for up to
        :data:`GATHER_SECS` (or ``flush_secs``), looking every 5 ms (the interpreter's switch
        interval: sooner would not get the GIL sooner). A caller short of room wakes it early;
        ``flush()`` and ``close()`` write what is pending themselves. False when told to stop."""
        pending = self._pending
        target = min(ROWS_PER_BATCH, self._max_pending_bytes // (4 * ROW_BYTES)) * ROW_FIELDS
        clock = time.monotonic
        deadline = clock() + min(GATHER_SECS, self._flush_secs)
        while pending and type(pending[0]) is int and len(pending) < target:
            if self._deferred:
                return True
            left = deadline - clock()
            if left <= 0:
                return True
            try:
                token = self._wake.get(timeout=min(left, _GATHER_LOOK))
            except Empty:
                continue
            return token is not _STOP
        return True

    def _drain_locked(self, limit: int | None = None) -> None:
        """Write what is pending, in order: everything, or about ``limit`` queue entries.

        The queue holds framed records (bytes), Deferred encodes, and rows flattened into their
        five fields, the first a row key (an int). A stretch of rows of one key is framed as one
        batch; anything else goes through :meth:`_drain_mixed`, rows rebuilt as tuples."""
        pending = self._pending
        popleft = pending.popleft
        left = len(pending) if limit is None else limit
        while pending and (limit is None or left > 0):
            head = type(pending[0])
            if head is int and not self._deferred:
                m = min(len(pending), ROWS_PER_BATCH * ROW_FIELDS)
                m -= m % ROW_FIELDS
                items = list(starmap(popleft, repeat((), m)))
                keys = items[::ROW_FIELDS]
                if keys.count(items[0]) == len(keys):
                    # every record start holds the key: rows only, one encoder
                    left -= m
                    del keys
                    self._write_locked(self._encode_rows(QueuedRows(items)))
                    continue
                pending.extendleft(reversed(items))  # not rows only: record by record below
            elif head is bytes and not self._deferred:
                n = min(len(pending), _BATCH)
                items = list(starmap(popleft, repeat((), n)))
                if set(map(type, items)) == _BYTES:
                    left -= n
                    if self._bytes_in - self._bytes_out <= WRITE_BYTES:  # one join, no loop
                        self._write_locked(b"".join(items))
                    else:
                        self._write_in_pieces(items)
                    continue
                pending.extendleft(reversed(items))
            n = min(len(pending), _BATCH)
            left -= n
            # Deferred records are taken one at a time: each payload is dropped once encoded
            self._drain_mixed(self._records(n))

    def _records(self, count: int) -> Iterator[Any]:
        """Take up to ``count`` records off the queue, each row rebuilt as its tuple."""
        pending = self._pending
        popleft = pending.popleft
        for _ in range(count):
            if not pending:
                return
            item = popleft()
            if type(item) is int:
                item = (item, popleft(), popleft(), popleft(), popleft())
            yield item

    def _write_in_pieces(self, items: list[bytes]) -> None:
        """Write framed records in writes of up to :data:`WRITE_BYTES` (a larger record alone,
        not copied), each dropped once written: joining them all at once would hold a copy of
        every pending byte beside the records themselves."""
        ends = list(accumulate(map(len, items)))
        start, done = 0, 0
        while start < len(items):
            stop = max(start + 1, bisect_right(ends, done + WRITE_BYTES))
            self._write_locked(b"".join(items[start:stop]))
            items[start:stop] = repeat(b"", stop - start)
            start, done = stop, ends[stop - 1]

    def _encode_rows(self, rows: Sequence[tuple[Any, ...]]) -> bytes:
        """Frame consecutive rows that share one batch encoder; count them out of pending."""
        key = rows[0][0]
        try:
            data = _batches[key](rows)
        except BaseException as exc:  # an encode failed: report it, keep going
            self._fail(exc)
            data = b""
        arrays = sum(int(row[4].nbytes) for row in rows) if key in _array_keys else 0
        self._bytes_out += len(rows) * ROW_BYTES + arrays - len(data)
        return data

    def _drain_mixed(self, items: Iterable[Any]) -> None:
        """Write framed bytes, Deferred encodes and runs of rows, in the order they came.

        Up to :data:`WRITE_BYTES` are joined into one write, and a record that large is written
        by itself (no copy): memory stays within the pending-bytes limit plus about a megabyte.
        """
        chunk: list[bytes] = []
        size = 0
        run: list[tuple[Any, ...]] = []
        try:
            for item in items:
                kind = type(item)
                if kind is tuple:
                    if run and run[0][0] != item[0]:
                        chunk.append(data := self._encode_rows(run))
                        size += len(data)
                        run = []
                    run.append(item)
                    continue
                if run:
                    chunk.append(data := self._encode_rows(run))
                    size += len(data)
                    run = []
                if kind is not bytes:
                    self._deferred -= 1
                    size_hint = getattr(item, "size_hint", 0)
                    try:
                        encoded = item()
                        item = None  # drop the payload (pixels) before framing: one copy less
                        item = frame(encoded)
                        encoded = None
                    except BaseException as exc:  # an encode failed: report it, keep going
                        self._fail(exc)
                        self._bytes_out += size_hint
                        continue
                    self._bytes_out += size_hint - len(item)
                if len(item) >= WRITE_BYTES:
                    if chunk:
                        self._write_locked(b"".join(chunk))
                        chunk, size = [], 0
                    self._write_locked(item)
                    continue
                chunk.append(item)
                size += len(item)
                if size >= WRITE_BYTES:
                    self._write_locked(b"".join(chunk))
                    chunk, size = [], 0
            if run:
                chunk.append(self._encode_rows(run))
        finally:
            if chunk:
                self._write_locked(b"".join(chunk))

    def _write_locked(self, data: bytes) -> None:
        try:
            self.handle.write(data)
            self._offset += len(data)
        except OSError as exc:
            self._fail(exc)
            self._keep_complete_records(data)
        finally:
            self._bytes_out += len(data)
            with self._room:
                self._room.notify_all()

    def _keep_complete_records(self, data: bytes) -> None:
        """After a failed write of framed ``data``, cut the file back to its last whole record."""
        try:
            written = self.handle.tell() - self._offset  # type: ignore[attr-defined]
        except (OSError, AttributeError):
            written = 0
        keep = 0
        while keep + 12 <= len(data):
            end = keep + 16 + _unpack_len(data, keep)[0]
            if end > written:
                break
            keep = end
        self._offset += keep
        try:  # a partial record would hide every later record from TensorBoard's readers
            self.handle.truncate(self._offset)
        except OSError:
            pass

    def _abandon_after_fork(self) -> None:
        self._abandoned = True
        self._closed = True
        self._accepting = False
        self._pending = deque()
        self._deferred = 0
        self._io_lock = threading.Lock()
        self._room = threading.Condition(threading.Lock())


def _after_fork() -> None:
    for rf in list(_live):
        rf._abandon_after_fork()
    _live.clear()


def close_all_files() -> None:
    """Write and close every record file still open at exit, including those of writers the
    program dropped without closing (their thread keeps the file alive, not the writer)."""
    for rf in list(_live):
        try:
            rf.close()
        except OSError as exc:
            lifecycle.report_unraisable(
                exc, f"Exception ignored while closing {rf.name} at exit", rf
            )


lifecycle.on_fork_child(_after_fork)
lifecycle.on_exit(lifecycle.WRITERS + 1, close_all_files)
