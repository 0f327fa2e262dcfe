"""What both faces share: a writer method called on a value that may still be on a device,
pytrees flattened into tags, and the histograms, images and audio clips TensorFlow writes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from tallyboard import get_registry
from tallyboard.values import check_int, check_tag, defer_call, on_device, to_array

#: The number of equal-width buckets of a histogram when none is given (TensorFlow's, CLU's).
DEFAULT_BUCKETS = 30


def call(
    writer: Any,
    method: str,
    tag: str,
    value: Any,
    step: Any,
    arguments: Callable[[Any], tuple[Any, ...]] | None = None,
    **kwargs: Any,
) -> None:
    """``writer.<method>(tag, value, step, **kwargs)``, or with ``arguments(value)`` in place of
    ``value, step`` when given. A device ``value`` is not waited for: the method runs on its
    host copy on the writer's side, and the payload it makes is written there."""
    if not on_device(value):
        args = (value, step) if arguments is None else arguments(value)
        getattr(writer, method)(tag, *args, **kwargs)
        return
    kind, fn = get_registry().methods[method]

    def run(target: Any, host: np.ndarray) -> None:
        fn(target, tag, *((host, step) if arguments is None else arguments(host)), **kwargs)

    defer_call(writer, kind.name, tag, value, step, None, run)


def sample(
    i: int, step: Any, pick: Callable[[Any, int], Any] | None = None, *extra: Any
) -> Callable[[Any], tuple[Any, ...]]:
    """``arguments`` for :func:`call`: sample ``i`` of a batch (``pick(batch, i)``, else
    ``batch[i]``), then ``step`` and ``extra``; the batch is sliced on the host."""

    def arguments(batch: Any) -> tuple[Any, ...]:
        return (batch[i] if pick is None else pick(batch, i), step, *extra)

    return arguments


def leaves(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    """``(tag, array)`` for each array of a pytree (dicts, lists, tuples, Flax's params; any
    jax pytree once jax is imported), its path joined to ``name`` with ``/``."""
    jax = sys.modules.get("jax")
    if jax is not None and not isinstance(value, (np.ndarray, jax.Array)):
        flat, _ = jax.tree_util.tree_flatten_with_path(value)
        for path, leaf in flat:
            yield "/".join([name, *(_key(k) for k in path)]), leaf
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from leaves(f"{name}/{key}", item)
    elif isinstance(value, (list, tuple)) and value and not _is_number(value[0]):
        for index, item in enumerate(value):
            yield from leaves(f"{name}/{index}", item)
    else:
        yield name, value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def _key(key: Any) -> str:
    """One step of a jax key path as text: a dict key, an attribute name or an index."""
    for attr in ("key", "name", "idx"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key)


def tf_histogram(values: Any, buckets: int | None) -> tuple[Any, ...]:
    """``add_histogram_raw``'s arguments for the histogram TensorFlow writes (CLU's rule):
    ``buckets`` equal-width buckets from the least to the greatest value (30 by default, at
    least 2); all values equal: one bucket of width 1 around them."""
    arr = to_array(values, "values").reshape(-1)
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    count = DEFAULT_BUCKETS if buckets is None else max(2, check_int(buckets, "num_buckets"))
    if not np.isfinite(arr).all():
        raise ValueError("values must be finite numbers: a histogram cannot hold NaN or inf")
    low, high = arr.min(), arr.max()  # in arr's dtype, so are the edges (as CLU's)
    if low == high:
        counts, edges = np.array([arr.size]), np.array([low - 0.5, high + 0.5], np.float64)
    else:
        counts, edges = np.histogram(arr, bins=count, range=(low, high))  # in arr's dtype
    arr = arr.astype(np.float64)
    # einsum, not np.dot: BLAS's threads, woken for a dot of 100,000 values on a busy machine,
    # took 3-18 ms where einsum takes 0.07 ms
    return (
        float(edges[0]), float(edges[-1]), int(arr.size), float(arr.sum()),
        float(np.einsum("i,i->", arr, arr)), edges[1:].tolist(), counts.tolist(),
    )  # fmt: skip


def histogram(writer: Any, tag: str, values: Any, step: Any, buckets: int | None) -> None:
    """A TensorFlow-style histogram of ``values`` (see :func:`tf_histogram`), device values
    computed on the writer's side."""
    if buckets is not None:
        check_int(buckets, "num_buckets")
    call(
        writer, "add_histogram_raw", check_tag(tag), values, step,
        lambda host: tf_histogram(host, buckets), global_step=step,
    )  # fmt: skip


def samples(tag: str, count: int, kind: str) -> list[str]:
    """The tags of ``count`` samples logged at one step: ``tag`` alone, else TensorFlow 1's
    ``<tag>/<kind>/<i>``."""
    return [tag] if count == 1 else [f"{tag}/{kind}/{i}" for i in range(count)]
