"""The MindSpore histogram's edges and counts, computed without np.linspace's and np.histogram's
overhead, equal theirs exactly (MindSpore calls those two) for every dtype MindSpore writes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from tallyboard_mindspore.encoders import _bucket_counts, _linspace, histogram_bins

DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8, np.uint64]


def arrays(seed: int):
    rng = np.random.default_rng(seed)
    for trial in range(400):
        dtype = DTYPES[trial % len(DTYPES)]
        values = rng.normal(size=int(rng.integers(1, 2500))) * rng.choice([1e-30, 1e-3, 1, 1e4])
        if trial % 3 == 0:
            values = np.round(values)
        if trial % 11 == 0:
            values[:] = values[0]  # one value: the range is widened by 0.5 each way
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            array = values.astype(dtype)
        if trial % 7 == 0 and array.dtype.kind == "f" and array.size > 3:
            array[:3] = [np.nan, np.inf, -np.inf]
        yield array


def numpys_counts(array: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``np.histogram``'s counts. float16 values are widened to float64 first (exactly, and
    compared with the edges as before): NumPy's float16 sort, which ``np.histogram`` runs, puts
    values out of order on some AVX-512 CPUs (NumPy 2.4, an AMD EPYC: -inf among the zeros), so
    that its counts there are wrong; ``_bucket_counts`` does not sort."""
    if array.dtype == np.float16:
        return np.histogram(array.astype(np.float64), bins=edges.astype(np.float64))[0]
    return np.histogram(array, bins=edges)[0]


@pytest.mark.parametrize("seed", [0, 1])
def test_edges_and_counts_equal_numpys(seed: int) -> None:
    checked = 0
    for array in arrays(seed):
        finite = array[np.isfinite(array)] if array.dtype.kind == "f" else array
        if not finite.size:
            continue
        first, last = float(finite.min()), float(finite.max())
        if not first < last:
            first, last = first - 0.5, last + 0.5
        num = histogram_bins(finite.size) + 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected_edges = np.linspace(first, last, num, dtype=array.dtype)
            edges = _linspace(first, last, num, array.dtype)
        assert edges.dtype == expected_edges.dtype
        np.testing.assert_array_equal(edges, expected_edges)
        try:
            expected = numpys_counts(array, expected_edges)
        except ValueError:  # integer edges that wrapped around: the same error
            with pytest.raises(ValueError):
                _bucket_counts(array, edges)
            continue
        np.testing.assert_array_equal(_bucket_counts(array, edges), expected)
        checked += 1
    assert checked > 300


def test_values_on_the_last_edge_count_and_nan_and_infinity_do_not() -> None:
    array = np.array([0.0, 1.0, 1.0, np.nan, np.inf, -np.inf, 0.5], np.float32)
    edges = np.linspace(0.0, 1.0, 3, dtype=np.float32)
    np.testing.assert_array_equal(_bucket_counts(array, edges), [1, 3])
    np.testing.assert_array_equal(np.histogram(array, bins=edges)[0], [1, 3])
