"""Decoding many files on every core: a pool of worker processes, sized to the machine.

Decoding is Python and numpy work that holds the GIL, so threads do not help; processes do.
Files are read in tasks: runs of consecutive files of about the same total size, each read in
one call (a reader class's ``read_many`` decodes a task's small files in one vectorised pass,
see :class:`tallyboard.plugin.readers.FileReader`). The pool is forked (no re-import), only while
this process runs no other thread (forking a threaded process can copy a held lock), and only
when the work is big enough to pay for it. A worker finds the files and their readers in the
memory it was forked with (the :class:`Job`), so only task numbers travel to it; it sends back
the task's :class:`~tallyboard.plugin.readers.Batches` and, when the caller reads the files again
later, the readers with their new offsets. Warnings a worker raises (a damaged record) are
raised again here, in the caller, so none is lost; a task whose results do not pickle (a
plugin's row holding an object that cannot travel) is read again here, from the offsets this
process still has.
"""

from __future__ import annotations

import os
import pickle
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from tallyboard.plugin.readers import Batch, Batches, ChunkedFileReader, FileReader

#: bytes of files below which one process reads them all (starting workers costs more).
MIN_POOL_BYTES = 8 << 20
#: the bytes of one task read here, without a pool (1 MiB: a sweep of small files read 1.2-1.7x
#: faster than in tasks of 256 KiB, 4 MiB no faster); bounds on the bytes of a pool's task, and
#: on the files of any task.
TASK_BYTES, MIN_TASK_BYTES, MAX_TASK_BYTES, MAX_TASK_FILES = 1 << 20, 256 << 10, 8 << 20, 2048


class Job(Protocol):
    """The files of one read: a worker forked from the caller finds them here."""

    def reader(self, i: int) -> FileReader:
        """The reader of file ``i`` (made on first use)."""
        ...


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


def plan(sizes: Sequence[int], groups: Sequence[Any], workers: int) -> list[tuple[int, int]]:
    """Tasks ``(start, stop)`` over files of ``sizes`` bytes: runs of consecutive files of about
    the same total (so every worker stays busy to the end), never across a change of
    ``groups`` (the reader kind: a task is read in one call)."""
    total = sum(sizes)
    target = TASK_BYTES if workers <= 1 else total // (workers * 8)
    target = max(MIN_TASK_BYTES, min(MAX_TASK_BYTES, target))
    tasks = []
    start, held = 0, 0
    for i, size in enumerate(sizes):
        if i > start and (
            held + size > target or i - start >= MAX_TASK_FILES or groups[i] != groups[start]
        ):
            tasks.append((start, i))
            start, held = i, 0
        held += size
    if start < len(sizes):
        tasks.append((start, len(sizes)))
    return tasks


_LIGHT: dict[Any, bool] = {}  # read_many -> whether it takes ``light``


def _takes_light(many: Any) -> bool:
    """Whether a ``read_many`` takes the ``light`` keyword (a listing's cheaper read)."""
    import inspect

    found = _LIGHT.get(many)
    if found is None:
        try:
            found = "light" in inspect.signature(many).parameters
        except (TypeError, ValueError):
            found = False
        _LIGHT[many] = found
    return found


def read_group(readers: Sequence[FileReader], light: bool = False) -> Batches:
    """Read ``readers`` (each its own file) once: runs of one reader class that offers
    ``read_many`` in one call each, the others one by one. ``light`` asks the readers that
    can for a listing's read (tags, steps and wall times; see
    :class:`~tallyboard.plugin.readers.FileReader`)."""
    parts: list[Batches] = []
    i = 0
    while i < len(readers):
        cls = type(readers[i])
        j = i + 1
        while j < len(readers) and type(readers[j]) is cls:
            j += 1
        many = getattr(cls, "read_many", None)
        if many is not None and j - i > 1:
            if light and _takes_light(many):
                parts.append(many(readers[i:j], light=True))
            else:
                parts.append(many(readers[i:j]))
        else:
            parts.append(Batches.of([r.read_new() for r in readers[i:j]]))
        i = j
    return parts[0] if len(parts) == 1 else Batches.concat(parts)


def concat(parts: Sequence[Batches]) -> Batches:
    """Several :class:`Batches` as one (see :meth:`Batches.concat`)."""
    return Batches.concat(parts)


_JOB: Job | None = None  # the job of the pool being run: what forked workers read


