"""One interpreter-exit hook and one fork hook for the whole library.

At exit, callbacks run by ascending priority: monitor Stats close first (their last windows
reach the writers), then writers drain and close. In a forked child, callbacks reset state the
child must not share with its parent (locks, threads, queued records).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable

#: Exit priorities: lower runs first.
STATS = 0
WRITERS = 10

_exit_callbacks: list[tuple[int, int, Callable[[], None]]] = []
_fork_callbacks: list[Callable[[], None]] = []
_lock = threading.Lock()


def on_exit(priority: int, callback: Callable[[], None]) -> None:
    """Run ``callback`` at interpreter exit, after callbacks of lower priority."""
    with _lock:
        _exit_callbacks.append((priority, len(_exit_callbacks), callback))
        _exit_callbacks.sort()


def on_fork_child(callback: Callable[[], None]) -> None:
    """Run ``callback`` in a child process right after ``os.fork()``."""
    _fork_callbacks.append(callback)


def run_exit_callbacks() -> None:
    """What the exit hook runs; errors are reported and never stop later callbacks."""
    with _lock:
        callbacks = list(_exit_callbacks)
    for _, _, callback in callbacks:
        try:
            callback()
        except BaseException as exc:  # noqa: BLE001 - exit must go on
            report_unraisable(exc, "Exception ignored while tallyboard closed at exit", callback)


class _Unraisable:
    """What ``sys.unraisablehook`` reads (the default hook accepts only its own type)."""

    def __init__(self, exc: BaseException, msg: str, obj: object) -> None:
        self.exc_type = type(exc)
        self.exc_value = exc
        self.exc_traceback = exc.__traceback__
        self.err_msg = msg
        self.object = obj


def report_unraisable(exc: BaseException, msg: str, obj: object) -> None:
    """Hand ``exc`` to ``sys.unraisablehook``; print it as the default hook does if that fails."""
    args = _Unraisable(exc, msg, obj)
    hook = sys.unraisablehook
    try:
        if hook is sys.__unraisablehook__:
            raise TypeError("the default hook takes only UnraisableHookArgs")
        hook(args)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - never let reporting break finalisation
        try:
            import traceback

            stream = sys.stderr
            if stream is not None:
                stream.write(f"{msg}: {obj!r}\n")
                traceback.print_exception(type(exc), exc, exc.__traceback__, file=stream)
                stream.flush()
        except Exception:  # noqa: BLE001
            pass


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    for callback in list(_fork_callbacks):
        callback()


atexit.register(run_exit_callbacks)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
