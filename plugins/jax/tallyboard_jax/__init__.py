"""JAX, Flax and CLU through tallyboard, without TensorFlow.

Two faces JAX code already calls, each one import line away from its original:

- ``from tallyboard_jax import metric_writers`` for ``from clu import metric_writers``: CLU's
  ``MetricWriter`` interface and ``create_default_writer``.
- ``from tallyboard_jax.tensorboard import SummaryWriter`` for
  ``from flax.metrics.tensorboard import SummaryWriter``.

A ``jax.Array`` passed to either is not waited for: the call keeps one still being computed and
returns, and tallyboard's writer thread reads it (:func:`tallyboard.values.defer_device`).
Neither face imports jax, flax or CLU: they work on NumPy values alone, and look jax up only
once the caller's code has imported it. Importing tallyboard never imports this package (it
registers no hooks).
"""

from __future__ import annotations

__all__ = ["metric_writers", "tensorboard"]
