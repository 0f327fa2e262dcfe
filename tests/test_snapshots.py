"""The face's copies of logged arrays reuse memory only once nothing refers to it: a value a
sink still holds is never overwritten, whatever the order in which sinks let values go."""

from __future__ import annotations

import threading

import numpy as np
from tallyboard.faces import snapshots
from tallyboard.faces.snapshots import Snapshots


def test_a_copy_still_held_is_never_overwritten() -> None:
    copies = Snapshots()
    held = []
    for i in range(3 * snapshots.RING_BYTES // 4096):  # around the ring several times
        array = np.full(1024, i, dtype=np.float32)
        held.append(copies.copy(array))
        if i % 3 == 0:
            held.pop(0)  # let some go, out of order with the ring
    for copy in held:
        assert (copy == copy[0]).all()
    assert sorted({int(copy[0]) for copy in held}) == sorted(int(copy[0]) for copy in held)


def test_memory_is_reused_once_a_copy_is_let_go() -> None:
    copies = Snapshots()
    first = copies.copy(np.ones(2048, dtype=np.float32))
    address = first.ctypes.data
    del first
    seen = {copies.copy(np.ones(2048, dtype=np.float32)).ctypes.data for _ in range(10_000)}
    assert address in seen and len(seen) < 10_000  # the ring's rows, over and over


def test_a_view_of_a_copy_keeps_it_in_use() -> None:
    copies = Snapshots()
    view = copies.copy(np.arange(1024, dtype=np.float32))[10:20]
    for _ in range(2 * snapshots.RING_BYTES // 4096):
        copies.copy(np.zeros(1024, dtype=np.float32))
    assert view.tolist() == list(range(10, 20))


def test_small_large_and_many_shapes_are_plain_copies() -> None:
    copies = Snapshots()
    for shape in [(3,), (snapshots.MAX_BYTES // 4 + 1,)] + [(256 + i,) for i in range(10)]:
        source = np.ones(shape, dtype=np.float32)
        copy = copies.copy(source)
        assert copy is not source and not np.shares_memory(copy, source)
        assert (copy == source).all()
    assert len(copies._rings) == snapshots.MAX_RINGS  # the first shapes only


def test_threads_copying_at_once_never_share_an_array() -> None:
    copies = Snapshots()
    bad: list[int] = []

    def work(value: int) -> None:
        kept = []
        for _ in range(500):
            kept.append(copies.copy(np.full(512, value, dtype=np.float32)))
            if len(kept) > 20:
                kept.pop(0)
            if not all((k == value).all() for k in kept[-3:]):
                bad.append(value)

    threads = [threading.Thread(target=work, args=(v,)) for v in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert bad == []


def test_copies_hold_the_values_whatever_the_layout_and_byte_order() -> None:
    copies = Snapshots()
    base = np.arange(24 * 40, dtype=np.float64).reshape(24, 40)
    for array in [
        base,
        base.T,  # not contiguous
        base[::2, ::3],
        base.astype(">f4"),  # big-endian
        base.astype(np.int16),
        np.frombuffer(base.tobytes(), np.float64).reshape(24, 40),  # read-only
    ]:
        for _ in range(3):  # from the ring once it has the shape
            copy = copies.copy(array)
            assert copy.dtype == array.dtype and copy.shape == array.shape
            assert (copy == array).all() and not np.shares_memory(copy, array)
