"""SummaryRecord's histogram hot path: a step of one histogram goes to the writer thread as one
deferred encode; every step keeps the values it was given (read back with
``tests/mindspore_reader.py``), in the parent and in a forked child."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import mindspore_reader as msr
import numpy as np
import pytest
from tallyboard import SummaryRecord


def only(path: Path) -> Path:
    (found,) = [p for p in path.iterdir() if p.name.endswith("_MS")]
    return found


def histograms(path: Path) -> dict[int, object]:
    out = {}
    for event in msr.read_events(only(path)):
        if event.HasField("summary"):
            (value,) = event.summary.value
            out[event.step] = value.histogram
    return out


def test_each_step_keeps_its_values_while_the_writer_lags(logdir: Path) -> None:
    # One array changed in place each step, faster than the writer encodes: a value not copied
    # at add_value would show another step's values.
    value = np.zeros(1000, dtype=np.float32)
    steps = 3000
    with SummaryRecord(logdir) as record:
        for step in range(steps):
            value[:] = np.arange(1000, dtype=np.float32) + step
            record.add_value("histogram", "w", value)
            record.record(step)
    stored = histograms(logdir)
    assert sorted(stored) == list(range(steps))
    for step, hist in stored.items():
        assert (hist.min, hist.max, hist.count) == (step, step + 999, 1000)
        assert hist.sum == float(np.arange(1000, dtype=np.float64).sum() + 1000 * step)
        assert sum(b.count for b in hist.buckets) == 1000


def test_histogram_input_is_still_checked(logdir: Path) -> None:
    with SummaryRecord(logdir) as record:
        with pytest.raises(ValueError, match="should not be empty"):
            record.add_value("histogram", "w", np.array(1.0))
        with pytest.raises(TypeError, match="dtype"):
            record.add_value("histogram", "w", np.array(["a"]))
        with pytest.raises(ValueError, match='"name"'):
            record.add_value("histogram", "", np.ones(3))
        assert record._pool == []


def test_parent_and_forked_child_both_keep_their_histograms(tmp_path: Path) -> None:
    # The child abandons the parent's queued steps and writes its own; the parent's queued and
    # later steps keep their values.
    parent, child = tmp_path / "parent", tmp_path / "child"
    code = f"""
        import os
        import numpy as np
        from tallyboard import SummaryRecord
        record = SummaryRecord({str(parent)!r})
        def log(rec, step, offset):
            rec.add_value("histogram", "w", np.arange(500, dtype=np.float32) + step + offset)
            rec.record(step)
        for step in range(400):
            log(record, step, 0)
        pid = os.fork()
        if pid == 0:
            with SummaryRecord({str(child)!r}) as mine:
                for step in range(400):
                    log(mine, step, 10_000)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        for step in range(400, 800):
            log(record, step, 0)
        record.close()
    """
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    for path, steps, offset in ((parent, 800, 0), (child, 400, 10_000)):
        stored = histograms(path)
        assert sorted(stored) == list(range(steps))
        for step, hist in stored.items():
            assert (hist.min, hist.max, hist.count) == (step + offset, step + offset + 499, 500)