def _read_task(
    job: Job,
    start: int,
    stop: int,
    keep: bool,
    light: bool = False,
    window: int | None = None,
    isolate: bool = False,
    reduce: Callable[[Batches], Any] | None = None,
) -> tuple[list[FileReader] | None, Any, list[tuple[str, type[Warning]]], list[bool], list[str]]:
    """Read files ``start:stop`` of ``job``. ``isolate``: a file that cannot be read (an
    ``OSError``: deleted since it was listed, no permission, an I/O error) does not stop the
    others; the task is read again file by file from fresh readers (``job.reader`` gives
    copies), and the last item names, per file, why it could not be read ("" when it was).
    ``reduce``: what is given back in place of the task's :class:`Batches` (a summary made
    where the files were read, so only it travels from a worker)."""
    readers = [job.reader(i) for i in range(start, stop)]
    errors = [""] * len(readers)
    try:
        batches, caught = _read_windowed(readers, light, window)
    except OSError:
        if not isolate:
            raise
        readers = [job.reader(i) for i in range(start, stop)]
        parts, caught = [], []
        for k, reader in enumerate(readers):
            try:
                got, seen = _read_windowed([reader], light, window)
            except OSError as exc:
                errors[k] = str(exc) or type(exc).__name__
                got, seen = Batches.of([Batch()]), []
            parts.append(got)
            caught.extend(seen)
        batches = Batches.concat(parts)
    capped = [False] * len(readers)
    if window is not None:
        capped = [
            bool(vars(r).pop("capped", False)) if hasattr(r, "__dict__") else False for r in readers
        ]
    got = batches if reduce is None else reduce(batches)
    return (readers if keep else None), got, caught, capped, errors


def _read_windowed(
    readers: list[FileReader], light: bool, window: int | None
) -> tuple[Batches, list[tuple[str, type[Warning]]]]:
    """:func:`read_group` of ``readers``, each chunked reader stopping after ``window`` bytes;
    the warnings raised, caught to be raised again in the caller."""
    windowed = [r for r in readers if isinstance(r, ChunkedFileReader)] if window else []
    for r in windowed:
        r.read_limit = window
    try:
        return _recording(read_group, readers, light)
    finally:
        for r in windowed:  # back to the class's: a reader kept reads to the end next time
            del r.read_limit


def _recording(fn: Callable[..., Any], *args: Any) -> tuple[Any, list[tuple[str, type[Warning]]]]:
    """``fn(*args)`` and the warnings it raised, caught to be raised again in the process that
    asked (:func:`_warn_again`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fn(*args)
    return got, [(str(w.message), w.category) for w in caught]


def _warn_again(caught: list[tuple[str, type[Warning]]]) -> None:
    """Raise here the warnings :func:`_recording` caught (in this process or a worker)."""
    for message, category in caught:
        warnings.warn(message, category, stacklevel=3)


def _worker_task(
    start: int,
    stop: int,
    keep: bool,
    light: bool,
    window: int | None,
    isolate: bool,
    reduce: Callable[[Batches], Any] | None,
) -> bytes | None:
    """In a worker: read a task of the job it was forked with; the results pickled, or None
    when they do not pickle (the caller then reads the task itself)."""
    assert _JOB is not None
    return _pickled(_read_task(_JOB, start, stop, keep, light, window, isolate, reduce))


def _can_fork() -> bool:
    """Forking is safe: the platform forks, and no other thread runs here."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def read_tasks(
    job: Job,
    tasks: Sequence[tuple[int, int]],
    workers: int,
    keep: bool = True,
    done: Callable[[int], None] | None = None,
    light: bool = False,
    window: int | None = None,
    isolate: bool = False,
    reduce: Callable[[Batches], Any] | None = None,
) -> Iterator[tuple[int, list[FileReader] | None, Any, list[bool], list[str]]]:
    """``(start, readers, batches)`` for each task ``(start, stop)``, in order: each file read
    once, by ``workers`` processes when more than one (and forking is safe), else here.
    ``readers`` are the readers to keep (a worker's copies, which have advanced; None when
    ``keep`` is false, where the caller reads each file only once). ``done(n)`` is called as
    ``n`` more files are read; ``light`` asks for a listing's read (:func:`read_group`);
    ``window`` bounds the bytes one read of a file consumes (a reader kept in chunks stops
    there and is flagged in ``capped``, to be read on); ``isolate`` reads on past a file that
    cannot be read, whose error the last item gives (see :func:`_read_task`); ``reduce``
    turns each task's batches into what is given back in their place, in the worker that read
    them (a module-level function, so it travels by name)."""
    global _JOB
    if workers <= 1 or len(tasks) < 2 or not _can_fork():
        for start, stop in tasks:
            readers, batches, caught, capped, errors = _read_task(
                job, start, stop, True, light, window, isolate, reduce
            )
            _warn_again(caught)
            if done is not None:
                done(stop - start)
            yield start, (readers if keep else None), batches, capped, errors
        return
    import multiprocessing
    from collections import deque
    from concurrent.futures import Future, ProcessPoolExecutor

    if _JOB is not None:
        raise RuntimeError("a pool read is already running in this process")
    _JOB = job
    try:
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
        for _ in pool.map(int, range(workers)):  # start the workers while the job is set
            pass
    finally:
        _JOB = None
    pending: deque[tuple[int, int, Future[bytes | None]]] = deque()
    nxt = 0
    try:
        while nxt < len(tasks) or pending:
            while nxt < len(tasks) and len(pending) < workers * 3:  # a few tasks ahead
                start, stop = tasks[nxt]
                task = pool.submit(_worker_task, start, stop, keep, light, window, isolate, reduce)
                pending.append((start, stop, task))
                nxt += 1
            start, stop, future = pending.popleft()
            result = future.result()
            if result is None:  # it did not travel: read here, from the offsets kept here
                readers, batches, caught, capped, errors = _read_task(
                    job, start, stop, True, light, window, isolate, reduce
                )
            else:
                readers, batches, caught, capped, errors = pickle.loads(result)
            del result
            _warn_again(caught)
            if done is not None:
                done(stop - start)
            yield start, (readers if keep else None), batches, capped, errors
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


