"""Decoding many files on every core: a pool of worker processes, sized to the machine.

Decoding is Python and numpy work that holds the GIL, so threads do not help; processes do.
Each worker gets a reader (pickled: its path, offset and decoders), calls ``read_new`` and sends
back the reader with its new offset and the batch, so incremental reads stay incremental. Warnings
a worker raises (a damaged record) are raised again here, in the caller, so none is lost.
The pool is forked (no re-import), only while this process runs no other thread (forking a
threaded process can copy a held lock), and only when the work is big enough to pay for it.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tallyboard.plugin.readers import Batch, FileReader

#: bytes of files below which one process reads them all (starting workers costs more).
MIN_POOL_BYTES = 8 << 20


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def pool_size(workers: int | None, n_files: int, n_bytes: int) -> int:
    """Worker processes to use: ``workers`` when given, else the cores when the work pays for
    them; 1 means reading here, without a pool."""
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be None or an int >= 1, got {workers!r}")
        return min(workers, max(n_files, 1))
    if n_bytes < MIN_POOL_BYTES:
        return 1
    return max(1, min(cores(), n_files))


def _read_one(reader: FileReader) -> tuple[FileReader, Batch, list[tuple[str, type[Warning]]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batch = reader.read_new()
    return reader, batch, [(str(w.message), w.category) for w in caught]


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def read_files(
    readers: Sequence[FileReader],
    workers: int,
    done: Callable[[], None] | None = None,
) -> Iterator[tuple[int, FileReader, Batch]]:
    """``(index, reader, batch)`` for every reader, in order: each reader read once, by
    ``workers`` processes when more than one (and forking is safe), else here. The reader given
    back is the one to keep (a worker's copy, which has advanced). ``done`` is called per file."""
    if workers <= 1 or len(readers) < 2 or not _can_fork():
        for i, reader in enumerate(readers):
            batch = reader.read_new()
            if done is not None:
                done()
            yield i, reader, batch
        return
    import multiprocessing
    from collections import deque
    from concurrent.futures import Future, ProcessPoolExecutor

    # a few files per task: less pickling per file, still balanced between the workers; at
    # most four tasks a worker ahead of the caller, so results do not pile up unread
    chunk = max(1, min(64, len(readers) // (workers * 8)))
    starts = range(0, len(readers), chunk)
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    pending: deque[tuple[int, Future[Any]]] = deque()
    nxt = 0
    try:
        while nxt < len(starts) or pending:
            while nxt < len(starts) and len(pending) < workers * 4:
                first = starts[nxt]
                pending.append((first, pool.submit(_read_chunk, readers[first : first + chunk])))
                nxt += 1
            first, future = pending.popleft()
            for k, (reader, batch, caught) in enumerate(future.result()):
                for message, category in caught:
                    warnings.warn(message, category, stacklevel=2)
                if done is not None:
                    done()
                yield first + k, reader, batch
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _read_chunk(
    readers: Sequence[FileReader],
) -> list[tuple[FileReader, Batch, list[tuple[str, type[Warning]]]]]:
    return [_read_one(reader) for reader in readers]
