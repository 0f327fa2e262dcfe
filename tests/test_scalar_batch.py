"""Scalars queued as rows and framed in batches on the writer thread: byte-exact, in call order."""

from __future__ import annotations

import random
import struct
import threading
import time
from itertools import chain

import numpy as np
import pytest
from conftest import event_files, load_run, raw_events
from tallyboard import SummaryWriter
from tallyboard.records.framing import frame_fixed
from tallyboard.records.recordfile import RecordFile, row_key
from tallyboard.records.rows import QueuedRows
from tallyboard.records.storage import LocalAppendFile

STEPS = [None, 0, 1, 127, 128, 300, 16383, 16384, 2097151, 2097152, 10**12, -1, 2**63 - 1, -(2**63)]
VALUES = [0.1, -0.0, 1e39, -1e39, float("inf"), 3.4028235e38, 3.4028236e38, 1e-45, 5e-46, 2.5]
TAGS = ["loss", "a/b", "é" * 70, "t" * 200, "lr", "long" * 1100]


def tb_records(data: bytes) -> list[bytes]:
    """Split framed records, checking both CRCs with TensorBoard's own CRC code."""
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


def protobuf_event(tag: str, step: int | None, wall: float, value: float) -> bytes:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    event = event_pb2.Event(
        wall_time=wall,
        summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)]),
    )
    if step is not None:
        event.step = step
    return event.SerializeToString()


def rows_of(layout: str, n: int, seed: int) -> list[tuple[str, int | None, float, float]]:
    rng = random.Random(seed)
    if layout == "one tag":
        return [("loss", 1000 + i, 1.7e9 + i / 8, rng.random()) for i in range(n)]
    if layout == "rotation":  # starts mid-rotation and ends with part of one
        names = ["loss", "lr", "accuracy/top1"]
        return [(names[(i + 2) % 3], 300 + i // 3, 1.7e9 + i, rng.random()) for i in range(n)]
    if layout == "steps change width":
        return [("loss", 16_300 + i, 1.7e9, rng.choice(VALUES)) for i in range(n)]
    return [
        (rng.choice(TAGS), rng.choice(STEPS), rng.random() * 2e9, rng.choice(VALUES))
        for _ in range(n)
    ]


@pytest.mark.parametrize("queued", [False, True], ids=["tuples", "queued rows"])
@pytest.mark.parametrize("layout", ["one tag", "rotation", "steps change width", "mixed"])
@pytest.mark.parametrize("n", [1, 47, 48, 1000, 5003])
def test_batched_records_equal_protobuf_events_in_call_order(layout, n, queued):
    from tallyboard_scalar.tfevents import encode_batch

    rows = rows_of(layout, n, seed=n)
    key = row_key(encode_batch)
    batch = [(key, *row) for row in rows]
    got = tb_records(encode_batch(QueuedRows(list(chain(*batch))) if queued else batch))
    assert got == [protobuf_event(*row) for row in rows]


def test_tensor_style_scalars_among_rows_are_written_as_tensors(logdir):
    with SummaryWriter(logdir) as w:
        for i in range(100):
            w.add_scalar("plain", float(i), i)
            w.add_scalar("tensor", float(i), i, new_style=True)
    acc = load_run(logdir)
    assert [e.value for e in acc.Scalars("plain")] == list(range(100))
    assert len(acc.Tensors("tensor")) == 100


def test_frame_fixed_agrees_with_tensorboards_crc():
    rng = np.random.default_rng(3)
    template = bytes(rng.integers(0, 256, 41, dtype=np.uint8))
    n = 500
    wall = rng.random(n) * 1e9
    middle = rng.integers(0, 256, (n, 3), dtype=np.uint8)
    last = rng.random(n).astype(np.float32)
    framed = frame_fixed(template, [(1, wall), (10, middle), (37, last)])
    payloads = tb_records(framed.tobytes())
    for i, payload in enumerate(payloads):
        want = bytearray(template)
        want[1:9] = wall[i].tobytes()
        want[10:13] = middle[i].tobytes()
        want[37:41] = last[i].tobytes()
        assert payload == bytes(want)


def test_frame_fixed_rejects_fields_outside_the_payload():
    with pytest.raises(ValueError, match="offset 6 falls outside a 8-byte payload"):
        frame_fixed(bytes(8), [(6, np.zeros(2, dtype=np.float32))])
    with pytest.raises(ValueError, match="2 and 3 records"):
        frame_fixed(bytes(16), [(0, np.zeros(2)), (8, np.zeros(3))])


def test_many_tags_and_other_kinds_stay_in_call_order(logdir):
    calls = []
    with SummaryWriter(logdir, max_queue=7) as w:
        for i in range(3000):
            tag = f"t{i % 5}" if i % 300 else "odd"
            w.add_scalar(tag, float(i), i // 5, walltime=1.7e9 + i)
            calls.append(1.7e9 + i)
            if i % 500 == 0:
                w.add_text("note", f"at {i}", i // 5, walltime=1.7e9 + i + 0.5)
                calls.append(1.7e9 + i + 0.5)
    events = [e for e in raw_events(logdir) if e.HasField("summary")]
    assert [e.wall_time for e in events] == calls
    assert len(load_run(logdir).Scalars("t1")) == len([i for i in range(3000) if i % 5 == 1])


def test_a_failing_batch_encode_is_raised_once_and_later_records_are_kept(tmp_path):
    def broken(rows):
        raise RuntimeError("cannot encode")

    path = tmp_path / "f"
    rf = RecordFile(LocalAppendFile(str(path)), max_queue=1000, flush_secs=3600)
    rf.write(b"before")
    rf.write_row((row_key(broken), "x", 0, 0.0, 0.5))
    with pytest.raises(RuntimeError, match="cannot encode"):
        rf.flush()
    rf.write(b"after")
    rf.close()
    assert tb_records(path.read_bytes()) == [b"before", b"after"]


class SlowFile(LocalAppendFile):
    def write(self, data: bytes) -> None:
        time.sleep(0.01)
        super().write(data)


def test_queued_rows_are_bounded_when_the_disk_is_slow(tmp_path):
    from tallyboard.records.recordfile import ROW_BYTES
    from tallyboard_scalar.tfevents import encode_batch

    path = tmp_path / "f"
    limit = 200 * ROW_BYTES
    rf = RecordFile(SlowFile(str(path)), max_queue=10, flush_secs=3600, max_pending_bytes=limit)
    key = row_key(encode_batch)
    peak = 0
    for i in range(5000):
        rf.write_row((key, "x", i, 1.0, 0.5))
        peak = max(peak, rf.pending)
    rf.close()
    assert peak <= 200 + 10
    assert len(tb_records(path.read_bytes())) == 5000


def test_rows_written_from_several_threads_are_all_kept(logdir):
    w = SummaryWriter(logdir, max_queue=5)

    def log(name):
        for i in range(2000):
            w.add_scalar(name, float(i), i)

    threads = [threading.Thread(target=log, args=(f"t{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    acc = load_run(logdir)
    for k in range(4):
        assert [e.step for e in acc.Scalars(f"t{k}")] == list(range(2000))
    assert len(event_files(logdir)) == 1
