"""Protobuf wire format, packed by hand: varints and tagged fields.

For encoders that write records without protobuf message classes (faster, and byte-exact to what
a protobuf runtime writes), and readers that read a few fields without them
(:func:`read_varint`). Nothing here knows a particular message.
"""

from __future__ import annotations

import math
import struct

_pack_d = struct.Struct("<d").pack
_pack_f = struct.Struct("<f").pack
_pack_wall = struct.Struct("<Bd").pack
_pack_wall_step1 = struct.Struct("<BdBB").pack
_pack_wall_step2 = struct.Struct("<BdBBB").pack
_pack_wall_step3 = struct.Struct("<BdBBBB").pack


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``data[pos]`` (unsigned; an int64's two's complement as it is) and the
    position after it: the reading twin of :func:`varint`.

    Raises:
        ValueError: the varint runs past the end of ``data`` or beyond 64 bits.
    """
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated or overlong varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def varint(n: int) -> bytes:
    """Protobuf base-128 varint; negative numbers as 64-bit two's complement (int64, 10 bytes)."""
    if 0 <= n < 0x80:
        return bytes((n,))
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def wall_step(wall_time: float, step: int) -> bytes:
    """Fields 1 (double ``wall_time``) and 2 (varint ``step``) that start every TensorBoard and
    MindSpore ``Event``: one ``struct`` pack for steps below 2**21, the hot path of every record."""
    if 0 <= step < 0x80:
        return _pack_wall_step1(9, wall_time, 0x10, step)
    if 0 < step < 0x4000:
        return _pack_wall_step2(9, wall_time, 0x10, (step & 0x7F) | 0x80, step >> 7)
    if 0 < step < 0x200000:
        low, mid = (step & 0x7F) | 0x80, ((step >> 7) & 0x7F) | 0x80
        return _pack_wall_step3(9, wall_time, 0x10, low, mid, step >> 14)
    return _pack_wall(9, wall_time) + b"\x10" + varint(step)


def field_bytes(number: int, data: bytes) -> bytes:
    """A length-delimited field (string, bytes, embedded message)."""
    return varint(number << 3 | 2) + varint(len(data)) + data


def field_varint(number: int, value: int) -> bytes:
    """A varint field (int32, int64, uint32, uint64, bool, enum)."""
    return varint(number << 3) + varint(int(value))


def field_double(number: int, value: float) -> bytes:
    """A 64-bit field holding a double."""
    return varint(number << 3 | 1) + _pack_d(value)


def float32(value: float) -> bytes:
    """``value`` as a little-endian float32, rounded like a C cast (beyond float32: infinity)."""
    try:
        return _pack_f(value)
    except OverflowError:
        return _pack_f(math.copysign(math.inf, value))
