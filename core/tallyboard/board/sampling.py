"""Which points a read asking for fewer than a series holds gets: RustBoard's choice, exactly.

RustBoard (TensorBoard's data server) answers ``downsample.num_points = k`` of a series of ``n``
points with the last point plus a uniformly random ``k - 1`` of the others, in order, drawn by
``rand::seq::index::sample`` from a ChaCha20 generator seeded with 0 (``seed_from_u64(0)``), the
same draw for every series of that length. The provider draws the same indices, so a chart
shows the same points whichever provider serves it: the generator (ChaCha20 with the PCG32
seed expansion of ``seed_from_u64``), the draw of a number below a bound (widening multiply and
rejection zone, as ``gen_range`` and ``Uniform`` do), and the three sampling algorithms with
their selection rule (Floyd's, in place, rejection) are written here from those definitions.
A draw is made once per ``(n, k)`` and cached.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF


def _rotl(x: int, n: int) -> int:
    return ((x << n) & _M32) | (x >> (32 - n))


def _quarter(s: list[int], a: int, b: int, c: int, d: int) -> None:
    s[a] = (s[a] + s[b]) & _M32
    s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & _M32
    s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & _M32
    s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & _M32
    s[b] = _rotl(s[b] ^ s[c], 7)


class ChaCha20:
    """ChaCha20's key stream as 32-bit words, keyed as ``ChaCha20Rng::seed_from_u64(seed)``
    keys it (eight PCG32 outputs), stream 0, block counter from 0."""

    def __init__(self, seed: int) -> None:
        state, key = seed, []
        for _ in range(8):
            state = (state * 6364136223846793005 + 11634580027462260723) & _M64
            mixed = (((state >> 18) ^ state) >> 27) & _M32
            rot = state >> 59
            key.append(((mixed >> rot) | (mixed << ((32 - rot) & 31))) & _M32)
        self._key = key
        self._counter = 0
        self._words: list[int] = []

    def _block(self) -> list[int]:
        c = self._counter
        start = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *self._key]
        start += [c & _M32, c >> 32, 0, 0]
        s = list(start)
        for _ in range(10):
            _quarter(s, 0, 4, 8, 12)
            _quarter(s, 1, 5, 9, 13)
            _quarter(s, 2, 6, 10, 14)
            _quarter(s, 3, 7, 11, 15)
            _quarter(s, 0, 5, 10, 15)
            _quarter(s, 1, 6, 11, 12)
            _quarter(s, 2, 7, 8, 13)
            _quarter(s, 3, 4, 9, 14)
        self._counter += 1
        return [(x + y) & _M32 for x, y in zip(s, start)]

    def next_u32(self) -> int:
        """The next word of the stream."""
        if not self._words:
            self._words = self._block()[::-1]
        return self._words.pop()

    def below(self, bound: int, zone: int | None = None) -> int:
        """A number in ``[0, bound)``: the high word of a draw times ``bound``, drawn again
        while the low word is above ``zone`` (``gen_range``'s zone when not given)."""
        if zone is None:
            zone = ((bound << (32 - bound.bit_length())) & _M32) - 1
        while True:
            m = self.next_u32() * bound
            if m & _M32 <= zone:
                return m >> 32


def _floyd(rng: ChaCha20, length: int, amount: int) -> list[int]:
    shuffle = amount < 50
    out: list[int] = []
    for j in range(length - amount, length):
        t = rng.below(j + 1)
        if t in out:
            if shuffle:
                out.insert(out.index(t), j)
            else:
                out.append(j)
            continue
        out.append(t)
    if not shuffle:
        for i in range(amount - 1, 0, -1):
            k = rng.below(i + 1)
            out[i], out[k] = out[k], out[i]
    return out


def _inplace(rng: ChaCha20, length: int, amount: int) -> list[int]:
    out = list(range(length))
    for i in range(amount):
        j = i + rng.below(length - i)
        out[i], out[j] = out[j], out[i]
    return out[:amount]


def _rejection(rng: ChaCha20, length: int, amount: int) -> list[int]:
    zone = _M32 - (_M32 - length + 1) % length  # Uniform::new(0, length)'s zone
    seen: set[int] = set()
    out = []
    for _ in range(amount):
        pos = rng.below(length, zone)
        while pos in seen:
            pos = rng.below(length, zone)
        seen.add(pos)
        out.append(pos)
    return out


def sample(length: int, amount: int, seed: int = 0) -> list[int]:
    """``amount`` distinct indices below ``length``, as ``rand::seq::index::sample`` draws
    them from ``ChaCha20Rng::seed_from_u64(seed)`` (in its order, not sorted)."""
    rng = ChaCha20(seed)
    far = 0 if length < 500_000 else 1
    f32, size, count = np.float32, np.float32(length), np.float32(amount)  # the rule is in f32
    if amount < 163:
        c0, c1 = [(f32(1.6), f32(10.0)), (f32(8.0 / 45.0), f32(70.0 / 9.0))][far]
        if amount > 11 and size < (c1 + c0 * count) * count:
            return _inplace(rng, length, amount)
        return _floyd(rng, length, amount)
    if size < (f32(270.0), f32(330.0 / 9.0))[far] * count:
        return _inplace(rng, length, amount)
    return _rejection(rng, length, amount)


@functools.lru_cache(maxsize=256)
def _picked(n: int, k: int) -> Any:
    picked = np.array(sorted(sample(n - 1, k - 1)) + [n - 1], np.int64)
    picked.flags.writeable = False
    return picked


def downsample(n: int, k: int) -> Any:
    """Indices of the ``k`` of ``n`` points a read keeps (RustBoard's): all when ``k >= n``,
    none when ``k <= 0``, else the last point and a seeded uniform sample of the others, in
    order. A slice or an int64 array."""
    if k >= n:
        return slice(None)
    if k <= 0:
        return slice(0, 0)
    return _picked(n, k)
