"""Histograms as torch computes them, with TensorFlow's default buckets computed much faster.

torch's ``add_histogram`` calls ``numpy.histogram`` against 1549 non-uniform edges (1548 bins),
which sorts the data. The float64 bit pattern of a value is monotonic in its magnitude, so its top
17 bits (sign, exponent, 5 mantissa bits) index a precomputed table of the first bin each cell can
fall in; a cell is narrower than a bin (3 % versus 10 %), so one comparison with the next edge
fixes the bin. Counts are identical to ``numpy.histogram`` (half-open bins, last one closed,
NaN, infinities and out-of-range values in no bin); the tests check that on hostile inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tallyboard.values import to_array, to_float

_SHIFT = 47  # keep sign + 11 exponent bits + 5 mantissa bits
_ESTIMATORS = frozenset({"auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"})


@dataclass(frozen=True, eq=False)
class Histogram:
    """A histogram, format neutral: ``bucket_limits[i]`` is the right edge of ``bucket_counts[i]``."""

    min: float
    max: float
    num: float
    sum: float
    sum_squares: float
    bucket_limits: np.ndarray
    bucket_counts: np.ndarray

    @property
    def nbytes(self) -> int:
        """Approximate payload size (for queue accounting)."""
        return int(self.bucket_limits.nbytes + self.bucket_counts.nbytes)

    def to_row(self) -> dict[str, Any]:
        """The histogram's fields as a read table has them (:func:`as_row`)."""
        return as_row(
            self.min,
            self.max,
            self.num,
            self.sum,
            self.sum_squares,
            self.bucket_limits,
            self.bucket_counts,
        )


#: The fields of a histogram row, in every format's table and line: its statistics, then the
#: right edge (``bucket_limit``) and count (``bucket``) of each bucket, as TensorBoard's
#: ``HistogramProto`` names them.
ROW_FIELDS = ("min", "max", "num", "sum", "sum_squares", "bucket_limit", "bucket")


def as_row(
    min: Any, max: Any, num: Any, sum: Any, sum_squares: Any, bucket_limit: Any, bucket: Any
) -> dict[str, Any]:
    """A histogram row: the five statistics as floats, the buckets as lists of floats."""
    return {
        "min": float(min),
        "max": float(max),
        "num": float(num),
        "sum": float(sum),
        "sum_squares": float(sum_squares),
        "bucket_limit": _floats(bucket_limit),
        "bucket": _floats(bucket),
    }


def _floats(values: Any) -> list[float]:
    if isinstance(values, np.ndarray) and values.dtype == np.float64:
        return values.tolist()  # type: ignore[no-any-return]
    return [float(x) for x in values]


def from_row(row: dict[str, Any]) -> Histogram:
    """The histogram of a row (:data:`ROW_FIELDS`), checked as :func:`raw_histogram` checks."""
    return raw_histogram(*(row[name] for name in ROW_FIELDS))


class _TfBins:
    """TensorFlow's default bucket edges and the lookup table that bins values against them."""

    def __init__(self) -> None:
        v = 1e-12
        positive = []
        while v < 1e20:  # sequential multiplication, exactly as torch does it
            positive.append(v)
            v *= 1.1
        edges = np.array([-p for p in reversed(positive)] + [0.0] + positive, dtype=np.float64)
        self.edges = edges
        self.edges.setflags(write=False)
        n_bins = len(edges) - 1
        self.n_bins = n_bins
        # Shifted bin numbers: 0 = below the first edge, 1..n_bins = the bins, n_bins + 1 = above / NaN.
        upper = np.empty(n_bins + 2, dtype=np.float64)
        upper[:n_bins] = edges[:n_bins]
        upper[n_bins] = np.nextafter(edges[-1], np.inf)  # the last bin is closed
        upper[n_bins + 1] = np.inf
        self.upper = upper
        cells = np.arange(1 << (64 - _SHIFT), dtype=np.uint64) << np.uint64(_SHIFT)
        first = cells.view(np.float64)
        last = (cells | np.uint64((1 << _SHIFT) - 1)).view(np.float64)
        lo = np.minimum(self._exact(first), self._exact(last))
        hi = np.maximum(self._exact(first), self._exact(last))
        finite = np.isfinite(first) & np.isfinite(last)
        if int((hi - lo)[finite].max()) > 1:  # pragma: no cover - a property of the constants
            raise AssertionError("histogram lookup cells must not span more than two bins")
        self.table = lo.astype(np.intp)

    def _exact(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            b = np.searchsorted(self.edges, x, side="right")
            b[x == self.edges[-1]] = self.n_bins
            b[np.isnan(x)] = self.n_bins + 1
        return b

    def counts(self, flat: np.ndarray) -> np.ndarray:
        """``numpy.histogram(flat, edges)[0]`` for a 1-D float64 array, without sorting."""
        b = self.table[flat.view(np.int64) >> _SHIFT]  # negative shifts wrap to the upper half
        b += flat >= self.upper.take(b)
        return np.bincount(b, minlength=self.n_bins + 2)[1 : self.n_bins + 1]


_tf: _TfBins | None = None


def tf_bins() -> _TfBins:
    """The TensorFlow default bins, built once per process."""
    global _tf
    if _tf is None:
        _tf = _TfBins()
    return _tf


def default_bucket_edges() -> np.ndarray:
    """torch's ``SummaryWriter.default_bins`` as a read-only float64 array (1549 edges)."""
    return tf_bins().edges


def _values(values: Any, arg: str) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        arr = values  # the histogram is computed now, so no defensive copy is needed
        if arr.size == 0:
            raise ValueError(f"{arg}: The input has no element.")
    else:
        try:
            arr = to_array(values, arg)
        except ValueError as exc:
            raise ValueError(f"{arg}: The input has no element.") from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{arg} must hold real numbers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr.astype(np.float64, copy=False).reshape(-1))


