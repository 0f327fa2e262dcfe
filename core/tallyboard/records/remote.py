"""Appending to files on remote storage (S3, GCS, ``memory://``, ...) through fsspec.

Object stores cannot append. Re-uploading a growing object on every flush (what torch and
tensorboardX do) sends the whole file again each time: the bytes sent grow with the square of
the data. :class:`RemoteAppendFile` instead keeps the bytes written since the last upload in
memory and, on ``flush()`` (or when they pass ``part_bytes`` or get older than ``max_age``),
uploads them as a *new* object whose name sorts after the previous one:

    events.out.tfevents.1700000000.host.42.0              (part 0: the name the sink chose)
    events.out.tfevents.1700000000.host.42.0.part00000001
    events.out.tfevents.1700000000.host.42.0.part00000002

Every byte is uploaded once, so the bytes sent grow linearly. Each part holds whole writes (a
sink writes whole records), so readers that take files in name order, as TensorBoard does for
every file whose name contains ``tfevents``, see one continuous stream. Line-oriented files
(CSV, JSONL) are read back by concatenating the parts in name order: :func:`read_parts`.

Every call to the store has a deadline (:func:`deadline`, ``TALLYBOARD_REMOTE_DEADLINE``
seconds, 60 by default) that no retry loop of fsspec, botocore or aiohttp can stretch: the call
runs on a worker thread and the caller waits at most that long, then gets an ``OSError``. An
upload past its deadline keeps its bytes; while it may still land, the next ``flush`` waits for
it (within its own deadline) instead of sending the same part again, so a late upload can never
be overwritten by an older one.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from tallyboard.records import lifecycle
from tallyboard.values import env_seconds

PART_SEPARATOR = ".part"
PART_DIGITS = 8
DEFAULT_PART_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_AGE = 120.0
#: Environment variable holding the deadline in seconds of one call to the store.
DEADLINE_ENV = "TALLYBOARD_REMOTE_DEADLINE"
DEFAULT_DEADLINE = 60.0

T = TypeVar("T")


def deadline() -> float:
    """Seconds one call to remote storage may take (``TALLYBOARD_REMOTE_DEADLINE``, default 60)."""
    return env_seconds(DEADLINE_ENV, DEFAULT_DEADLINE)


class _Call:
    """``fn()`` on a daemon thread; :meth:`wait` returns its result or raises its error."""

    def __init__(self, fn: Callable[[], Any], what: str) -> None:
        self.what = what
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self._fn = fn
        threading.Thread(target=self._run, name="tallyboard-remote-call", daemon=True).start()

    def _run(self) -> None:
        try:
            self.result = self._fn()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def wait(self, seconds: float) -> Any:
        """The result; ``OSError`` when not done within ``seconds`` or when the call failed."""
        if not self.done.wait(seconds):
            raise OSError(
                f"{self.what} did not finish within {seconds:g} s "
                f"({DEADLINE_ENV} sets this deadline)"
            )
        if self.error is not None:
            if isinstance(self.error, OSError):
                raise self.error
            raise OSError(
                f"{self.what} failed: {type(self.error).__name__}: {self.error}"
            ) from self.error
        return self.result


def bounded(fn: Callable[[], T], what: str, seconds: float | None = None) -> T:
    """``fn()`` within ``seconds`` (default :func:`deadline`), else ``OSError`` naming ``what``."""
    result: T = _Call(fn, what).wait(deadline() if seconds is None else seconds)
    return result


def part_name(name: str, index: int) -> str:
    """The name of part ``index`` of ``name``; part 0 is ``name`` itself."""
    return name if index == 0 else f"{name}{PART_SEPARATOR}{index:0{PART_DIGITS}d}"


class RemoteAppendFile:
    """An append-only file on an fsspec file system, uploaded as a series of part objects.

    ``write`` only buffers. ``flush`` uploads what was written since the last upload as the
    next part (nothing when nothing is new). A failed upload raises ``OSError`` and keeps the
    bytes, so the next ``flush`` tries again. Every call to the store is bounded by
    ``deadline`` seconds (default :func:`deadline`). ``storage_options`` go to ``fsspec``.
    """

    def __init__(
        self,
        path: str,
        *,
        part_bytes: int = DEFAULT_PART_BYTES,
        max_age: float = DEFAULT_MAX_AGE,
        deadline: float | None = None,
        **storage_options: Any,
    ) -> None:
        import fsspec

        if deadline is None:
            deadline = _default_deadline()
        elif not (isinstance(deadline, (int, float)) and math.isfinite(deadline) and deadline > 0):
            raise ValueError(f"deadline must be a positive number of seconds, got {deadline!r}")
        self.deadline = float(deadline)
        fs, root = fsspec.core.url_to_fs(path, **storage_options)
        fs.invalidate_cache()

        def taken() -> bool:
            return bool(fs.exists(root) or fs.exists(part_name(root, 1)))

        if bounded(taken, f"checking whether {path} exists", self.deadline):
            raise FileExistsError(path)
        self.name = path
        self.fs = fs
        self.path = root
        self.part_bytes = int(part_bytes)
        self.max_age = float(max_age)
        self.parts = 0  # parts uploaded so far
        self.bytes_uploaded = 0
        self._buffer = bytearray()
        self._buffer_since = 0.0
        self._lock = threading.Lock()
        self._closed = False
        self._inflight: _Call | None = None  # an upload that ran past its deadline
        self._inflight_bytes = 0

        _ager.watch(self)

    def write(self, data: bytes) -> None:
        """Buffer ``data``; upload a part when the buffer is large or old enough."""
        with self._lock:
            if self._closed:
                raise ValueError(f"write to closed remote file {self.name}")
            if not self._buffer:
                self._buffer_since = time.monotonic()
            self._buffer += data
            if (
                len(self._buffer) >= self.part_bytes
                or time.monotonic() - self._buffer_since >= self.max_age
            ):
                self._upload_locked()

    def flush(self) -> None:
        """Upload everything written since the last upload as one new part object."""
        with self._lock:
            self._upload_locked()

    def truncate(self, size: int) -> None:
        """Cut the file back to ``size`` bytes (only bytes not uploaded yet can go)."""
        with self._lock:
            keep = size - self.bytes_uploaded
            if keep < (self._inflight_bytes if self._inflight is not None else 0):
                raise OSError(
                    f"cannot truncate {self.name} below its {self.bytes_uploaded} uploaded bytes"
                )
            del self._buffer[keep:]

    def close(self) -> None:
        """Upload what is left; idempotent."""
        with self._lock:
            if self._closed:
                return
            try:
                self._upload_locked()
            finally:
                self._closed = True

    def _upload_if_old(self) -> None:
        with self._lock:
            if (
                self._buffer
                and not self._closed
                and time.monotonic() - self._buffer_since >= self.max_age
            ):
                try:
                    self._upload_locked()
                except OSError:
                    pass  # kept in the buffer: the next flush retries and raises to the caller

    def part_paths(self) -> list[str]:
        """The objects uploaded so far, in order (file-system paths, without the protocol)."""
        return [part_name(self.path, i) for i in range(self.parts)]

    def _upload_locked(self) -> None:
        """Upload the buffer as the next part, within the deadline (lock held)."""
        started = time.monotonic()
        self._settle_inflight(self.deadline)
        if not self._buffer:
            return
        data = bytes(self._buffer)
        target = part_name(self.path, self.parts)
        fs = self.fs
        self._inflight = _Call(
            lambda: fs.pipe_file(target, data), f"upload of {len(data)} bytes to {target}"
        )
        self._inflight_bytes = len(data)
        self._settle_inflight(max(0.0, self.deadline - (time.monotonic() - started)))

    def _settle_inflight(self, seconds: float) -> None:
        """Wait up to ``seconds`` for the upload in flight; count it once done (lock held).

        ``OSError`` when it failed (its bytes stay buffered, the next flush sends them again)
        or is still running (nothing is sent meanwhile, so no later part can overtake it)."""
        call = self._inflight
        if call is None:
            return
        if not call.done.wait(seconds):
            raise OSError(
                f"{call.what} did not finish within {self.deadline:g} s; its bytes are kept "
                f"and the next flush() goes on ({DEADLINE_ENV} sets this deadline)"
            )
        self._inflight = None
        if call.error is None:
            self.parts += 1
            self.bytes_uploaded += self._inflight_bytes
            del self._buffer[: self._inflight_bytes]
            return
        call.wait(0)  # raises its error as OSError


class _Ager:
    """One daemon thread that uploads buffers older than their ``max_age`` (bounded staleness)."""

    def __init__(self) -> None:
        self._files: weakref.WeakSet[RemoteAppendFile] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, f: RemoteAppendFile) -> None:
        with self._lock:
            self._files.add(f)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="tallyboard-remote-ager", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(1.0)
            with self._lock:
                files = list(self._files)
            for f in files:
                f._upload_if_old()

    def _after_fork(self) -> None:
        # The child must not upload what its parent buffered; its own files get a new thread.
        self._files = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread = None


_default_deadline = deadline
_ager = _Ager()
lifecycle.on_fork_child(_ager._after_fork)


def read_parts(url: str, **storage_options: Any) -> bytes:
    """The whole content of a file written by :class:`RemoteAppendFile`: its parts joined."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(url, **storage_options)
    fs.invalidate_cache()
    chunks = []
    index = 0
    while True:
        target = part_name(root, index)
        if not fs.exists(target):
            break
        chunks.append(fs.cat_file(target))
        index += 1
    return b"".join(chunks)
