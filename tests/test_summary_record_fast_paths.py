"""SummaryRecord's hot paths write what its general paths write, read back independently.

Scalars are pooled as floats and packed whole; the pool is one list without a lock; images are
scaled to uint8 before they are tiled; histogram buckets are packed with NumPy. Each is checked
against MindSpore's own semantics (a step-by-step copy of its canvas code, NumPy's histogram)
through files read by ``tests/mindspore_reader.py``.
"""

from __future__ import annotations

import io
import logging
import threading
import warnings
from pathlib import Path

import mindspore_reader as msr
import numpy as np
import pytest
from PIL import Image
from tallyboard import SummaryRecord


def only(path: Path) -> Path:
    (found,) = [p for p in path.iterdir() if p.name.endswith("_MS")]
    return found


@pytest.mark.parametrize(
    "value",
    [
        np.float32(0.1),
        np.array(0.25, dtype=np.float16),
        np.array([1 / 3], dtype=np.float64),
        np.float64(-2.5),
        0.1,
        1e39,  # beyond float32: stored as infinity, as a C cast does
        -1e39,
        float("nan"),
        np.array(7, dtype=np.int64),  # not a float: the general path, same record
        True,
    ],
)
@pytest.mark.parametrize("step", [0, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**40, -5])
def test_one_scalar_a_step_is_stored_as_float32_of_its_value(
    logdir: Path, value: object, step: int
) -> None:
    tag = "loss/é" if step % 2 else "t" * 150  # a tag of two bytes' length varint
    with SummaryRecord(logdir) as record:
        record.add_value("scalar", tag, value)
        record.record(step)
    (event,) = [e for e in msr.read_events(only(logdir)) if e.HasField("summary")]
    (stored,) = event.summary.value
    assert (event.step, stored.tag) == (step, tag)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float32 overflow of 1e39
        expected = np.float32(float(np.asarray(value).item()))
    np.testing.assert_array_equal(np.float32(stored.scalar_value), expected)


def test_scalars_and_other_values_of_one_step_share_one_event_grouped_by_plugin(
    logdir: Path,
) -> None:
    with SummaryRecord(logdir) as record:
        record.add_value("scalar", "a", np.float32(1))
        record.add_value("tensor", "t", np.arange(3.0))
        record.add_value("scalar", "b", 2.0)
        record.add_value("histogram", "h", np.arange(5.0))
        record.add_value("scalar", "c", np.array(3, dtype=np.int32))
        record.record(4)
        record.add_value("scalar", "a", np.float32(5))
        record.record(5)
    assert [(step, tag, kind) for step, tag, kind, _ in msr.values(only(logdir))] == [
        (4, "a", "scalar_value"), (4, "b", "scalar_value"), (4, "c", "scalar_value"),
        (4, "t", "tensor"), (4, "h", "histogram"), (5, "a", "scalar_value"),
    ]  # fmt: skip
    assert len([e for e in msr.read_events(only(logdir)) if e.HasField("summary")]) == 2


def test_plugin_filter_is_asked_once_per_plugin(logdir: Path) -> None:
    asked: list[str] = []

    def keep(plugin: str) -> bool:
        asked.append(plugin)
        return plugin == "scalar"

    with SummaryRecord(logdir) as record:
        for i in range(3):
            record.add_value("scalar", f"s{i}", np.float32(i))
            record.add_value("tensor", f"t{i}", np.ones(2))
        record.record(1, plugin_filter=keep)
    assert asked == ["scalar", "tensor"]
    assert [tag for _, tag, _, _ in msr.values(only(logdir))] == ["s0", "s1", "s2"]