_WORK: Callable[[int], Any] | None = None  # the work of the shares being run: what workers do


def _share_task(k: int) -> bytes | None:
    """In a worker: share ``k`` of the work it was forked with, and the warnings it raised;
    pickled, or None when they do not pickle (the caller then does the share itself)."""
    assert _WORK is not None
    return _pickled(_recording(_WORK, k))


def in_shares(work: Callable[[int], Any], shares: int) -> list[Any]:
    """``[work(0), ..., work(shares - 1)]``: the first share done here while processes forked
    now do the others, each apart (nothing but their results travels back); the warnings they
    raise are raised again here. All done here when forking is not safe."""
    global _WORK
    if shares <= 1 or not _can_fork():
        return [work(k) for k in range(shares)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if _WORK is not None:
        raise RuntimeError("shares are already being read in this process")
    _WORK = work
    try:  # the executor forks every worker in submit(), before its thread starts
        pool = ProcessPoolExecutor(shares - 1, mp_context=multiprocessing.get_context("fork"))
        futures = [pool.submit(_share_task, k) for k in range(1, shares)]
    finally:
        _WORK = None
    try:
        out = [work(0)]
        for k, future in enumerate(futures, 1):
            result = future.result()
            if result is None:  # it did not travel: done again here
                out.append(work(k))
                continue
            got, caught = pickle.loads(result)
            _warn_again(caught)
            out.append(got)
        return out
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def read_files(
    readers: Sequence[FileReader],
    workers: int,
    done: Callable[[], None] | None = None,
) -> Iterator[tuple[int, FileReader, Batch]]:
    """``(index, reader, batch)`` for every reader, in order: each reader read once, by
    ``workers`` processes when more than one (and forking is safe), else here. The reader given
    back is the one to keep (a worker's copy, which has advanced). ``done`` is called per file."""

    class _Given:
        def reader(self, i: int) -> FileReader:
            return readers[i]

    sizes = [1] * len(readers)
    tasks = plan(sizes, [type(r) for r in readers], workers)
    for start, got, batches, _, _ in read_tasks(_Given(), tasks, workers):
        assert got is not None
        for k, batch in enumerate(batches.split()):
            if done is not None:
                done()
            yield start + k, got[k], batch


def _pickled(value: Any) -> bytes | None:
    """``value`` pickled here, where a failure is seen (in the pool's feeder thread it can
    leave the pool waiting forever), or None when it does not pickle."""
    try:
        return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    except Exception:
        return None
