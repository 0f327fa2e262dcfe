"""Batch framing under concurrency: many writers framing their first batches at once.

The table-driven CRC of :func:`tallyboard.records.framing.frame_fixed` builds its lookup tables on first
use. Several writer threads doing that at once used to leave a wrong table behind, and every
scalar record after that carried a wrong CRC. Each case runs in a fresh interpreter (the tables
are per process), with a tiny GIL switch interval so threads interleave often.
"""

from __future__ import annotations

import random
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import crc32c
import numpy as np
import pytest
from tallyboard.records import framing

WRITERS = 8
STEPS = 60
PROCESSES, ROUNDS = 4, 12

# Each writer logs its own layout: one tag; tags in a fixed rotation; tags of other lengths in
# turn; steps of every varint width; a long tag (distances far into the tables).
SCRIPT = textwrap.dedent(
    f"""
    import sys, threading
    sys.setswitchinterval(1e-6)
    from tallyboard import SummaryWriter
    from tallyboard.records import framing

    log_dir = sys.argv[1]
    layouts = [
        lambda i: [("loss", i)],
        lambda i: [("a", i), ("bb", i), ("ccc", i)],
        lambda i: [("train/loss", i), ("lr", i), ("grad_norm/layer_" + "x" * 40, i)],
        lambda i: [("big_steps", i * 99991 + (1 << 40) * (i % 3))],
        lambda i: [("t" * 300, i)],
    ]
    def round(r):
        # A fresh process's tables, without the cost of a new interpreter for each round.
        framing._byte_tables.clear()
        framing._pair_tables.clear()
        writers = [SummaryWriter(log_dir=f"{{log_dir}}/{{r}}", max_queue=7) for _ in range({WRITERS})]
        start = threading.Barrier({WRITERS})

        def run(k):
            w = writers[k]
            layout = layouts[k % len(layouts)]
            start.wait()
            for i in range({STEPS}):
                for tag, step in layout(i):
                    w.add_scalar(tag, float(i) / 3, step)
            w.close()

        threads = [threading.Thread(target=run, args=(k,)) for k in range({WRITERS})]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    for r in range({ROUNDS}):
        round(r)
    """
)


def _masked(data: bytes) -> int:
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _bad_records(path: Path) -> tuple[int, list[int]]:
    """Number of records in ``path`` and the offsets of those whose CRCs do not check out,
    by the C package's CRC-32C (not the tables under test)."""
    data = path.read_bytes()
    pos, count, bad = 0, 0, []
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        (len_crc,) = struct.unpack_from("<I", data, pos + 8)
        (data_crc,) = struct.unpack_from("<I", data, pos + 12 + n)
        if len_crc != _masked(data[pos : pos + 8]) or data_crc != _masked(
            data[pos + 12 : pos + 12 + n]
        ):
            bad.append(pos)
        count += 1
        pos += 12 + n + 4
    assert pos == len(data), f"{path} ends inside a record"
    return count, bad


def test_writers_framing_their_first_batches_at_once_write_correct_crcs(tmp_path):
    runs = [tmp_path / f"run{i}" for i in range(PROCESSES)]
    procs = [
        subprocess.Popen([sys.executable, "-c", SCRIPT, str(run)], stderr=subprocess.PIPE)
        for run in runs
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    failures = []
    for run in runs:
        files = sorted(run.glob("*/*tfevents*"))
        assert len(files) == WRITERS * ROUNDS
        for path in files:
            count, bad = _bad_records(path)
            assert count > STEPS
            if bad:
                failures.append(f"{path.name}: {len(bad)} of {count} records")
    assert not failures, failures


@pytest.mark.parametrize("chunk", range(8))
def test_table_crc_equals_the_c_crc_for_every_size_the_tables_serve(chunk):
    rng = random.Random(chunk)
    sizes = range(1 + chunk, framing.MAX_FIXED_TABLES + 1, 8)
    for size in sizes:
        template = rng.randbytes(size)
        width = rng.randint(1, min(size, 12))
        offset = rng.randint(0, size - width)
        values = np.frombuffer(rng.randbytes(3 * width), np.uint8).reshape(3, width)
        fields = [(offset, values)]
        if size - offset - width >= 2:  # a second, 8-byte-or-less field after the first
            w2 = rng.randint(1, min(8, size - offset - width))
            o2 = rng.randint(offset + width, size - w2)
            fields.append((o2, np.frombuffer(rng.randbytes(3 * w2), np.uint8).reshape(3, w2)))
        out = framing.frame_fixed(template, fields)
        for r, row in enumerate(out):
            payload = row[12 : 12 + size].tobytes()
            expected = bytearray(template)
            for off, arr in fields:
                expected[off : off + arr.shape[1]] = arr[r].tobytes()
            assert payload == bytes(expected)
            (crc,) = struct.unpack("<I", row[12 + size :].tobytes())
            assert crc == _masked(payload), (
                f"size {size}, fields {[(o, a.shape[1]) for o, a in fields]}"
            )
            (len_crc,) = struct.unpack("<I", row[8:12].tobytes())
            assert len_crc == _masked(row[:8].tobytes())
