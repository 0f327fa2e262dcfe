"""Snapshots of logged arrays that reuse their memory once a sink is done with them.

A face copies each array it is given (the caller may change the array afterwards) and hands the
copy to its sinks, which may keep it on a writer thread until it is encoded. A training loop
logs arrays of the same few shapes again and again; fresh copies there cost more than the
copying itself: pending copies grow the heap, the allocator gives the freed memory back to the
system once they are written, and every later copy touches new pages (a 1x3x64x64 float32
image a step cost about 50 us in page faults on the development machine). Here each shape and
dtype gets a ring of arrays, and an array is copied into again only once nothing else refers
to it (its reference count says so: a sink that still holds it, or a view of it, keeps it
out of use). When every array of a ring is in use, a fresh copy is made, as before.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

#: Arrays smaller than this are copied fresh (small blocks are reused by the allocator anyway);
#: larger ones too (a ring of them would hold too much memory for too few arrays).
MIN_BYTES = 1024
MAX_BYTES = 1 << 20
#: Bytes a ring may hold, and shapes kept at once (others are copied fresh).
RING_BYTES = 8 << 20
MAX_RINGS = 4
# References to a ring's array that nothing else holds: the ring's list, the local name in
# _Ring.take and the argument of sys.getrefcount.
_FREE = 3


class _Ring:
    __slots__ = ("arrays", "limit", "position")

    def __init__(self, limit: int) -> None:
        self.arrays: list[np.ndarray] = []
        self.limit = limit
        self.position = 0

    def take(self, like: np.ndarray) -> np.ndarray:
        """An array shaped as ``like`` that nothing else refers to: the ring's next one if it is
        free, else a new one, which joins the ring while it has room. Each array owns its
        memory, so a view of it refers to it, and keeps it out of use, too."""
        arrays = self.arrays
        if arrays:
            position = self.position
            array = arrays[position]
            if sys.getrefcount(array) == _FREE:
                self.position = (position + 1) % len(arrays)
                return array
        array = np.empty_like(like)
        if len(arrays) < self.limit:
            arrays.insert(self.position, array)
            self.position = (self.position + 1) % len(arrays)
        return array


class Snapshots:
    """Copies of arrays, their memory reused (see the module's description)."""

    def __init__(self) -> None:
        self._rings: dict[tuple[Any, ...], _Ring] = {}
        self._lock = threading.Lock()  # two threads must not be handed one array

    def copy(self, array: np.ndarray) -> np.ndarray:
        """A copy of ``array`` that nothing else refers to."""
        size = array.nbytes
        if not MIN_BYTES <= size <= MAX_BYTES:
            return array.copy()
        key = (array.shape, array.dtype)
        with self._lock:
            ring = self._rings.get(key)
            if ring is None:
                if len(self._rings) >= MAX_RINGS:
                    return array.copy()
                ring = self._rings[key] = _Ring(max(2, RING_BYTES // size))
            out = ring.take(array)
        np.copyto(out, array)
        return out
