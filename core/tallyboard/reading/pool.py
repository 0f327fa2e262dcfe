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
import pickle
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


def _can_fork(readers: Sequence[FileReader]) -> bool:
    """Forking is safe (no other thread) and the readers travel (a plugin's decoder defined in
    a function, say, does not pickle: then they are read here)."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() != 1:
        return False
    return _pickled(readers[0]) is not None


def read_files(
    readers: Sequence[FileReader],
    workers: int,
    done: Callable[[], None] | None = None,
) -> Iterator[tuple[int, FileReader, Batch]]:
    """``(index, reader, batch)`` for every reader, in order: each reader read once, by
    ``workers`` processes when more than one (and forking is safe), else here. The reader given
    back is the one to keep (a worker's copy, which has advanced). ``done`` is called per file."""
    if workers <= 1 or len(readers) < 2 or not _can_fork(readers):
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
    pending: deque[tuple[int, Future[bytes | None] | None]] = deque()
    nxt = 0
    try:
        while nxt < len(starts) or pending:
            while nxt < len(starts) and len(pending) < workers * 4:
                first = starts[nxt]
                payload = _pickled(readers[first : first + chunk])
                future = None if payload is None else pool.submit(_read_chunk, payload)
                pending.append((first, future))
                nxt += 1
            first, future = pending.popleft()
            result = None if future is None else future.result()
            items = (
                [_read_one(r) for r in readers[first : first + chunk]]  # they did not travel
                if result is None
                else pickle.loads(result)
            )
            for k, (reader, batch, caught) in enumerate(items):
                for message, category in caught:
                    warnings.warn(message, category, stacklevel=2)
                if done is not None:
                    done()
                yield first + k, reader, batch
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _pickled(value: Any) -> bytes | None:
    """``value`` pickled here, where a failure is seen (in the pool's feeder thread it can
    leave the pool waiting forever), or None when it does not pickle."""
    try:
        return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    except Exception:
        return None


def _read_chunk(payload: bytes) -> bytes | None:
    """In a worker: read each reader of ``payload``; the results pickled, or None when they do
    not pickle (the caller then reads those files itself, from the offsets it still has)."""
    return _pickled([_read_one(reader) for reader in pickle.loads(payload)])
