"""The ``tfevents`` sink: TensorBoard event files, one per writer, named as torch names them."""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
from typing import Any

from tallyboard import paths
from tallyboard.plugin.sinks import SinkOptions
from tallyboard.records import storage
from tallyboard.records.recordfile import RecordFile, row_key

FILE_VERSION = "brain.Event:2"
WRITER_NAME = "tallyboard"
_counter = itertools.count()
_counter_lock = threading.Lock()


def next_file_name(suffix: str = "") -> str:
    """``events.out.tfevents.<time>.<host>.<pid>.<counter><suffix>``; the counter is process-wide
    and zero-padded, so that the files a process makes in one second sort (as TensorBoard reads
    a run's files, by name) in the order they were made: unpadded, ``.10`` sorted before ``.9``,
    and a run reopened in the same second was read back to front."""
    with _counter_lock:
        n = next(_counter)
    return (
        f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}"
        f".{n:06d}{suffix}"
    )


class TfEventsSink:
    """Appends serialized ``Event`` records to a new, exclusively created event file."""

    def __init__(self, options: SinkOptions) -> None:
        from .proto import Event, SessionLog, SourceMetadata

        storage.makedirs(options.log_dir)
        while True:
            path = paths.join(options.log_dir, next_file_name(options.filename_suffix))
            try:
                handle = storage.create_exclusive(path)
                break
            except FileExistsError:
                continue  # another writer got this name: take the next counter
        self.path = path
        self._file = RecordFile(handle, max_queue=options.max_queue, flush_secs=options.flush_secs)
        header = Event(
            wall_time=time.time(),
            file_version=FILE_VERSION,
            source_metadata=SourceMetadata(writer=WRITER_NAME),
        )
        self._file.write_now(header.SerializeToString())
        if options.purge_step is not None:
            now = time.time()
            step = options.purge_step
            self._file.write_now(
                Event(wall_time=now, step=step, file_version=FILE_VERSION).SerializeToString()
            )
            start = Event(wall_time=now, step=step, session_log=SessionLog(status=1))
            self._file.write_now(start.SerializeToString())
        self.write = self._file.write
        # Rows of encoders with a ``batch`` (see RecordFile.write_row), keyed by row_key(batch).
        self.write_row = self._file.write_row
        self.row_key = row_key

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def abandon(self) -> None:
        """After a fork: forget the parent's file without writing to it."""
        self._file._abandon_after_fork()

    def __repr__(self) -> str:
        return f"<TfEventsSink {self.path!r}>"


def open_sink(options: SinkOptions) -> Any:
    return TfEventsSink(options)
