"""Real log files and hostile variants of them, for the reader tests and the reader fuzzer.

Framing, CRCs and PNG chunks are built here from the formats' specifications (TFRecord framing:
``uint64 length | masked CRC-32C(length) | payload | masked CRC-32C(payload)``; PNG chunks:
``length | type | data | CRC-32``), with the ``crc32c`` package, sharing no code with tallyboard.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import crc32c as _crc32c
import numpy as np

#: the largest record a reader reads whole by default (protobuf's limit for a message).
MAX_RECORD = 1 << 31


def masked_crc(data: bytes) -> int:
    crc = _crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def header(length: int) -> bytes:
    """A record header claiming ``length`` payload bytes, with a valid length CRC."""
    head = struct.pack("<Q", length)
    return head + struct.pack("<I", masked_crc(head))


def frame(payload: bytes) -> bytes:
    """One framed record."""
    return header(len(payload)) + payload + struct.pack("<I", masked_crc(payload))


def records(data: bytes) -> list[tuple[int, int]]:
    """``(offset, payload length)`` of every whole, well-framed record of ``data``."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, pos)
        if struct.unpack_from("<I", data, pos + 8)[0] != masked_crc(data[pos : pos + 8]):
            break
        if pos + 16 + length > len(data):
            break
        out.append((pos, length))
        pos += 16 + length
    return out


def png_bomb(width: int, height: int) -> bytes:
    """An RGB PNG of ``width`` x ``height`` black pixels: a few hundred kilobytes of zlib that
    inflate to ``3 * width * height`` bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(data, zlib.crc32(kind))
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    compressor = zlib.compressobj(9)
    row = b"\0" * (1 + 3 * width)
    body = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def image_event(tag: str, step: int, png: bytes, width: int, height: int) -> bytes:
    """A TensorBoard ``Event`` payload holding one image summary (TensorBoard's own protos)."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    image = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=png)
    summary = Summary(value=[Summary.Value(tag=tag, image=image)])
    return Event(wall_time=1.0, step=step, summary=summary).SerializeToString()  # type: ignore[no-any-return]


def scalar_event(tag: str, step: int, value: float) -> bytes:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    summary = Summary(value=[Summary.Value(tag=tag, simple_value=value)])
    return Event(wall_time=1.0, step=step, summary=summary).SerializeToString()  # type: ignore[no-any-return]


def write_runs(root: Path, steps: int = 6) -> dict[str, Path]:
    """A log dir with one run per format, written by tallyboard's writers: ``tb`` (event file,
    scalars, an image, a histogram, a text and an embedding), ``csv``, ``jsonl`` (with an image
    side file) and ``ms`` (a MindSpore summary file). Returns each format's file."""
    import warnings

    from tallyboard import SummaryRecord, SummaryWriter

    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with SummaryWriter(str(root / "tb")) as w:
            for step in range(steps):
                w.add_scalar("loss", 1.0 / (step + 1), step)
                w.add_scalar("acc", step / 10, step)
            w.add_image("img", rng.integers(0, 255, (3, 4, 4), dtype=np.uint8), 1)
            w.add_histogram("weights", rng.standard_normal(50), 1)
            w.add_text("note", "hello", 1)
            w.add_embedding(rng.random((5, 3)), metadata=list("abcde"), global_step=1)
        with SummaryWriter(str(root / "csv"), sinks=["csv"]) as w:
            for step in range(steps):
                w.add_scalar("loss", 1.0 / (step + 1), step)
                w.add_scalar("a,b", step / 10, step)
        with SummaryWriter(str(root / "jsonl"), sinks=["jsonl"]) as w:
            for step in range(steps):
                w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_text("note", "hello", 1)
            w.add_image("img", rng.integers(0, 255, (3, 4, 4), dtype=np.uint8), 1)
        with SummaryRecord(str(root / "ms")) as r:
            for step in range(1, steps + 1):
                r.add_value("scalar", "loss", np.float32(1.0 / step))
                r.add_value("scalar", "acc", np.float32(step / 10))
                if step == 2:
                    r.add_value("histogram", "w", rng.standard_normal(20).astype(np.float32))
                r.record(step)

    def one(run: str, cond: str) -> Path:
        (path,) = [p for p in (root / run).iterdir() if cond in p.name]
        os.chmod(path, 0o644)  # MindSpore files are written read-only
        return path

    return {
        "tfevents": one("tb", "tfevents"),
        "csv": one("csv", "scalars"),
        "jsonl": one("jsonl", "records"),
        "mindspore": one("ms", ".out.events.summary."),
        "projector": root / "tb" / "projector_config.pbtxt",
    }
