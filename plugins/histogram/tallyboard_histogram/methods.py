"""torch's histogram methods on the writer."""

from __future__ import annotations

from typing import Any

from tallyboard.faces.hints import raise_if_swapped

from .compute import histogram_of, raw_histogram


def add_histogram(
    writer: Any,
    tag: str,
    values: Any,
    global_step: Any = None,
    bins: Any = "tensorflow",
    walltime: Any = None,
    max_bins: Any = None,
) -> None:
    """Log the distribution of ``values`` (torch's signature; ``bins='tensorflow'`` by default)."""
    try:
        payload = histogram_of(values, "values", bins, max_bins)
    except TypeError:
        raise_if_swapped("add_histogram", tag, values, "values")
        raise
    writer.emit("histogram", tag, payload, global_step, walltime)


def add_histogram_raw(
    writer: Any,
    tag: str,
    min: Any,
    max: Any,
    num: Any,
    sum: Any,
    sum_squares: Any,
    bucket_limits: Any,
    bucket_counts: Any,
    global_step: Any = None,
    walltime: Any = None,
) -> None:
    """Log a histogram already bucketed: ``bucket_limits[i]`` is the right edge of bucket i."""
    payload = raw_histogram(min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
    writer.emit("histogram", tag, payload, global_step, walltime)
