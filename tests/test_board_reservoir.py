"""Downsampling as the provider does it: a deterministic reservoir that keeps the last point."""

from __future__ import annotations

import numpy as np
import pytest
from tallyboard.board.reservoir import Reservoir
from tallyboard.board.sampling import downsample
from tallyboard.board.store import parse_samples


def _feed(capacity: int, n: int, batch: int) -> Reservoir:
    r = Reservoir(capacity)
    for start in range(0, n, batch):
        steps = np.arange(start, min(start + batch, n))
        r.offer(steps, steps * 0.5, steps * 2.0)
    return r


def test_a_series_up_to_capacity_is_kept_whole() -> None:
    for capacity in [1, 2, 10]:
        r = _feed(capacity, capacity, capacity)
        assert r.view[0].tolist() == list(range(capacity))


def test_a_longer_series_keeps_capacity_points_ending_with_the_last() -> None:
    r = _feed(50, 10_000, 333)
    steps, walls, values = r.view
    assert len(steps) == 50 and steps[-1] == 9_999
    assert (np.diff(steps) > 0).all()
    assert (walls == steps * 0.5).all() and (values == steps * 2.0).all()  # points stay whole


def test_the_points_kept_are_the_same_however_the_stream_is_split() -> None:
    for batch, n in [(1, 3_000), (7, 20_000), (999, 20_000), (4096, 20_000)]:
        assert (_feed(100, n, batch).view[0] == _feed(100, n, n).view[0]).all(), batch


def test_the_sample_is_spread_over_the_whole_stream() -> None:
    steps = _feed(1_000, 100_000, 10_000).view[0][:-1]
    counts = np.histogram(steps, bins=10, range=(0, 100_000))[0]
    assert counts.min() > 60 and counts.max() < 140, counts  # about 100 per tenth


def test_a_step_not_above_the_last_preempts_the_points_at_or_after_it() -> None:
    r = Reservoir(100)
    r.offer(np.arange(10), np.zeros(10), np.arange(10.0))
    r.offer([5, 6], [1.0, 1.0], [50.0, 60.0])  # a job restarted from step 5
    assert r.view[0].tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert r.view[2].tolist()[-2:] == [50.0, 60.0]
    r.offer([3, 4, 2, 9], [2.0] * 4, [1.0] * 4)  # within a batch too: 3 and 4 go, 2 preempts
    assert r.view[0].tolist() == [0, 1, 2, 9]


def test_capacity_zero_keeps_everything_and_one_keeps_the_last() -> None:
    assert len(_feed(0, 5_000, 1_000)) == 5_000
    assert _feed(1, 5_000, 1_000).view[0].tolist() == [4_999]
    with pytest.raises(ValueError, match="capacity"):
        Reservoir(-1)


def test_object_payloads_keep_tuples_whole() -> None:
    r = Reservoir(3, object)
    r.offer([0, 1], [0.0, 0.0], [(b"a", b"b"), (b"c", b"d")])
    r.offer([2, 3, 4], [0.0] * 3, [(b"e", b"f")] * 3)
    assert len(r) == 3 and r.view[2][-1] == (b"e", b"f")


def test_a_read_keeps_rustboards_seeded_sample_and_always_the_last() -> None:
    idx = np.arange(100)
    # what RustBoard 0.7.2 answers for these lengths (read from it; the differential suite
    # asks it live): Floyd's draw, the in-place one (k - 1 > 11) and the rejection one
    assert idx[:5][downsample(5, 3)].tolist() == [0, 1, 4]
    assert idx[:25][downsample(25, 11)].tolist() == [0, 2, 5, 7, 11, 16, 17, 18, 19, 23, 24]
    assert downsample(10, 2).tolist() == [0, 9]
    assert downsample(50_000, 170)[-1] == 49_999 and len(downsample(50_000, 170)) == 170
    assert idx[downsample(100, 1)].tolist() == [99]
    assert idx[downsample(100, 0)].tolist() == []
    assert idx[downsample(100, 500)].tolist() == list(range(100))
    picked = idx[downsample(100, 99)]
    assert len(set(picked.tolist())) == 99 and picked[-1] == 99


def test_samples_per_plugin_are_parsed_and_bad_ones_refused() -> None:
    assert parse_samples("scalars=500, images=all,text=0") == {
        "scalars": 500,
        "images": 0,
        "text": 0,
    }
    for bad in ["scalars", "scalars=-1", "=3", "images=many"]:
        with pytest.raises(ValueError, match="samples per plugin"):
            parse_samples(bad)


def test_a_view_handed_out_never_changes_after() -> None:
    r = Reservoir(8)
    r.offer(np.arange(3), np.zeros(3), np.arange(3.0))
    held = [a.copy() for a in r.view]
    views = [r.view]
    r.offer([3, 4], [0.0, 0.0], [3.0, 4.0])  # appended in the buffers
    views.append(r.view)
    r.offer(np.arange(5, 40), np.zeros(35), np.arange(5.0, 40.0))  # sampling starts
    r.offer([20], [1.0], [-1.0])  # preemption
    assert all((a == b).all() for a, b in zip(views[0], held))
    assert views[1][0].tolist() == [0, 1, 2, 3, 4]
    assert r.view[0][-1] == 20
