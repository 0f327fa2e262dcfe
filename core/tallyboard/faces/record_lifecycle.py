"""A :class:`~tallyboard.faces.summary_record.SummaryRecord`'s life: MindSpore's rule of one
open record in a process, ``flush``, ``close``, the ``with`` block, and what a forked child and
the interpreter's exit do with the records still open."""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any, Self

from tallyboard.faces.record_options import logger
from tallyboard.plugin.sinks import Sink, SinkFastPath
from tallyboard.records import lifecycle

_count = 0
_count_lock = threading.Lock()
_live: weakref.WeakSet[Any] = weakref.WeakSet()


def claim() -> None:
    """Count a new record in; RuntimeError (MindSpore's) while another one is open."""
    global _count
    with _count_lock:
        if _count > 0:
            raise RuntimeError(
                "For 'SummaryRecord', only one instance is supported in a training process, you are trying "
                f"to create a new one when the existing instance number is {_count}. Please check your scripts."
            )
        _count += 1


class RecordLifecycle:
    """A record's ``with`` block, :meth:`flush` and :meth:`close`, and its fork handling."""

    if TYPE_CHECKING:  # set by SummaryRecord.__init__ and _initialize
        _closed: bool
        _plain: bool
        _counted: bool
        _sink: Sink
        _fast: SinkFastPath
        _mirror: Any

    def __enter__(self) -> Self:
        """Use the record in a ``with`` block, which closes it at the end.

        Returns:
            SummaryRecord: this record.

        Raises:
            ValueError: The record is already closed.

        Example:
            >>> from tallyboard import SummaryRecord
            >>> with SummaryRecord("runs/ms_with") as record:
            ...     record.closed
            False
        """
        if self._closed:
            raise ValueError(
                'For "SummaryRecord", SummaryRecord has been closed, please check if close() method is called'
            )
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the record (:meth:`close`); an exception leaving the block goes on."""
        self.close()

    def flush(self) -> None:
        """Write everything recorded so far to the files and to disk (fsync), then return.

        The writer thread also writes what is pending every two seconds on its own; call this
        when another program must read the files now. A closed record logs an error, as
        MindSpore's does.

        Raises:
            OSError: With ``raise_exception=True``, a write error.
            RuntimeError: With ``raise_exception=True``, too little free disk space.

        Example:
            >>> import numpy as np
            >>> from tallyboard import SummaryRecord
            >>> with SummaryRecord("runs/ms_flush") as record:
            ...     record.add_value("scalar", "loss", np.float32(0.5))
            ...     ok = record.record(1)
            ...     record.flush()  # the step is in the file now
        """
        if self._closed:
            logger.error(
                "For 'SummaryRecord', the record writer is closed and can not flush, please check if close() "
                "method is called"
            )
            return
        self._sink.flush()
        if self._mirror is not None:
            self._mirror.flush()

    def close(self) -> None:
        """Write everything, close the files and make them read-only (0o400).

        A second call does nothing. Afterwards another ``SummaryRecord`` may be opened.

        Raises:
            OSError: With ``raise_exception=True``, a write error (the files are closed anyway).
            RuntimeError: With ``raise_exception=True``, too little free disk space.

        Example:
            >>> import numpy as np
            >>> from tallyboard import SummaryRecord
            >>> record = SummaryRecord("runs/ms_close")
            >>> record.add_value("scalar", "loss", np.float32(0.5))
            >>> ok = record.record(1)
            >>> record.close()
            >>> record.record(2)  # logs an error: closed
            False
        """
        with _count_lock:
            if self._closed:
                return
            self._closed = True
            self._plain = False
        _live.discard(self)
        try:
            self._sink.close()
        finally:
            self._release()
            if self._mirror is not None:
                self._mirror.close()

    def _release(self) -> None:
        global _count
        with _count_lock:
            if self._counted:
                self._counted = False
                _count -= 1

    def _after_fork(self) -> None:
        abandon = self._fast.abandon
        if abandon is not None:
            abandon()
        self._closed = True
        self._plain = False
        self._counted = False


def close_all() -> None:
    """Close every open SummaryRecord (run at interpreter exit)."""
    for record in list(_live):
        try:
            record.close()
        except Exception as exc:
            logger.error("closing %r at exit failed: %s", record, exc)


def _after_fork() -> None:
    global _count, _count_lock
    _count_lock = threading.Lock()
    for record in list(_live):
        record._after_fork()
    _live.clear()
    _count = 0


lifecycle.on_exit(lifecycle.WRITERS - 1, close_all)
lifecycle.on_fork_child(_after_fork)
