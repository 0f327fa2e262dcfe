"""The "minimal honest writer": the floor that tallyboard's ``add_scalar`` is measured against.

It writes a valid TensorBoard event file with the least work Python can do per scalar: tag bytes
cached, the ``Event`` packed with ``struct``, C CRC-32C framing, records kept in one bytearray and
written once at ``close()``. No validation, no background thread, no bound on memory, nothing
written before ``close()``: what tallyboard adds on top of this is the price of its guarantees.
"""

from __future__ import annotations

import os
import socket
import struct
import time

from crc32c import crc32c

_head = struct.Struct("<Bd").pack
_float = struct.Struct("<f").pack
_u32 = struct.Struct("<I").pack
_u64 = struct.Struct("<Q").pack


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _masked(data: bytes) -> bytes:
    crc = crc32c(data)
    return _u32((((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


class FloorWriter:
    """``add_scalar(tag, value, step)`` into one event file, written at ``close()``."""

    def __init__(self, log_dir: str) -> None:
        os.makedirs(log_dir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.floor"
        self.path = os.path.join(log_dir, name)
        self._buf = bytearray()
        self._tags: dict[str, bytes] = {}
        self._lengths: dict[int, bytes] = {}
        self._write(_head(9, time.time()) + b"\x1a\x0dbrain.Event:2")

    def _write(self, payload: bytes) -> None:
        n = len(payload)
        head = self._lengths.get(n)
        if head is None:
            length = _u64(n)
            head = self._lengths[n] = length + _masked(length)
        self._buf += head + payload + _masked(payload)

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        suffix = self._tags.get(tag)
        if suffix is None:
            raw = tag.encode()
            value_msg = b"\x0a" + _varint(len(raw)) + raw + b"\x15"
            inner = len(value_msg) + 4
            summary = b"\x0a" + _varint(inner)
            suffix = self._tags[tag] = b"\x2a" + _varint(len(summary) + inner) + summary + value_msg
        payload = _head(9, time.time()) + b"\x10" + _varint(step) + suffix + _float(value)
        n = len(payload)
        head = self._lengths.get(n)
        if head is None:
            length = _u64(n)
            head = self._lengths[n] = length + _masked(length)
        crc = crc32c(payload)
        self._buf += head + payload + _u32((((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)

    def close(self) -> None:
        with open(self.path, "wb") as f:
            f.write(self._buf)
        self._buf = bytearray()
