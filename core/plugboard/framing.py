"""TFRecord framing with masked CRC-32C, used by TensorBoard and MindSpore files alike.

Each record is ``uint64 length | uint32 masked_crc(length) | payload | uint32 masked_crc(payload)``,
little-endian. The CRC comes from a C package (``crc32c``, or ``google-crc32c``) when one is
installed, else from a pure-Python table implementation (about 20x slower on small records).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
_pack_q = struct.Struct("<Q").pack
_pack_i = struct.Struct("<I").pack


def _make_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def crc32c_python(data: bytes) -> int:
    """CRC-32C (Castagnoli) in pure Python: the fallback when no C package is installed."""
    crc = _U32
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ _U32


def _c_implementation() -> tuple[Callable[[bytes], int], str]:
    try:
        import crc32c as _crc32c_mod

        return _crc32c_mod.crc32c, "crc32c"
    except ImportError:
        pass
    try:
        import google_crc32c

        return google_crc32c.value, "google-crc32c"
    except ImportError:
        return crc32c_python, "python"


crc32c, CRC_IMPLEMENTATION = _c_implementation()


def mask(crc: int) -> int:
    """The masking TFRecord applies to stored CRCs."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & _U32


def masked_crc32c(data: bytes) -> int:
    return mask(crc32c(data))


_header_cache: dict[int, bytes] = {}


def _header(n: int) -> bytes:
    length = _pack_q(n)
    head = length + _pack_i(masked_crc32c(length))
    if len(_header_cache) < 65536:
        _header_cache[n] = head
    return head


def frame(payload: bytes) -> bytes:
    """One framed record holding ``payload``."""
    crc = crc32c(payload)
    head = _header_cache.get(len(payload)) or _header(len(payload))
    return head + payload + _pack_i((((crc >> 15) | (crc << 17)) + _MASK_DELTA) & _U32)


class CorruptRecord(ValueError):
    """A record whose framing or CRC does not check out."""


def read_records(data: bytes, *, check_crc: bool = True) -> list[bytes]:
    """Split a whole file's bytes into payloads; a torn last record is ignored, corruption raises."""
    out = []
    pos, end = 0, len(data)
    while pos + 12 <= end:
        (n,) = struct.unpack_from("<Q", data, pos)
        (len_crc,) = struct.unpack_from("<I", data, pos + 8)
        if check_crc and len_crc != masked_crc32c(data[pos : pos + 8]):
            raise CorruptRecord(f"bad length CRC at offset {pos}")
        if pos + 12 + n + 4 > end:
            break  # torn tail: a writer was interrupted mid-record
        payload = data[pos + 12 : pos + 12 + n]
        (crc,) = struct.unpack_from("<I", data, pos + 12 + n)
        if check_crc and crc != masked_crc32c(payload):
            raise CorruptRecord(f"bad payload CRC at offset {pos}")
        out.append(payload)
        pos += 12 + n + 4
    return out
