"""Fetching many files of a remote store at once, with a bound on the bytes held.

Object stores answer one request slowly and many at once quickly, so the files of a read are
fetched by a pool of threads ahead of the decoding, in the order they are decoded. The bytes
fetched and not yet decoded never pass ``max_bytes`` (one file bigger than that is fetched
alone). A failed request is tried again with backoff; a store that refuses (missing object,
no permission) or keeps failing raises an ``OSError`` naming the URL.

Readers see the fetched bytes through :class:`Prefetched`, a file system whose ``open`` serves
a fetched file from memory and any other from the store, so no reader changes.
"""

from __future__ import annotations

import io
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Sequence
from typing import Any

#: concurrent requests, and bytes fetched but not yet decoded, by default.
FETCH_THREADS, MAX_BYTES = 32, 256 << 20
#: tries per file, and the first wait between them (doubled each time).
TRIES, BACKOFF = 4, 0.2


def is_local(fs: Any) -> bool:
    """Whether ``fs`` is the local disk (nothing to fetch ahead)."""
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol in ("file", "local")


#: how :class:`LocalFiles` opens and reads: never waiting in ``open`` (a FIFO put in a listed
#: file's place reads as empty; a regular file reads as always), ``pread`` where there is one.
_READ_ONLY = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
_PREAD = getattr(os, "pread", None)


class LocalFiles:
    """The local file system with files opened for reading directly: fsspec's ``open`` costs
    more than a small event file's whole decoding (path normalising, ``info`` calls).
    Everything else goes to ``fs``."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs

    def open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        if mode == "rb" and not kwargs:
            fd = os.open(path, _READ_ONLY)
            try:
                return os.fdopen(fd, "rb")
            except BaseException:  # a folder in the file's place: fdopen leaves the fd open
                os.close(fd)
                raise
        return self.fs.open(path, mode, **kwargs)

    def read_from(self, path: str, offset: int, limit: int) -> bytes | None:
        """The bytes of ``path`` from ``offset`` to its end (as large as it is now), or None
        when they are more than ``limit``: one ``open``, ``fstat`` and ``pread``, without the
        buffered file object that costs as much again for a small file."""
        fd = os.open(path, _READ_ONLY)
        try:
            size = os.fstat(fd).st_size
            if size - offset > limit:
                return None
            if size <= offset:
                return b""
            if _PREAD is not None:
                return _PREAD(fd, size - offset, offset)  # type: ignore[no-any-return]
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, size - offset)
        finally:
            os.close(fd)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fs, name)

    def __reduce__(self) -> Any:
        return (LocalFiles, (self.fs,))


class _Window(io.RawIOBase):
    """The bytes of a file from ``offset`` on, read like the file itself."""

    def __init__(self, offset: int, data: bytes) -> None:
        self._offset, self._data, self._pos = offset, data, offset

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence != 0:
            raise io.UnsupportedOperation("a fetched file seeks from its start only")
        if pos < self._offset:
            raise ValueError(f"position {pos} is before the fetched bytes ({self._offset})")
        self._pos = pos
        return pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> bytes:
        start = self._pos - self._offset
        stop = len(self._data) if n is None or n < 0 else min(len(self._data), start + n)
        self._pos = self._offset + max(stop, start)
        return bytes(self._data[start:stop])


class Prefetched:
    """A file system serving fetched files from memory (each once), the rest from ``fs``."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs
        self._ready: dict[str, tuple[int, bytes]] = {}
        self._lock = threading.Lock()

    def put(self, path: str, offset: int, data: bytes) -> None:
        with self._lock:
            self._ready[path] = (offset, data)

    def drop(self, path: str) -> None:
        with self._lock:
            self._ready.pop(path, None)

    def open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        with self._lock:
            got = self._ready.pop(path, None) if mode == "rb" else None
        if got is None:
            return self.fs.open(path, mode, **kwargs)
        return _Window(*got)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fs, name)

    def __reduce__(self) -> Any:
        return (Prefetched, (self.fs,))


