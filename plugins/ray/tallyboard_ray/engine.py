"""``--on ray`` (this machine's Ray, started or joined as ``ray.init()`` does) or
``--on ray://HOST:PORT`` (a cluster through Ray Client): an export's shares as Ray tasks."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import ray

SCHEME = "ray"


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    return fn(item)


class RayEngine:
    """Ray's workers (:class:`tallyboard.reading.engines.Engine`): a task per item, retried
    by Ray when its worker dies (``max_retries``)."""

    def __init__(self, max_retries: int = 3) -> None:
        self.remote = ray.remote(max_retries=max_retries)(_call)
        self.cores = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        return list(ray.get([self.remote.remote(fn, item) for item in items]))


@contextmanager
def connect(on: str) -> Iterator[RayEngine]:
    """Ray joined (``ray``: the running one, else ``ray.init()``'s; ``ray://HOST:PORT``: that
    cluster), and left at the end if joined here."""
    if on != SCHEME and not (on.startswith(f"{SCHEME}://") and len(on) > len(SCHEME) + 3):
        raise ValueError(f"a Ray engine is 'ray' or 'ray://HOST:PORT', got {on!r}")
    joined = not ray.is_initialized()
    if joined:
        ray.init(address=None if on == SCHEME else on, include_dashboard=False)
    try:
        yield RayEngine()
    finally:
        if joined:
            ray.shutdown()
