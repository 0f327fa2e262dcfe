"""Images and histograms that the MindSpore sink encodes many at a time on its writer thread are
written byte for byte as each alone would be (and so as MindSpore computes them), whatever the
values: ties on bucket edges, edges that rounding merges, NaN and infinity, huge and tiny
ranges, each dtype, canvases of any number of images, batches that mix such arrays."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from tallyboard.records.framing import frame
from tallyboard_mindspore import encoders, wire


def one_by_one(encode, rows) -> bytes:
    records = []
    for _, tag, step, wall_time, payload in rows:
        value = encode(tag, step, wall_time, payload)[1]
        records.append(frame(wire.summary_event(wall_time, int(step), [value])))
    return b"".join(records)


def histogram_arrays(seed: int, shape: tuple[int, ...], dtype, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        scale = [1e-30, 1e-6, 1.0, 1e4, 1e30][i % 5]
        values = rng.normal(size=shape) * scale + (1e3 if i % 4 == 3 else 0)
        if i % 6 == 1:
            values = np.round(values * 4) / 4  # many values exactly on bucket edges
        if i % 9 == 2:
            values[...] = values.flat[0]  # min == max
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            array = values.astype(dtype)
        if i % 7 == 5 and array.dtype.kind == "f":
            array.flat[0] = [np.nan, np.inf, -np.inf][i % 3]
        if i % 8 == 6 and array.dtype.kind == "f":  # a range of a few float32 steps: edges merge
            array = (
                (np.float32(1) + np.arange(array.size, dtype=np.float32) % 3 * 1e-7)
                .astype(dtype)
                .reshape(shape)
            )
        out.append(array)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
@pytest.mark.parametrize("shape", [(1000,), (7,), (2000,), (16, 64), (3,)])
def test_a_batch_of_histograms_is_written_as_each_alone(dtype, shape) -> None:
    arrays = histogram_arrays(len(shape) * 31 + shape[0], shape, dtype, 40)
    rows = [(0, f"w{i % 3}", i * 37, 1.5 + i, a) for i, a in enumerate(arrays)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert encoders.encode_histogram_rows(rows) == one_by_one(encoders.encode_histogram, rows)


def test_histograms_of_several_shapes_in_one_batch_keep_their_order() -> None:
    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=n).astype(np.float32) for n in (1000, 1000, 50, 1000, 50, 50)]
    rows = [(0, "w", i, 2.0, a) for i, a in enumerate(arrays)]
    assert encoders.encode_histogram_rows(rows) == one_by_one(encoders.encode_histogram, rows)


def test_histograms_with_a_bucket_of_128_values_or_more_are_written_as_alone() -> None:
    rng = np.random.default_rng(4)
    arrays = [rng.normal(size=100_000).astype(np.float32) for _ in range(3)]  # ~4,000 a bucket
    rows = [(0, "big", i, 2.0, a) for i, a in enumerate(arrays)]
    assert encoders.encode_histogram_rows(rows) == one_by_one(encoders.encode_histogram, rows)


def image_arrays(seed: int, shape: tuple[int, ...], dtype, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        values = rng.random(shape)
        if i % 3 == 1:
            values = values * 4 - 2  # outside [0, 1]: scaled by min and max
        if i % 5 == 2:
            y = np.linspace(0, 1, shape[2])[:, None]
            values = np.broadcast_to(y * np.linspace(0, 1, shape[3]), shape).copy()  # deflated
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            array = (values * (100 if np.dtype(dtype).kind in "iu" else 1)).astype(dtype)
        if i % 7 == 3 and array.dtype.kind == "f":
            array.flat[0] = np.nan
        out.append(array)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
@pytest.mark.parametrize("shape", [(1, 3, 64, 64), (1, 1, 20, 30), (3, 3, 8, 8), (9, 1, 5, 4)])
def test_a_batch_of_images_is_written_as_each_alone(dtype, shape) -> None:
    arrays = image_arrays(shape[0] * 7 + shape[2], shape, dtype, 12)
    rows = [(0, "img", i, 1.0 + i, a) for i, a in enumerate(arrays)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert encoders.encode_image_rows(rows) == one_by_one(encoders.encode_image, rows)


def test_a_batch_larger_than_one_stack_is_written_in_order() -> None:
    arrays = image_arrays(
        9, (1, 3, 40, 40), np.float32, 2 * encoders.ARRAY_BATCH + 3
    )  # noise stored
    rows = [(0, "img", i, 1.0, a) for i, a in enumerate(arrays)]
    assert encoders.encode_image_rows(rows) == one_by_one(encoders.encode_image, rows)


def test_large_arrays_are_batched_a_few_at_a_time() -> None:
    # a batch's temporary copies stay within ARRAY_BATCH_BYTES, whatever the image size
    for shape, lengths in [((1, 3, 8, 8), [5]), ((1, 3, 256, 256), [2, 2, 1])]:  # 3 KiB, 768 KiB
        arrays = [np.zeros(shape, np.float32) for _ in range(5)]
        runs = encoders._runs_of_one_shape([(0, "img", i, 1.0, a) for i, a in enumerate(arrays)])
        assert [len(run) for run in runs] == lengths
    big = image_arrays(3, (1, 3, 256, 256), np.float32, 3)
    rows = [(0, "img", i, 1.0, a) for i, a in enumerate(big)]
    assert encoders.encode_image_rows(rows) == one_by_one(encoders.encode_image, rows)


def test_snapshots_taken_in_turn_are_encoded_without_a_copy_and_others_with_one() -> None:
    from tallyboard.faces.snapshots import Snapshots

    copies = Snapshots()
    arrays = image_arrays(11, (1, 3, 16, 16), np.float32, 6)
    snapshots = [copies.copy(a) for a in arrays]
    together = encoders._stack(snapshots[:4], "test")
    assert not together.flags.owndata and np.shares_memory(together, snapshots[0])
    np.testing.assert_array_equal(together, np.stack(arrays[:4]))
    for order in ([2, 0, 1], [0, 2, 1, 3]):  # out of order (the second spans the same rows)
        shuffled = encoders._stack([snapshots[i] for i in order], "test")
        assert not np.shares_memory(shuffled, snapshots[0])
        np.testing.assert_array_equal(shuffled, np.stack([arrays[i] for i in order]))
    mixed = [snapshots[0], arrays[1].copy(), snapshots[2]]
    np.testing.assert_array_equal(encoders._stack(mixed, "test"), np.stack(arrays[:3]))
    # views of snapshots that do not start where their memory does, or run backwards
    flipped = [snapshots[0][..., ::-1], snapshots[1]]
    np.testing.assert_array_equal(encoders._stack(flipped, "test"), np.stack(flipped))
    part = [snapshots[0][:, :, 1:], snapshots[1][:, :, 1:]]
    np.testing.assert_array_equal(encoders._stack(part, "test"), np.stack(part))
    # arrays over the rows of a 2-D block: side by side in memory, but not the face's layout
    grid = np.arange(4 * 3 * 16 * 16, dtype=np.uint32).view(np.uint8).reshape(4, -1)
    n = grid.shape[1]
    flat_bytes = memoryview(grid).cast("B")  # its ``obj`` is still the 2-D block
    rows_of_grid = [
        np.frombuffer(flat_bytes[i * n : (i + 1) * n], np.float32).reshape(1, 3, 16, 16)
        for i in range(1, 4)
    ]
    np.testing.assert_array_equal(encoders._stack(rows_of_grid, "test"), np.stack(rows_of_grid))
    rows = [(0, "img", i, 1.0, s) for i, s in enumerate(snapshots)]
    assert encoders.encode_image_rows(rows) == one_by_one(encoders.encode_image, rows)
