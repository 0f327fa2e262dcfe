"""``--on dask://HOST:PORT`` (a running scheduler) or ``--on dask`` (a local cluster of worker
processes, one per core): an export's shares as Dask tasks."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import distributed

SCHEME = "dask"


class DaskEngine:
    """A Dask client's workers (:class:`tallyboard.reading.engines.Engine`)."""

    def __init__(self, client: distributed.Client) -> None:
        self.client = client
        self.cores = max(1, sum(client.nthreads().values()))

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        futures = self.client.map(fn, list(items), pure=False)
        return list(self.client.gather(futures))


@contextmanager
def connect(on: str) -> Iterator[DaskEngine]:
    """A client of the scheduler ``dask://HOST:PORT`` (``tcp://``, ``tls://`` taken as they
    are after ``dask://``), or of a local cluster made for the block (``dask``)."""
    if on == SCHEME:
        with (
            distributed.LocalCluster(processes=True, dashboard_address=None) as cluster,
            distributed.Client(cluster) as client,
        ):
            yield DaskEngine(client)
        return
    prefix = f"{SCHEME}://"
    if not on.startswith(prefix) or len(on) == len(prefix):
        raise ValueError(f"a Dask engine is 'dask' or 'dask://HOST:PORT', got {on!r}")
    address = on[len(prefix) :]
    if "://" not in address:
        address = f"tcp://{address}"
    with distributed.Client(address, timeout=30) as client:
        yield DaskEngine(client)
