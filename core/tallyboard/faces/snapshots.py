"""Snapshots of logged arrays that reuse their memory once a sink is done with them.

A face copies each array it is given (the caller may change the array afterwards) and hands the
copy to its sinks, which may keep it on a writer thread until it is encoded. A training loop
logs arrays of the same few shapes again and again; fresh copies there cost more than the
copying itself: pending copies grow the heap, the allocator gives the freed memory back to the
system once they are written, and every later copy touches new pages (a 1x3x64x64 float32
image a step cost about 50 us in page faults on the development machine). Here each shape and
dtype gets a ring of arrays, one after the other in one block of memory, and an array is
copied into again only once nothing else refers to it (reference counts say so: a sink that
still holds it, or a view of it, keeps it out of use). When the ring's next array is in use, a
fresh copy is made, as before.
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
# _Ring.take and the argument of sys.getrefcount; to its flat array: the ring's list, the
# array's ``base`` and the argument.
_FREE = 3


class _Ring:
    """Up to ``limit`` arrays shaped as ``like``, laid one after the other in one block of
    memory and handed out in turn, so that arrays copied one after the other are usually
    neighbours (an encoder may then view several as one array instead of stacking copies)."""

    __slots__ = ("arrays", "flats", "limit", "position", "block", "like")

    def __init__(self, like: np.ndarray, limit: int) -> None:
        self.arrays: list[np.ndarray] = []
        # Each array is a view of a flat array over its slice of the block; a view of the array
        # refers to that flat array (NumPy's views refer to the first array that owns memory or
        # stands on another object's), so both must be free for the slice to be.
        self.flats: list[np.ndarray] = []
        self.limit = limit
        self.position = 0
        self.block = np.empty(limit * like.nbytes, dtype=np.uint8)  # pages touched when used
        self.like = (like.shape, like.dtype)

    def take(self) -> np.ndarray:
        """The ring's next array if nothing else refers to it, a new one while the ring has
        room for more, else a fresh array outside the ring."""
        arrays = self.arrays
        if arrays:
            position = self.position
            array = arrays[position]
            if sys.getrefcount(array) == _FREE and sys.getrefcount(self.flats[position]) == _FREE:
                self.position = (position + 1) % len(arrays)
                return array
        shape, dtype = self.like
        if len(arrays) < self.limit and self.position == 0:
            # the ring grows at its end only, so that its arrays stay in order in the block
            size = self.block.nbytes // self.limit
            start = len(arrays) * size
            piece = self.block.data[start : start + size]  # a memoryview of the slice
            flat = np.frombuffer(piece, dtype=dtype)
            array = flat.reshape(shape)
            self.flats.append(flat)
            arrays.append(array)
            return array
        return np.empty(shape, dtype)


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
                ring = self._rings[key] = _Ring(array, max(2, RING_BYTES // size))
            out = ring.take()
        if array.flags.c_contiguous:
            # a copy that keeps the GIL: NumPy's lets go of it for large arrays, and a writer
            # thread waiting for it takes it in the middle of the caller's step (an image step
            # cost 10% more so)
            out.data.cast("B")[:] = array.data.cast("B")
        else:
            np.copyto(out, array)
        return out