#: The most buckets an int ``bins`` may ask for (a larger one would only exhaust memory).
MAX_BINS = 1 << 20


def _check_bins(bins: Any) -> Any:
    if isinstance(bins, str):
        if bins == "tensorflow" or bins in _ESTIMATORS:
            return bins
        raise ValueError(
            f"bins must be 'tensorflow', one of {sorted(_ESTIMATORS)}, an int or edges; got {bins!r}"
        )
    if isinstance(bins, (bool, np.bool_)):
        raise TypeError("bins must be a str, an int or an array of edges, got bool")
    if isinstance(bins, (int, np.integer)):
        if not 1 <= bins <= MAX_BINS:
            raise ValueError(f"bins must be from 1 to {MAX_BINS}, got {bins}")
        return int(bins)
    try:
        edges = to_array(bins, "bins")
    except TypeError:
        raise TypeError(
            f"bins must be a str, an int or an array of edges, got {type(bins).__name__}"
        ) from None
    if edges.ndim != 1 or edges.size < 2:
        raise ValueError(
            f"bins as edges must be 1-D with at least 2 edges, got shape {edges.shape}"
        )
    if edges.dtype.kind not in "biuf":
        raise TypeError(f"bins must hold real numbers, got dtype {edges.dtype}")
    if np.any(np.diff(edges) < 0):
        raise ValueError("bins must increase monotonically")
    return edges


def _check_max_bins(max_bins: Any) -> int | None:
    if max_bins is None:
        return None
    if isinstance(max_bins, (bool, np.bool_)) or not isinstance(max_bins, (int, np.integer)):
        raise TypeError(f"max_bins must be an int or None, got {type(max_bins).__name__}")
    if max_bins < 1:
        raise ValueError(f"max_bins must be >= 1, got {max_bins}")
    return int(max_bins)


def histogram_of(
    values: Any, arg: str = "values", bins: Any = "tensorflow", max_bins: Any = None
) -> Histogram:
    """torch's ``make_histogram``: the same buckets, counts and statistics for the same input."""
    bins = _check_bins(bins)
    max_bins = _check_max_bins(max_bins)
    flat = _values(values, arg)
    if isinstance(bins, str) and bins == "tensorflow":
        tf = tf_bins()
        counts: np.ndarray = tf.counts(flat)
        limits: np.ndarray = tf.edges
    else:
        try:
            counts, limits = np.histogram(flat, bins=bins)
        except ValueError as exc:
            raise ValueError(f"{arg}: cannot build a histogram with bins={bins!r}: {exc}") from None
    n = len(counts)
    if max_bins is not None and n > max_bins:
        step = n // max_bins
        if n % step:
            counts = np.pad(counts, (0, step - n % step))
        counts = counts.reshape(-1, step).sum(axis=-1)
        new_limits = np.empty(counts.size + 1, limits.dtype)
        new_limits[:-1] = limits[:-1:step]
        new_limits[-1] = limits[-1]
        limits = new_limits
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise ValueError(f"{arg}: The histogram is empty (no finite value falls in any bin)")
    start, end = int(nonzero[0]), int(nonzero[-1]) + 1
    if start > 0:
        kept = counts[start - 1 : end]
    else:
        kept = np.concatenate([[0], counts[:end]])
    return Histogram(
        min=float(flat.min()),
        max=float(flat.max()),
        num=float(len(flat)),
        sum=float(flat.sum()),
        sum_squares=float(flat.dot(flat)),
        bucket_limits=np.asarray(limits[start : end + 1], dtype=np.float64),
        bucket_counts=np.asarray(kept, dtype=np.float64),
    )


def _vector(value: Any, arg: str) -> np.ndarray:
    arr = to_array(value, arg)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{arg} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{arg} must be 1-D, got shape {arr.shape}")
    return arr.astype(np.float64)


def raw_histogram(
    min: Any, max: Any, num: Any, sum: Any, sum_squares: Any, bucket_limits: Any, bucket_counts: Any
) -> Histogram:
    """A histogram given by its statistics and buckets (torch's ``add_histogram_raw``)."""
    limits = _vector(bucket_limits, "bucket_limits")
    counts = _vector(bucket_counts, "bucket_counts")
    if len(limits) != len(counts):
        raise ValueError(
            f"len(bucket_limits) != len(bucket_counts): {len(limits)} != {len(counts)}"
        )
    stats = {
        name: to_float(v, name)
        for name, v in (
            ("min", min),
            ("max", max),
            ("num", num),
            ("sum", sum),
            ("sum_squares", sum_squares),
        )
    }
    return Histogram(bucket_limits=limits, bucket_counts=counts, **stats)
