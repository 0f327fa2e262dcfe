"""The ``torch.utils.tensorboard.SummaryWriter`` face.

The writer itself knows no data kind: every ``add_*`` method comes from a kind plugin and ends
in :meth:`SummaryWriter.emit`, which hands the payload to each open sink through the encoder
registered for that (kind, sink) pair.
"""

from __future__ import annotations

import os
import socket
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from . import lifecycle, paths
from .registry import Registry, get_registry
from .sinks import Deferred, Sink, SinkOptions
from .values import check_int, check_positive_number, check_step, check_tag, check_walltime

_now = __import__("time").time
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_valid_tags: set[str] = set()
_live_writers: weakref.WeakSet[SummaryWriter] = weakref.WeakSet()
DEFAULT_SINKS = ("tfevents",)


class SinkWarning(UserWarning):
    """A sink cannot encode a kind, or failed; the writer goes on without it."""


def default_log_dir(comment: str = "") -> str:
    """torch's default: ``runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname><comment>``."""
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")


class SummaryWriter:
    """Write training logs that TensorBoard (and other sinks) can read.

    Same constructor as torch's. ``sinks`` (keyword only) chooses where records go, by sink
    name; the default writes TensorBoard event files.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
        *,
        sinks: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(comment, str):
            raise TypeError(f"comment must be a str, got {type(comment).__name__}")
        if not isinstance(filename_suffix, str):
            raise TypeError(f"filename_suffix must be a str, got {type(filename_suffix).__name__}")
        if "/" in filename_suffix or "\\" in filename_suffix or "\0" in filename_suffix:
            raise ValueError(f"filename_suffix {filename_suffix!r} must not contain path separators or NUL")
        if log_dir is not None and not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError(f"log_dir must be a str or os.PathLike, got {type(log_dir).__name__}")
        self.log_dir: Any = log_dir if log_dir else default_log_dir(comment)
        self._dir = os.fspath(self.log_dir)
        self.purge_step = check_step(purge_step, "purge_step")
        self.max_queue = check_int(max_queue, "max_queue", minimum=1)
        self.flush_secs = check_positive_number(flush_secs, "flush_secs")
        self.filename_suffix = filename_suffix
        self._registry: Registry = get_registry()
        names = tuple(DEFAULT_SINKS if sinks is None else sinks)
        if isinstance(sinks, str) or not names:
            raise TypeError("sinks must be a non-empty sequence of sink names")
        self._sink_specs = [self._registry.sink(name) for name in names]
        self._sink_names = names
        self._lock = threading.RLock()
        self._sinks: list[tuple[str, Sink]] = []
        self._routes: dict[str, list[tuple[Callable[..., Any], Callable[[Any], None], bool]]] = {}
        self._children: dict[str, SummaryWriter] = {}
        self._closed = True
        self._open()
        _live_writers.add(self)

    # -- lifecycle ---------------------------------------------------------------------------

    def _open(self) -> None:
        with self._lock:
            if not self._closed:
                return
            options = SinkOptions(
                log_dir=self._dir,
                max_queue=self.max_queue,
                flush_secs=self.flush_secs,
                filename_suffix=self.filename_suffix,
                purge_step=self.purge_step,
            )
            opened: list[tuple[str, Sink]] = []
            try:
                for spec in self._sink_specs:
                    opened.append((spec.name, spec.open(options)))
            except BaseException:
                for _, sink in opened:
                    sink.close()
                raise
            self.purge_step = None  # applied once, as torch does
            self._sinks = opened
            self._routes = {}
            self._closed = False
        self._registry.call_lifecycle("writer_opened", self)

    def get_logdir(self) -> Any:
        """The directory this writer writes to, as given."""
        return self.log_dir

    def flush(self) -> None:
        """Return once everything accepted so far (sub-runs included) is written."""
        if self._closed:
            return
        self._registry.call_lifecycle("writer_flushing", self)
        errors: list[BaseException] = []
        for child in list(self._children.values()):
            _collect_error(errors, child.flush)
        for _, sink in list(self._sinks):
            _collect_error(errors, sink.flush)
        _raise_first(errors)

    def close(self) -> None:
        """Flush and close every file; idempotent. ``add_*`` afterwards opens new files."""
        with self._lock:
            if self._closed:
                return
            self._registry.call_lifecycle("writer_closing", self)
            errors: list[BaseException] = []
            for child in list(self._children.values()):
                _collect_error(errors, child.close)
            self._children.clear()
            for _, sink in self._sinks:
                _collect_error(errors, sink.close)
            self._sinks = []
            self._routes = {}
            self._closed = True
        _raise_first(errors)

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _after_fork(self) -> None:
        # The child must not touch the parent's files: drop them; the next add opens new ones.
        abandon = [s for _, s in self._sinks]
        self._lock = threading.RLock()
        self._sinks, self._routes, self._closed = [], {}, True
        self._children.clear()
        for sink in abandon:
            drop = getattr(sink, "abandon", None)
            if drop is not None:
                drop()

    # -- logging -----------------------------------------------------------------------------

    def emit(
        self,
        kind: str,
        tag: str,
        payload: Any,
        global_step: Any = None,
        walltime: Any = None,
    ) -> None:
        """Send one validated payload of ``kind`` to every sink: the end of every ``add_*``."""
        if type(tag) is not str or tag not in _valid_tags:
            tag = check_tag(tag)
            if len(_valid_tags) < 100_000:
                _valid_tags.add(tag)
        if global_step is not None and (
            type(global_step) is not int or not _INT64_MIN <= global_step <= _INT64_MAX
        ):
            global_step = check_step(global_step)
        walltime = _now() if walltime is None else check_walltime(walltime)
        if self._closed:
            self._open()
        try:
            routes = self._routes[kind]
        except KeyError:
            routes = self._build_routes(kind)
        for encode, write, heavy in routes:
            if heavy:
                write(Deferred(encode, (tag, global_step, walltime, payload), _size_hint(payload)))
            else:
                write(encode(tag, global_step, walltime, payload))

    def add_value(self, kind: str, tag: str, value: Any, global_step: Any = None, walltime: Any = None) -> None:
        """Log ``value`` as data kind ``kind`` (the same kinds ``add_*`` methods log)."""
        k = self._registry.kind(kind)
        self.emit(k.name, tag, k.convert(value), global_step, walltime)

    def child(self, run: str, *, arg: str = "run") -> SummaryWriter:
        """The writer of sub-run ``run`` (a path relative to this log_dir, validated)."""
        rel = paths.safe_relpath(run, arg)
        with self._lock:
            child = self._children.get(rel)
            if child is None or child._closed:
                if self._closed:
                    self._open()
                child = SummaryWriter(
                    paths.join(self._dir, rel),
                    max_queue=self.max_queue,
                    flush_secs=self.flush_secs,
                    filename_suffix=self.filename_suffix,
                    sinks=self._sink_names,
                )
                self._children[rel] = child
        return child

    def _build_routes(self, kind: str) -> list[tuple[Callable[..., Any], Callable[[Any], None], bool]]:
        k = self._registry.kind(kind)
        routes = []
        for sink_name, sink in self._sinks:
            encode = self._registry.encoders.get((kind, sink_name))
            if encode is None:
                _warn_once(f"sink {sink_name!r} cannot encode kind {kind!r}; those values are not written there")
                continue
            routes.append((encode, sink.write, k.heavy))
        self._routes[kind] = routes
        return routes

    def __getattr__(self, name: str) -> Any:
        if name.startswith("add_"):
            entry = get_registry().methods.get(name)
            if entry is not None:
                bound = types.MethodType(entry[1], self)
                self.__dict__[name] = bound
                return bound
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __dir__(self) -> Iterable[str]:
        return list(super().__dir__()) + list(get_registry().methods)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SummaryWriter log_dir={self._dir!r} sinks={list(self._sink_names)} {state}>"


def _size_hint(payload: Any) -> int:
    return int(getattr(payload, "nbytes", 0) or 0)


def _collect_error(errors: list[BaseException], fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception as exc:
        errors.append(exc)


def _raise_first(errors: list[BaseException]) -> None:
    if errors:
        first = errors[0]
        for other in errors[1:]:
            first.add_note(f"also: {type(other).__name__}: {other}")
        raise first


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, SinkWarning, stacklevel=4)


def close_all_writers() -> None:
    """Drain and close every open writer (run at interpreter exit, after Stats close)."""
    for writer in list(_live_writers):
        try:
            writer.close()
        except Exception as exc:
            warnings.warn(f"closing {writer!r} at exit failed: {exc}", SinkWarning, stacklevel=1)


def _after_fork() -> None:
    for writer in list(_live_writers):
        writer._after_fork()


lifecycle.on_exit(lifecycle.WRITERS, close_all_writers)
lifecycle.on_fork_child(_after_fork)
