"""tallyboard's warning classes, and warnings that point at the user's line, not at a line inside tallyboard or one of its plugins.

tallyboard's own code is every file under the folder of ``tallyboard`` and of each imported
top-level ``tallyboard_*`` package (the built-in plugins and third-party ones, which follow the
same naming). Python 3.12+ skips those files with ``warnings.warn(skip_file_prefixes=...)``;
on 3.10/3.11 the stack level is computed by walking the frames out of them.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Hashable


class SinkWarning(UserWarning):
    """A sink cannot encode a kind, or failed; the writer goes on without it."""


class ReadWarning(UserWarning):
    """A record could not be read (corrupt, unparsable); the rest of the data is still read."""


_once: set[Hashable] = set()
_once_lock = threading.Lock()


def own_prefixes() -> tuple[str, ...]:
    """Folders (ending in the path separator) of tallyboard and of every imported tallyboard_*."""
    out = []
    for name, module in list(sys.modules.items()):
        if "." in name or not (name == "tallyboard" or name.startswith("tallyboard_")):
            continue
        path = getattr(module, "__file__", None)
        if path and os.path.basename(path) == "__init__.py":
            out.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return tuple(out)


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the first frame outside tallyboard (the user's call)."""
    prefixes = own_prefixes()
    if sys.version_info >= (3, 12):
        warnings.warn(message, category, skip_file_prefixes=prefixes)  # type: ignore[call-arg,unused-ignore]
        return
    frame = sys._getframe(1)
    level = 2  # stacklevel 2 is warn()'s caller
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        prefixes
    ):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def warn_once(key: Hashable, message: str, category: type[Warning]) -> None:
    """:func:`warn` the first time ``key`` is seen in this process, nothing afterwards."""
    with _once_lock:
        if key in _once:
            return
        _once.add(key)
    warn(message, category)


def cannot_encode(sink: str, kind: str) -> None:
    """The one warning per (sink, kind) that a sink gets no values of a kind it cannot encode."""
    warn_once(
        ("cannot encode", sink, kind),
        f"sink {sink!r} cannot encode kind {kind!r}; those values are not written there",
        SinkWarning,
    )
