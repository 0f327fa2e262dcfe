"""Memory while large records (images) wait for a slow disk: what is held stays within the
pending-bytes limit plus about one record, whatever the records' shape, and images that deflate
well are deflated (a stored PNG is as large as its pixels and fills the queue 35 times faster)."""

from __future__ import annotations

import io
import time
import tracemalloc

import numpy as np
import pytest
from conftest import load_run, raw_events
from PIL import Image
from tallyboard import SummaryWriter
from tallyboard.plugin.sinks import Deferred
from tallyboard.records import storage
from tallyboard.records.framing import read_records
from tallyboard.records.recordfile import RecordFile
from tallyboard_image import codec

MiB = 1 << 20


class StalledFile(storage.LocalAppendFile):
    """A disk that blocks on every write."""

    stall = 0.005

    def write(self, data: bytes) -> None:
        time.sleep(self.stall)
        super().write(data)


def traced_peak(work) -> int:
    """Peak bytes allocated (Python objects and NumPy arrays) above the level before ``work``."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        work()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def ramp(side: int = 1024) -> np.ndarray:
    """The image bench/bench_scalar.py writes: every row steps by the same nonzero amount."""
    return (
        (np.arange(3 * side * side, dtype=np.uint32) % 251).astype(np.uint8).reshape(3, side, side)
    )


@pytest.mark.parametrize("shape", ["deferred", "bytes"])
def test_big_records_to_a_stalled_file_stay_within_the_limit_plus_a_record(tmp_path, shape):
    limit, size, n = 8 * MiB, MiB, 40
    path = tmp_path / "f"
    rf = RecordFile(StalledFile(str(path)), max_queue=10, flush_secs=3600, max_pending_bytes=limit)

    def work() -> None:
        for i in range(n):
            pixels = np.full(size, i, np.uint8)  # what a Deferred image encode holds
            if shape == "deferred":
                rf.write(Deferred(np.ndarray.tobytes, (pixels,), size))
            else:
                rf.write(pixels.tobytes())
        rf.close()

    # Held at most: the limit, the record that overshoots it, the one the caller is making (two
    # copies: pixels and bytes), the one the writer thread has just written or is framing (two
    # copies); joining small records into one write would add less than 1 MiB. Before records
    # were written in pieces, the writer joined a whole batch of them: twice the limit.
    peak = traced_peak(work)
    assert peak <= limit + 4 * size + MiB // 4, (
        f"peak {peak / MiB:.1f} MiB, limit {limit / MiB} MiB"
    )
    records = read_records(path.read_bytes())
    assert [r[0] for r in records] == list(range(n)) and {len(r) for r in records} == {size}


def test_noise_images_to_a_stalled_disk_stay_within_the_pending_limit(logdir, monkeypatch):
    limit = 16 * MiB  # the sink's RecordFile takes the default limit: a smaller one, to be quick
    monkeypatch.setitem(RecordFile.__init__.__kwdefaults__, "max_pending_bytes", limit)
    monkeypatch.setattr(storage, "LocalAppendFile", StalledFile)
    noise = np.random.default_rng(0).integers(0, 256, (3, 512, 512), dtype=np.uint8)
    n = 32  # stored PNGs of 0.75 MiB each, 24 MiB: the queue fills up
    w = SummaryWriter(str(logdir))
    w.add_image("warm", noise, 0)
    w.flush()

    def work() -> None:
        for i in range(n):
            w.add_image("noise", noise, i)
        w.close()

    peak = traced_peak(work)
    # the limit, the record over it, one image in the caller and one in the writer thread (its
    # pixels, filtered rows, PNG, Event, framed record), the one just written: 8 images at most,
    # not a copy of every pending byte (before: 2 x 16 MiB)
    assert peak <= limit + 8 * noise.nbytes, f"peak {peak / MiB:.1f} MiB, limit {limit / MiB} MiB"
    events = [
        e for e in raw_events(logdir) if e.summary.value and e.summary.value[0].tag == "noise"
    ]
    assert [e.step for e in events] == list(range(n))
    last = np.asarray(
        Image.open(io.BytesIO(events[-1].summary.value[0].image.encoded_image_string))
    )
    np.testing.assert_array_equal(last, noise.transpose(1, 2, 0))


def test_an_image_whose_rows_step_by_a_constant_is_deflated():
    pixels = np.ascontiguousarray(ramp().transpose(1, 2, 0))
    data = codec.png_bytes(pixels)
    assert len(data) < pixels.nbytes * 0.05
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(data))), pixels)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_ramps_of_any_channel_count_are_deflated_and_noise_is_stored(channels):
    rng = np.random.default_rng(channels)
    ramp_pixels = (np.arange(128 * 128 * channels) % 251).astype(np.uint8)
    ramp_pixels = ramp_pixels.reshape(128, 128, channels)
    noise = rng.integers(0, 256, (128, 128, channels), dtype=np.uint8)
    for pixels in (ramp_pixels, noise):
        data = codec.png_bytes(pixels)
        decoded = np.asarray(Image.open(io.BytesIO(data))).reshape(pixels.shape)
        np.testing.assert_array_equal(decoded, pixels)
    assert len(codec.png_bytes(ramp_pixels)) < ramp_pixels.nbytes * 0.1
    assert len(codec.png_bytes(noise)) > noise.nbytes  # stored: deflate gains nothing


def test_the_benchmark_image_is_logged_deflated_and_exact(logdir):
    image = ramp()
    with SummaryWriter(str(logdir)) as w:
        w.add_image("ramp", image, 0)
    encoded = load_run(logdir).Images("ramp")[0].encoded_image_string
    assert len(encoded) < image.nbytes * 0.05
    np.testing.assert_array_equal(
        np.asarray(Image.open(io.BytesIO(encoded))), image.transpose(1, 2, 0)
    )


def test_a_stored_png_holds_one_copy_of_the_pixels_beyond_its_own_bytes():
    noise = np.random.default_rng(1).integers(0, 256, (1024, 1024, 3), dtype=np.uint8)
    codec.png_bytes(noise)  # warm
    result: list[bytes] = []
    peak = traced_peak(lambda: result.append(codec.png_bytes(noise)))
    assert len(result[0]) > noise.nbytes  # stored
    # the filtered rows and the PNG itself; no copy per step (tobytes, stored blocks, chunks)
    assert peak <= 2 * noise.nbytes + MiB, f"peak {peak / MiB:.1f} MiB for {noise.nbytes / MiB} MiB"
