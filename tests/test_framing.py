"""TFRecord framing and masked CRC-32C, C and pure-Python, against published test vectors."""

from __future__ import annotations

import struct

import pytest
from tallyboard.records import framing
from tallyboard.records.framing import CorruptRecord, crc32c_python, frame, mask, read_records

IMPLEMENTATIONS = [crc32c_python, framing.crc32c]


@pytest.mark.parametrize("crc", IMPLEMENTATIONS, ids=["python", "c"])
def test_crc32c_matches_published_vectors(crc):
    assert crc(b"123456789") == 0xE3069283
    assert crc(bytes(32)) == 0x8A9136AA
    assert crc(b"") == 0


@pytest.mark.parametrize("crc", IMPLEMENTATIONS, ids=["python", "c"])
def test_masked_crc_matches_tfrecord_vectors(crc):
    assert mask(crc(b"")) == 0xA282EAD8
    assert mask(crc(b"\x1a\x11CRC test, one two")) == 0x5794D08A
    assert mask(crc(struct.pack("<Q", 24))) == 0x224B7FA3


def test_c_crc_package_is_in_use():
    assert framing.CRC_IMPLEMENTATION in ("crc32c", "google-crc32c")


def test_frame_is_read_back_by_tensorboards_record_reader(tmp_path):
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New

    payloads = [b"", b"x", bytes(range(256)) * 40]
    path = tmp_path / "records"
    path.write_bytes(b"".join(frame(p) for p in payloads))
    reader = PyRecordReader_New(str(path))
    got = []
    while True:
        try:
            reader.GetNext()
        except Exception:
            break
        got.append(reader.record())
    assert got == payloads


def test_read_records_ignores_a_torn_tail_and_rejects_corruption():
    data = frame(b"first") + frame(b"second")
    assert read_records(data[:-3]) == [b"first"]
    corrupt = bytearray(data)
    corrupt[14] ^= 0xFF
    with pytest.raises(CorruptRecord):
        read_records(bytes(corrupt))


def test_a_record_framed_from_parts_is_the_record_framed_whole() -> None:
    import os

    from tallyboard.records import framing

    for sizes in [(0,), (1, 0, 2), (5000, 7, 65536), (3, 100_000)]:
        parts = [os.urandom(n) for n in sizes]
        parts[0] = memoryview(parts[0])  # views as well as bytes
        whole = b"".join(bytes(p) for p in parts)
        assert b"".join(framing.frame_parts(parts)) == framing.frame(whole)
        crc = 0
        for part in parts:
            crc = framing.crc32c_python_extend(crc, bytes(part))
        assert crc == framing.crc32c(whole)