def url(fs: Any, path: str) -> str:
    """``path`` as a URL of ``fs`` (``s3://bucket/key``), for messages."""
    try:
        return str(fs.unstrip_protocol(path))
    except Exception:
        return path


def within(fn: Callable[[], Any], seconds: float | None, what: str) -> Any:
    """``fn()``, given at most ``seconds`` (None: :func:`tallyboard.records.remote.deadline`,
    ``TALLYBOARD_REMOTE_DEADLINE``) on a daemon thread: ``TimeoutError`` naming ``what`` when
    it is not done by then (the call is left to finish on its own); its own error otherwise."""
    if seconds is None:
        from tallyboard.records.remote import deadline

        seconds = deadline()
    done = threading.Event()
    box: list[Any] = []

    def run() -> None:
        try:
            box.append((True, fn()))
        except BaseException as exc:  # handed to the caller
            box.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="tallyboard-store-call", daemon=True).start()
    if not done.wait(seconds):
        raise TimeoutError(
            f"{what}: the store did not answer within {seconds:g} s "
            "(TALLYBOARD_REMOTE_DEADLINE or deadline= sets this)"
        )
    ok, value = box[0]
    if not ok:
        raise value
    return value


def fetch(
    fs: Any,
    path: str,
    offset: int = 0,
    tries: int = TRIES,
    end: int | None = None,
    deadline: float | None = None,
) -> bytes:
    """The bytes of ``path`` from ``offset`` on (up to ``end``, when given), tried ``tries``
    times with backoff; each request given ``deadline`` seconds (a store that does not answer
    in time raises ``TimeoutError`` at once, not tried again)."""
    wait = BACKOFF
    for attempt in range(tries):
        try:
            return bytes(
                within(
                    lambda: fs.cat_file(path, start=offset or None, end=end),
                    deadline,
                    url(fs, path),
                )
            )
        except (FileNotFoundError, PermissionError, IsADirectoryError) as exc:
            raise type(exc)(f"{url(fs, path)}: the store refused the read ({exc})") from exc
        except TimeoutError:
            raise
        except Exception as exc:
            if attempt == tries - 1:
                raise OSError(
                    f"{url(fs, path)}: fetch failed {tries} times, last with {exc!r}"
                ) from exc
            time.sleep(wait)
            wait *= 2
    raise AssertionError("unreachable")


def fetch_ahead(
    fs: Any,
    jobs: Sequence[tuple[str, int, int]],
    threads: int = FETCH_THREADS,
    max_bytes: int = MAX_BYTES,
    errors: str = "raise",
    deadline: float | None = None,
) -> Generator[tuple[int, Any], None, None]:
    """``(index, data)`` for each ``(path, offset, size)`` of ``jobs``, in order, fetched by
    ``threads`` threads ahead of the caller; the bytes fetched and not yet handed on (those of
    the file just yielded included) stay under ``max_bytes``, or are one file. A fetch that
    fails raises its error here, or with ``errors="yield"`` is handed on in place of the data
    (the other files are still fetched). Each request is given ``deadline`` seconds."""
    from concurrent.futures import ThreadPoolExecutor

    if not jobs:
        return
    pool = ThreadPoolExecutor(max(1, min(threads, len(jobs))), thread_name_prefix="tb-fetch")
    pending: deque[tuple[Any, int]] = deque()
    held = nxt = 0
    try:
        while nxt < len(jobs) or pending:
            while nxt < len(jobs) and len(pending) < threads * 2:
                path, offset, size = jobs[nxt]
                want = max(size - offset, 0)
                if pending and held + want > max_bytes:
                    break
                future = pool.submit(fetch, fs, path, offset, TRIES, size, deadline)
                pending.append((future, want))
                held += want
                nxt += 1
            future, want = pending.popleft()
            try:
                data = future.result()
            except OSError as exc:
                if errors != "yield":
                    raise
                data = exc
            yield nxt - len(pending) - 1, data
            held -= want
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
