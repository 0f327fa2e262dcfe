"""What the data provider serves: runs, and per run the time series of TensorBoard's data classes.

A time series is TensorBoard's: a run, a tag, the ``SummaryMetadata`` of the tag's first value
(its plugin name and content, its data class) and the points kept by a :class:`Reservoir`.
Scalars keep float64 values, tensors ``TensorProto`` messages, blob sequences tuples of bytes.

One thread (the loader) changes the store; the gRPC threads read it without a lock. Every
change replaces an object rather than mutating one a reader may hold: a reservoir replaces its
``view`` tuple, a run replaces its ``series`` dict when a tag is added, the store replaces its
``runs`` dict when a run comes or goes. A reader takes each reference once and sees a consistent
series even while the loader goes on.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tallyboard.board.reservoir import Reservoir

#: TensorBoard's data classes (``tensorboard.compat.proto.summary_pb2.DataClass``).
SCALAR, TENSOR, BLOB_SEQUENCE = 1, 2, 3
DATA_CLASS_NAMES = {SCALAR: "scalars", TENSOR: "tensors", BLOB_SEQUENCE: "blob sequences"}
#: Points kept per time series by data class unless told otherwise (RustBoard's defaults).
DEFAULT_SAMPLES = {SCALAR: 1000, TENSOR: 100, BLOB_SEQUENCE: 10}


@dataclass(frozen=True)
class Sampling:
    """How many points a time series keeps: by plugin name when given, else by data class.
    0 keeps all."""

    per_plugin: Mapping[str, int] = field(default_factory=dict)
    per_class: Mapping[int, int] = field(default_factory=lambda: dict(DEFAULT_SAMPLES))

    def capacity(self, plugin: str, data_class: int) -> int:
        """Points to keep of a series of ``plugin`` and ``data_class``."""
        if plugin in self.per_plugin:
            return self.per_plugin[plugin]
        return self.per_class.get(data_class, 0)


def parse_samples(text: str) -> dict[str, int]:
    """``"scalars=500,images=all"`` as ``{"scalars": 500, "images": 0}`` (0 and ``all``: keep all).

    Raises:
        ValueError: an item is not ``plugin=N`` with N a non-negative integer or ``all``.
    """
    out: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, count = item.partition("=")
        name, count = name.strip(), count.strip()
        if not sep or not name:
            raise ValueError(f"samples per plugin: expected plugin=N, got {item!r}")
        if count == "all":
            out[name] = 0
            continue
        try:
            n = int(count)
        except ValueError:
            n = -1
        if n < 0:
            raise ValueError(
                f"samples per plugin: {name}={count!r} is not a count >= 0 or 'all' (0 is all)"
            )
        out[name] = n
    return out


class Series:
    """One time series: its metadata (from the tag's first value) and the points kept."""

    __slots__ = ("metadata", "plugin", "data_class", "reservoir")

    def __init__(self, metadata: Any, capacity: int) -> None:
        self.metadata = metadata
        self.plugin: str = metadata.plugin_data.plugin_name
        self.data_class: int = int(metadata.data_class)
        dtype = np.float64 if self.data_class == SCALAR else object
        self.reservoir = Reservoir(capacity, dtype)


class Run:
    """One run: its start and its series by tag.

    The start is RustBoard's: the earliest wall time of the run's events, which is its first
    file's first event (the header a writer puts first) when the reader tells it
    (``Batch.start_time``), or a value stamped earlier than that (torch's ``add_scalars`` takes
    the time before it opens a run's file); for a format with no header (CSV, JSONL, ...) its
    earliest value. A run is listed once it has a start, values or not.
    """

    __slots__ = ("name", "series", "_first_event", "_first_value")

    def __init__(self, name: str) -> None:
        self.name = name
        self.series: dict[str, Series] = {}
        self._first_event: float | None = None
        self._first_value: float | None = None

    @property
    def start_time(self) -> float | None:
        """When the run started (see the class); None before anything of it was read."""
        if self._first_event is None or self._first_value is None:
            return self._first_event if self._first_event is not None else self._first_value
        return min(self._first_event, self._first_value)

    def began(self, first_event: float | None) -> None:
        """A batch of the run was read; ``first_event`` is its file's first event's wall time
        when the batch began at the file's start (the first file read sets the start, as in
        TensorBoard's loaders)."""
        if first_event is not None and self._first_event is None:
            self._first_event = float(first_event)

    def add_series(self, tag: str, series: Series) -> None:
        """Add a tag (a new dict: readers holding the old one are unaffected)."""
        series_map = dict(self.series)
        series_map[tag] = series
        self.series = series_map

    def saw(self, wall_time: float) -> None:
        """A point of this run was logged at ``wall_time``."""
        if self._first_value is None or wall_time < self._first_value:
            self._first_value = float(wall_time)


#: Runs up to which a new run is published at once; past it, new runs are published at most
#: every :data:`PUBLISH_EVERY` seconds (and at the end of each pass), so a first load of many
#: runs copies the dict of runs a few times, not once per run.
PUBLISH_AT_ONCE = 256
PUBLISH_EVERY = 0.1


class Store:
    """Every run served, by name (the loader's passes fill it; requests read it)."""

    def __init__(self, sampling: Sampling | None = None) -> None:
        self.sampling = sampling or Sampling()
        #: the runs served: replaced when runs come or go, never changed in place
        self.runs: dict[str, Run] = {}
        self._all: dict[str, Run] = {}  # the loader's, changed in place
        self._unpublished = False
        self._published_at = 0.0

    def run(self, name: str) -> Run:
        """The run ``name``, created on first use (served at once while there are few runs;
        else within :data:`PUBLISH_EVERY` seconds, or at :meth:`publish`)."""
        run = self._all.get(name)
        if run is None:
            run = self._all[name] = Run(name)
            self._unpublished = True
            now = time.monotonic()
            if len(self._all) <= PUBLISH_AT_ONCE or now - self._published_at >= PUBLISH_EVERY:
                self.publish()
        return run

    def publish(self) -> None:
        """Serve every run created so far (the loader calls it at the end of a pass)."""
        if self._unpublished:
            self._unpublished = False
            self._published_at = time.monotonic()
            self.runs = dict(self._all)

    def drop_runs(self, names: set[str]) -> None:
        """Stop serving the runs ``names`` (deleted from the log dir)."""
        if names & set(self._all):
            for name in names:
                self._all.pop(name, None)
            self._unpublished = True
            self.publish()

    def new_series(self, run: Run, tag: str, metadata: Any) -> Series:
        """A new series of ``run`` for ``tag`` with its first value's ``metadata``."""
        plugin = metadata.plugin_data.plugin_name
        series = Series(metadata, self.sampling.capacity(plugin, int(metadata.data_class)))
        run.add_series(tag, series)
        return series

    def points(self) -> int:
        """Points kept in all (for memory checks)."""
        return sum(len(s.reservoir) for r in self.runs.values() for s in r.series.values())
