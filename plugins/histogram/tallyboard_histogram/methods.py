"""torch's histogram methods on the writer."""

from __future__ import annotations

from typing import Any

from tallyboard.values import defer_call, on_device, raise_if_swapped

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
    """Log the distribution of ``values``, shown in the HISTOGRAMS and DISTRIBUTIONS tabs.

    The buckets, counts and statistics are those torch writes for the same input. With the
    default ``bins="tensorflow"`` the edges are TensorFlow's: 0 and ±1e-12·1.1**k up to ±1e20
    (1548 buckets), of which only the span from the first to the last non-empty bucket is
    written (plus an empty one before it, as torch does); any other ``bins`` goes to
    ``numpy.histogram``. NaN and infinities count in ``num`` and ``sum`` but fall in no bucket,
    and with an estimator such as ``"auto"`` they make numpy raise. The statistics (min, max,
    sum, sum of squares) cover every value. The histogram is computed in the call, so the values
    are not kept.

    Args:
        tag: The histogram's name, a str.
        values: Numbers of any shape (flattened): an array, tensor (any device), list or scalar
            of real numbers, at least one.
        global_step: The step, the histogram's position on the y axis of the HISTOGRAMS tab: an
            int within int64. Default ``None`` writes no step (read as 0).
        bins: ``"tensorflow"`` (default), a numpy estimator name (``"auto"``, ``"fd"``,
            ``"doane"``, ``"scott"``, ``"stone"``, ``"rice"``, ``"sturges"``, ``"sqrt"``), a
            number of equal buckets from 1 to 2**20, or increasing edges (1-D, at least 2).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.
        max_bins: Merge neighbouring buckets when there are more than this many (groups of ``n
            // max_bins``), an int >= 1, as torch does: not a hard cap (5 buckets stay 5 with
            ``max_bins=3``). Default ``None`` (no merging).

    Raises:
        TypeError: ``values`` is not real numbers (a str where ``tag`` is not: the message says
            they look swapped); ``bins`` or ``max_bins`` has the wrong type.
        ValueError: ``values`` is empty, or no value falls in any bucket (all NaN, or all beyond
            explicit edges); ``bins`` is an unknown name, out of range or not increasing;
            ``max_bins`` < 1; ``global_step`` outside int64; ``walltime`` not finite.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> rng = np.random.default_rng(0)
        >>> with SummaryWriter("runs/histogram") as writer:
        ...     for step in range(5):
        ...         writer.add_histogram("weights", rng.normal(step, 1, 1000), step)
    """
    if on_device(values):  # a jax.Array, a CUDA tensor: converted on the writer's side
        defer_call(
            writer, "histogram", tag, values, global_step, walltime,
            lambda w, host: add_histogram(w, tag, host, global_step, bins, walltime, max_bins),
        )  # fmt: skip
        return
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
    """Log a histogram you bucketed yourself: statistics and buckets are written as given.

    ``bucket_limits[i]`` is the right edge of bucket ``i`` and ``bucket_counts[i]`` its count;
    the first bucket's left edge is taken from ``min`` by TensorBoard. Nothing is recomputed or
    checked against the statistics, as in torch.

    Args:
        tag: The histogram's name, a str.
        min: The smallest value, a number.
        max: The largest value, a number.
        num: How many values, a number.
        sum: Their sum, a number.
        sum_squares: The sum of their squares, a number.
        bucket_limits: 1-D real numbers, the buckets' right edges.
        bucket_counts: 1-D real numbers, one count per bucket (``len(bucket_limits)``).
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: A statistic is not a number, or the buckets are not real numbers.
        ValueError: The two bucket arrays differ in length or are not 1-D; a statistic holds
            more than one element.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> values = np.array([0.5, 1.5, 1.7, 2.5])
        >>> counts, edges = np.histogram(values, bins=[0, 1, 2, 3])
        >>> with SummaryWriter("runs/histogram_raw") as writer:
        ...     writer.add_histogram_raw(
        ...         "ready_made", min=0.5, max=2.5, num=4, sum=values.sum(),
        ...         sum_squares=(values**2).sum(), bucket_limits=edges[1:],
        ...         bucket_counts=counts, global_step=0,
        ...     )
    """
    payload = raw_histogram(min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
    writer.emit("histogram", tag, payload, global_step, walltime)
