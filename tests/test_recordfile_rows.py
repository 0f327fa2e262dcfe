"""Rows queued on a RecordFile: no garbage-collector work per queued row, batches gathered on
the writer thread, and every record kept in call order whatever the mix."""

from __future__ import annotations

import gc
import struct
import time

import pytest
from tallyboard import SummaryWriter
from tallyboard.plugin.sinks import Deferred
from tallyboard.records.recordfile import RecordFile, row_key
from tallyboard.records.storage import LocalAppendFile
from tallyboard_scalar.tfevents import encode, encode_batch


def records(data: bytes) -> list[bytes]:
    """Payloads of framed records, both CRCs checked with TensorBoard's own CRC code."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    out, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        assert struct.unpack_from("<I", data, pos + 8)[0] == masked_crc32c(data[pos : pos + 8])
        payload = data[pos + 12 : pos + 12 + n]
        assert struct.unpack_from("<I", data, pos + 12 + n)[0] == masked_crc32c(payload)
        out.append(payload)
        pos += 16 + n
    assert pos == len(data)
    return out


def test_queued_rows_leave_no_objects_for_the_garbage_collector(tmp_path):
    """A queued tuple per row made the collector run in the caller every 700 rows (about 30 us
    each: add_scalar's p99.9); rows are queued as their fields, which it does not track."""
    rf = RecordFile(LocalAppendFile(str(tmp_path / "f")), max_queue=10**6, flush_secs=3600)
    key = row_key(encode_batch)
    gc.disable()
    try:
        gc.collect()
        before = gc.get_count()[0]
        for i in range(5000):
            rf.write_row((key, "loss", i, 1.5, 0.25))
        grown = gc.get_count()[0] - before
    finally:
        gc.enable()
    rf.close()
    assert grown < 50
    assert len(records((tmp_path / "f").read_bytes())) == 5000


def test_a_row_must_have_five_fields(tmp_path):
    rf = RecordFile(LocalAppendFile(str(tmp_path / "f")), max_queue=10, flush_secs=3600)
    with pytest.raises(ValueError, match=r"\(key, tag, step, wall_time, payload\), got 2"):
        rf.write_row((row_key(encode_batch), "x"))
    rf.write_row((row_key(encode_batch), "x", 1, 2.0, 0.5))  # the file goes on
    rf.close()
    assert records((tmp_path / "f").read_bytes()) == [encode("x", 1, 2.0, 0.5)]


def test_rows_bytes_and_deferred_records_keep_call_order_across_batches(tmp_path):
    """Runs of rows of two encoders, framed records and Deferred encodes, interleaved, written
    while the thread drains (small max_queue) and at close: the file holds them in call order."""

    def other_batch(rows):  # a second row encoder: a different key in the same queue
        return b"".join(
            frame_of(encode(tag, step, wall, -value)) for _, tag, step, wall, value in rows
        )

    from tallyboard.records.framing import frame as frame_of

    rf = RecordFile(LocalAppendFile(str(tmp_path / "f")), max_queue=7, flush_secs=3600)
    key, other = row_key(encode_batch), row_key(other_batch)
    expected = []
    for i in range(3000):
        choice = i % 13
        if choice < 8:
            rf.write_row((key, "a", i, 1.0, float(i)))
            expected.append(encode("a", i, 1.0, float(i)))
        elif choice < 10:
            rf.write_row((other, "b", i, 2.0, float(i)))
            expected.append(encode("b", i, 2.0, -float(i)))
        elif choice < 12:
            rf.write(b"raw%d" % i)
            expected.append(b"raw%d" % i)
        else:
            rf.write(Deferred(lambda j: b"late%d" % j, (i,), 10))
            expected.append(b"late%d" % i)
        if i % 997 == 0:
            time.sleep(0.01)  # let the writer thread take a partial queue
    rf.close()
    assert records((tmp_path / "f").read_bytes()) == expected


def test_a_writer_flat_out_still_writes_everything_readable(logdir):
    from conftest import load_run

    with SummaryWriter(logdir) as w:
        for i in range(100_000):
            w.add_scalar("loss", i / 7, i)
    got = load_run(logdir).Scalars("loss")
    assert [e.step for e in got] == list(range(100_000))


def _sizes(rows) -> bytes:
    """A batch encoder of array rows: one record per row holding the payload's bytes."""
    from tallyboard.records.framing import frame

    return b"".join(frame(row[4].tobytes()) for row in rows)


def test_array_rows_count_their_bytes_and_the_caller_waits_for_room(tmp_path):
    """Rows of arrays count their bytes as pending: a caller that outruns a slow disk waits,
    and memory stays within the limit (rows counted at 1 KiB would let 64 arrays of 1 MiB in)."""
    import numpy as np

    class SlowFile(LocalAppendFile):
        def write(self, data: bytes) -> None:
            time.sleep(0.01)
            super().write(data)

    limit = 4 << 20
    rf = RecordFile(SlowFile(str(tmp_path / "f")), max_queue=10, max_pending_bytes=limit)
    key = row_key(_sizes, arrays=True)
    peak = 0
    arrays = [np.full(1 << 18, i, dtype=np.float32) for i in range(40)]  # 1 MiB each
    for i, array in enumerate(arrays):
        rf.write_array_row((key, "a", i, 1.0, array))
        peak = max(peak, rf._bytes_in - rf._bytes_out)
    rf.close()
    assert peak <= limit + (2 << 20)  # the limit, the array just queued and its row
    got = records((tmp_path / "f").read_bytes())
    assert got == [array.tobytes() for array in arrays]


def test_array_rows_need_a_key_registered_for_arrays(tmp_path):
    import numpy as np

    rf = RecordFile(LocalAppendFile(str(tmp_path / "f")), max_queue=10, flush_secs=3600)
    with pytest.raises(ValueError, match="arrays=True"):
        rf.write_array_row((row_key(encode_batch), "x", 1, 2.0, np.zeros(3)))
    row_key(_sizes, arrays=True)  # registered for array rows (whichever test runs first)
    with pytest.raises(ValueError, match="registered with arrays=True"):
        row_key(_sizes)  # one batch encoder, one kind of rows
    rf.close()


class FailingOnce(LocalAppendFile):
    """A disk whose first write fails (a full disk that is then cleared)."""

    failed = False

    def write(self, data: bytes) -> None:
        if not self.failed:
            self.failed = True
            raise OSError(28, "No space left on device")
        super().write(data)


@pytest.mark.parametrize("after", ["bytes", "deferred"])
def test_after_its_error_is_raised_the_file_takes_records_again(tmp_path, after):
    rf = RecordFile(FailingOnce(str(tmp_path / "f")), max_queue=100, flush_secs=3600)
    rf.write(b"lost")
    with pytest.raises(OSError, match="No space"):
        rf.flush()  # the error reaches the caller once
    record = b"kept" if after == "bytes" else Deferred(lambda: b"kept", (), 4)
    rf.write(record)
    rf.write(Deferred(lambda: b"also", (), 4))
    rf.close()
    assert records((tmp_path / "f").read_bytes()) == [b"kept", b"also"]


def test_a_closed_file_refuses_deferred_records_and_other_types_are_named(tmp_path):
    rf = RecordFile(LocalAppendFile(str(tmp_path / "f")), max_queue=100, flush_secs=3600)
    with pytest.raises(TypeError, match="or a Deferred, got str"):
        rf.write("text")  # type: ignore[arg-type]
    rf.write(bytearray(b"ok"))
    rf.close()
    with pytest.raises(ValueError, match="closed"):
        rf.write(Deferred(lambda: b"late", (), 4))
    assert records((tmp_path / "f").read_bytes()) == [b"ok"]


def test_a_deferred_of_a_plugins_own_subclass_is_queued_in_order(tmp_path):
    class Counted(Deferred):  # a sink's own Deferred, as a plugin author may write one
        calls = 0

        def __call__(self):
            Counted.calls += 1
            return super().__call__()

    rf = RecordFile(LocalAppendFile(str(tmp_path / "f")), max_queue=100, flush_secs=3600)
    rf.write(b"first")
    rf.write(Counted(lambda: b"second", (), 6))
    rf.write(b"third")
    rf.close()
    assert records((tmp_path / "f").read_bytes()) == [b"first", b"second", b"third"]
    assert Counted.calls == 1
