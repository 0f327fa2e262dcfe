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
            sys.unraisablehook(_Unraisable(exc, callback))  # type: ignore[arg-type]


class _Unraisable:
    def __init__(self, exc: BaseException, obj: object) -> None:
        self.exc_type = type(exc)
        self.exc_value = exc
        self.exc_traceback = exc.__traceback__
        self.err_msg = "Exception ignored while plugboard closed at exit"
        self.object = obj


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    for callback in list(_fork_callbacks):
        callback()


atexit.register(run_exit_callbacks)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
