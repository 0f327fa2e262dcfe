"""Steps of several values (an image, histograms, scalars, a tensor) are encoded many at a time,
byte for byte as each step encoded by itself: what a SummaryCollector or a net's summary
operators hand the record every step."""

from __future__ import annotations

import logging
from pathlib import Path

import mindspore_reader as msr
import numpy as np
import pytest
from mindspore_support import summary_file
from tallyboard import SummaryRecord
from tallyboard.records.framing import frame
from tallyboard_mindspore import encoders as enc
from tallyboard_mindspore import sink


def _steps(
    rng: np.random.Generator, n: int
) -> list[tuple[int, float, list[tuple[str, str, object]]]]:
    """Steps of mixed values, as the face pools them: most of one shape (batched), some odd."""
    steps = []
    for i in range(n):
        weights = rng.normal(size=(8, 16)).astype(np.float32)
        if i % 5 == 1:
            weights[0, 0] = np.nan  # not batched: done by itself
        if i % 7 == 2:
            weights[:] = 1.0  # min == max
        items: list[tuple[str, str, object]] = [
            ("image", "input", rng.random((2, 3, 6, 5), dtype=np.float32)),
            ("scalar", "loss", float(rng.random())),
            ("histogram", "weights", weights),
            ("histogram", "bias", rng.normal(size=4).astype(np.float64)),
            ("histogram", "ints", rng.integers(0, 9, size=12)),
            ("histogram", "empty", np.zeros(0, np.float32)),
        ]
        if i % 3 == 0:
            items.append(("image", "grey", rng.integers(0, 255, (1, 1, 4, 4)).astype(np.uint8)))
            items.append(("image", "bad", rng.random((1, 2, 4, 4), dtype=np.float32)))  # dropped
            items.append(("tensor", "t", np.arange(6, dtype=np.int32).reshape(2, 3)))
        steps.append((i, 1000.0 + i, items))
    return steps


def _encoders() -> dict[str, object]:
    return {
        "image": enc.encode_image,
        "histogram": enc.encode_histogram,
        "tensor": enc.encode_tensor,
        "scalar": enc.encode_scalar,
    }


def test_step_rows_are_the_events_of_each_step_alone(caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(0)
    by_kind = _encoders()
    rows, alone = [], []
    for step, wall_time, items in _steps(rng, 20):
        heavy = [(by_kind[kind], tag, payload) for kind, tag, payload in items]
        size = sum(int(getattr(p, "nbytes", 0)) for _, _, p in heavy)
        rows.append((0, "", step, wall_time, enc.StepValues(heavy, size)))
        with caplog.at_level(logging.ERROR, "tallyboard.mindspore"):
            alone.append(frame(sink._summary_record(step, wall_time, heavy)))
    caplog.clear()
    with caplog.at_level(logging.ERROR, "tallyboard.mindspore"):
        batched = enc.encode_step_rows(rows)
    assert batched == b"".join(alone)
    assert len([r for r in caplog.records if "not Image" in r.getMessage()]) == 7  # the bad ones


def test_a_record_of_mixed_values_goes_out_as_one_event_per_step(logdir: Path) -> None:
    rng = np.random.default_rng(1)
    steps = _steps(rng, 30)
    with SummaryRecord(str(logdir)) as record:
        for step, _, items in steps:
            for kind, tag, payload in items:
                record.add_value(kind, tag, payload)
            record.record(step)
    events = [e for e in msr.read_events(summary_file(logdir)) if e.HasField("summary")]
    assert [e.step for e in events] == list(range(30))
    first = events[0].summary.value
    # grouped by plugin in first-use order, as MindSpore writes them; the bad image dropped
    assert [v.tag for v in first] == ["input", "grey", "loss", "weights", "bias", "ints"] + [
        "empty",
        "t",
    ]
    hist = next(v.histogram for v in events[1].summary.value if v.tag == "weights")
    assert hist.nan_count == 1 and hist.count == 128