def test_the_same_tag_every_step_is_no_duplicate(
    logdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    image = np.zeros((1, 3, 2, 2), np.float32)
    with SummaryRecord(logdir) as record, caplog.at_level(logging.WARNING):
        for step in range(3):
            for plugin, value in (("scalar", np.float32(1)), ("image", image)):
                record.add_value(plugin, "x", value)
                record.record(step)
            record.add_value("scalar", "y", 1.0)
            record.add_value("histogram", "y", np.ones(3))
            record.record(step)
    assert "duplicate" not in caplog.text
    assert len(msr.values(only(logdir))) == 12


def test_values_added_by_another_thread_during_record_are_never_lost(logdir: Path) -> None:
    count = 20_000
    with SummaryRecord(logdir) as record:
        done = threading.Event()

        def add() -> None:
            for i in range(count):
                record.add_value("scalar", f"v{i}", float(i))
            done.set()

        thread = threading.Thread(target=add)
        thread.start()
        step = 0
        while not done.is_set():
            record.record(step)
            step += 1
        thread.join()
        record.record(step)
    written = sorted(int(value) for _, _, _, value in msr.values(only(logdir)))
    assert written == list(range(count))


def _mindspore_canvas(batch: np.ndarray) -> np.ndarray:
    """MindSpore's ``_make_canvas_for_imgs`` and scaling, step by step as its code does them."""
    if batch.shape[1] == 1:
        batch = np.concatenate([batch, batch, batch], 1)
    n, _, h, w = batch.shape
    cols = min(n, 8)
    rows = int(np.ceil(float(n) / cols))
    canvas = np.zeros((3, h * rows, w * cols))
    for i in range(n):
        y, x = divmod(i, cols)
        canvas[:, y * h : (y + 1) * h, x * w : (x + 1) * w] = batch[i]
    tensor = canvas.transpose(1, 2, 0)
    scale_factor, shift = 1, 0
    max_value, min_value = np.max(tensor), np.min(tensor)
    if max_value <= 1 and min_value >= 0:
        scale_factor = 255
    else:
        if max_value != min_value:
            scale_factor = 255 / (max_value - min_value + 1)
        shift = min_value
    with np.errstate(invalid="ignore", over="ignore"):
        tensor = tensor.astype(np.float32)
        return ((tensor - shift) * scale_factor).astype(np.uint8)


def _batches() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    out = [rng.random((1, 3, 64, 64), dtype=np.float32)]
    for i in range(40):
        n, c = int(rng.integers(1, 19)), int(rng.choice([1, 3]))
        h, w = int(rng.integers(1, 7)), int(rng.integers(1, 7))
        dtype = [np.float32, np.float64, np.float16, np.int64, np.uint8, np.bool_][i % 6]
        values = rng.normal(0, 40, (n, c, h, w)) if i % 3 else rng.random((n, c, h, w))
        if i % 7 == 0:
            values[0, 0, 0, 0] = np.nan
        if dtype is np.int64:
            values = values * 2.0**50
        out.append(np.nan_to_num(values).astype(dtype) if dtype != np.float64 else values)
    return out


def test_images_have_mindspores_pixels_for_every_batch_size_channel_count_and_dtype(
    logdir: Path,
) -> None:
    batches = _batches()
    with SummaryRecord(logdir) as record:
        for step, batch in enumerate(batches):
            record.add_value("image", "img", batch)
            batch[...] = 0  # the caller's array may change after add_value
            record.record(step)
    images = [value for _, _, _, value in msr.values(only(logdir))]
    assert len(images) == len(batches)
    for batch, image in zip(_batches(), images):
        expected = _mindspore_canvas(batch)
        pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image)))
        assert (image.height, image.width, image.colorspace) == expected.shape
        np.testing.assert_array_equal(pixels, expected, err_msg=str((batch.shape, batch.dtype)))


def test_images_at_the_edges_of_zero_and_one_have_mindspores_pixels(logdir: Path) -> None:
    # values in [0, 1] are scaled by 255 alone, others by their min and max: the edges decide
    # (each batch its own shape, so that none is encoded in one stack with another)
    batches = []
    for dtype in (np.float32, np.float64):
        one = dtype(1)
        edges = [0.0, -0.0, 1.0, np.nextafter(one, dtype(2)), -np.finfo(dtype).tiny, np.inf, np.nan]
        for width, edge in enumerate(edges, 2):
            batch = np.linspace(0, 1, 2 * 3 * 4 * width, dtype=dtype).reshape(2, 3, 4, width)
            batch[1, 2, 3, 1] = edge
            batches.append(batch)
    with SummaryRecord(logdir) as record:
        for step, batch in enumerate(batches):
            record.add_value("image", "img", batch)
            record.record(step)
    images = [value for _, _, _, value in msr.values(only(logdir))]
    assert len(images) == len(batches)
    for batch, image in zip(batches, images):
        pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image)))
        np.testing.assert_array_equal(pixels, _mindspore_canvas(batch), err_msg=str(batch))


def test_histogram_buckets_packed_with_numpy_match_the_field_by_field_encoding() -> None:
    from tallyboard_mindspore import wire

    rng = np.random.default_rng(2)
    for n in [0, 1, 2, 90, 200]:
        lefts = rng.normal(size=n).astype(np.float32)
        widths = np.abs(rng.normal(size=n))
        for high in [2, 128, 2**14, 2**35, 2**62]:
            counts = rng.integers(0, high, size=n)
            buckets = list(zip(lefts.tolist(), widths.tolist(), counts.tolist()))
            assert wire.histogram_proto(
                wire.histogram_buckets(lefts, widths, counts), 1, 2, 3, (4.0, 5.0, 6.0), 7
            ) == wire.histogram_proto(buckets, 1, 2, 3, (4.0, 5.0, 6.0), 7)


def test_histogram_of_many_values_has_numpys_counts(logdir: Path) -> None:
    values = np.random.default_rng(3).normal(size=100_000).astype(np.float32)
    with SummaryRecord(logdir) as record:
        record.add_value("histogram", "h", values)
        record.record(1)
    ((_, _, _, histogram),) = msr.values(only(logdir))
    # MindSpore's edges: from min and max as the doubles its Histogram message holds
    edges = np.linspace(float(values.min()), float(values.max()), 91, dtype=np.float32)
    counts, _ = np.histogram(values, bins=edges)
    assert [b.count for b in histogram.buckets] == counts.tolist()  # counts of 2 and 3 bytes
    assert [b.left for b in histogram.buckets] == edges[:-1].tolist()
    assert histogram.count == 100_000
