"""jax values still being computed when they are logged, for the tests of the JAX faces."""

from __future__ import annotations

import jax
import jax.numpy as jnp


@jax.jit
def slow(x: jax.Array) -> jax.Array:
    """Some 100 ms of CPU work (more on a loaded machine) whose result is known: tanh(0) is 0."""
    for _ in range(8):
        x = jnp.tanh(x @ x)
    return x.sum() + 0.25


BIG = jnp.zeros((700, 700), jnp.float32)
slow(BIG).block_until_ready()  # compiled once


@jax.jit
def _after(x: jax.Array, s: jax.Array) -> jax.Array:
    """``x`` (the same values and dtype), computed only once ``s`` is."""
    return x + (s * 0).astype(x.dtype)


def computing(*arrays: jax.Array) -> list[jax.Array]:
    """``arrays`` as values still being computed (by one :func:`slow`, for ~100 ms)."""
    jax.block_until_ready([_after(a, jnp.float32(0)) for a in arrays])  # compiled beforehand
    s = slow(BIG)
    out = [_after(a, s) for a in arrays]
    assert not any(v.is_ready() for v in out)
    return out
