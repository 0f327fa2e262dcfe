"""A SummaryRecord whose writer thread falls behind encodes a step's image or histogram in the
caller: the file holds the same values, in the same order, as when the thread does it all."""

from __future__ import annotations

import time
from pathlib import Path

import mindspore_reader as msr
import numpy as np
from tallyboard import SummaryRecord
from tallyboard.records import recordfile, storage


def run(logdir: Path) -> list[tuple[int, str, str, object]]:
    rng = np.random.default_rng(3)
    with SummaryRecord(logdir) as record:
        for step in range(90):
            if step % 3 == 0:
                record.add_value("histogram", "w", rng.normal(size=500).astype(np.float32))
            elif step % 3 == 1:
                record.add_value("image", "img", rng.random((1, 3, 16, 16), dtype=np.float32))
            else:
                record.add_value("scalar", "loss", np.float32(step))
            record.record(step)
    (path,) = [p for p in logdir.iterdir() if p.name.endswith("_MS")]
    return msr.values(path)


def test_values_encoded_in_the_caller_keep_their_place(tmp_path, monkeypatch) -> None:
    expected = run(tmp_path / "thread")  # the writer thread keeps up (or close() catches up)
    encoded_here = []
    real_write = recordfile.RecordFile.write

    def write(self, record, size=None):
        if type(record) is bytes and len(record) > 300:  # an image or histogram, encoded
            encoded_here.append(len(record))
        return real_write(self, record, size)

    class SlowFile(storage.LocalAppendFile):
        def write(self, data: bytes) -> None:
            time.sleep(0.02)  # the writer thread falls behind
            super().write(data)

    monkeypatch.setattr(storage, "LocalAppendFile", SlowFile)
    monkeypatch.setattr(recordfile.RecordFile, "write", write)
    got = run(tmp_path / "caller")
    assert len(encoded_here) >= 40  # most of the 60, in the caller (the first few: the thread)
    assert len(got) == 90
    assert repr(got) == repr(expected)
