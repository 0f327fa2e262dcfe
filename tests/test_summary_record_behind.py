"""A SummaryRecord's images and histograms go to its writer thread as rows of arrays, encoded
many at a time: the file holds the same values, in the same order, whether the thread keeps up
or falls far behind (a slow disk), whether the rows come alone or between other records."""

from __future__ import annotations

import time
from pathlib import Path

import mindspore_reader as msr
import numpy as np
from tallyboard import SummaryRecord
from tallyboard.records import recordfile, storage
from tallyboard_mindspore import encoders
from tallyboard_mindspore.sink import _ARRAY_ROWS


def run(logdir: Path, mixed: bool) -> list[tuple[int, str, str, object]]:
    rng = np.random.default_rng(3)
    with SummaryRecord(logdir) as record:
        for step in range(90):
            kind = step % 3 if mixed else step % 2
            if kind == 0:
                record.add_value("histogram", "w", rng.normal(size=500).astype(np.float32))
            elif kind == 1:
                record.add_value("image", "img", rng.random((1, 3, 16, 16), dtype=np.float32))
            else:
                record.add_value("scalar", "loss", np.float32(step))
            record.record(step)
    (path,) = [p for p in logdir.iterdir() if p.name.endswith("_MS")]
    return msr.values(path)


def test_a_writer_thread_far_behind_writes_the_same_values_in_order(tmp_path, monkeypatch):
    for mixed in (False, True):
        expected = run(tmp_path / f"fast{mixed}", mixed)
        assert len(expected) == 90

        class SlowFile(storage.LocalAppendFile):
            def write(self, data: bytes) -> None:
                time.sleep(0.02)  # the writer thread falls behind
                super().write(data)

        with monkeypatch.context() as patch:
            patch.setattr(storage, "LocalAppendFile", SlowFile)
            got = run(tmp_path / f"slow{mixed}", mixed)
        assert repr(got) == repr(expected)


def test_images_logged_step_after_step_are_encoded_together(tmp_path) -> None:
    batches: list[int] = []
    real = encoders.encode_image_rows

    def counted(rows):
        batches.append(len(rows))
        return real(rows)

    key = _ARRAY_ROWS["image"]
    recordfile._batches[key] = counted  # the batch encoder the writer thread calls
    try:
        rng = np.random.default_rng(5)
        images = [rng.random((1, 3, 8, 8), dtype=np.float32) for _ in range(200)]
        with SummaryRecord(tmp_path) as record:
            for step, image in enumerate(images):
                record.add_value("image", "img", image)
                record.record(step)
    finally:
        recordfile._batches[key] = real
    assert sum(batches) == 200 and max(batches) > 1
    (path,) = [p for p in tmp_path.iterdir() if p.name.endswith("_MS")]
    assert [step for step, *_ in msr.values(path)] == list(range(200))
