"""Engines that run work on many machines (Dask, Ray, ...), as plugins give them.

An engine plugin registers a ``connect`` function under the ``tallyboard.engines`` entry-point
group, named by the scheme users write (``--on NAME`` or ``--on NAME://ADDRESS``)::

    [project.entry-points."tallyboard.engines"]
    myengine = "my_package.engine:connect"

``connect(on)`` is a context manager giving an :class:`Engine` connected to the cluster ``on``
names (a local one for the bare name), closed at the end. Core names no engine: what is
installed is found here, by the scheme, when an export asks for one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

GROUP = "tallyboard.engines"


class Engine(Protocol):
    """A cluster's workers, as an export uses them."""

    #: the tasks the cluster runs at once (its worker threads or CPUs): an export makes at
    #: least two shares for each.
    cores: int

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """``[fn(item) for item in items]``, run by the workers side by side (a task per item,
        run again by the engine when its worker is lost); an exception of ``fn`` is raised."""
        ...


def installed() -> dict[str, Any]:
    """The engines installed: scheme -> entry point."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=GROUP)}


def connect(on: str) -> AbstractContextManager[Engine]:
    """The engine ``on`` names (``NAME`` or ``NAME://ADDRESS``), connected. Raises
    ``TypeError`` for an ``on`` that is not a non-empty str, ``ValueError`` naming the
    installed engines when none has that name."""
    if not isinstance(on, str) or not on:
        raise TypeError(f"on must be an engine's name or URL (NAME or NAME://ADDRESS), got {on!r}")
    scheme = on.split("://", 1)[0]
    engines = installed()
    if scheme not in engines:
        raise ValueError(
            f"no engine {scheme!r} is installed (from {on!r}); installed engines:"
            f" {sorted(engines) or 'none'} (an engine plugin registers under the {GROUP!r}"
            " entry-point group; tallyboard's extras bring theirs)"
        )
    factory: Callable[[str], AbstractContextManager[Engine]] = engines[scheme].load()
    return factory(on)
