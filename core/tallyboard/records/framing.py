"""TFRecord framing with masked CRC-32C, used by TensorBoard and MindSpore files alike.

Each record is ``uint64 length | uint32 masked_crc(length) | payload | uint32 masked_crc(payload)``,
little-endian. The CRC comes from a C package (``crc32c``, or ``google-crc32c``) when one is
installed, else from a pure-Python table implementation (about 20x slower on small records).
"""

from __future__ import annotations

import struct
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
_pack_q = struct.Struct("<Q").pack
_pack_i = struct.Struct("<I").pack
_LITTLE = sys.byteorder == "little"


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


def crc32c_python_extend(crc: int, data: bytes) -> int:
    """The CRC-32C of what gave ``crc`` followed by ``data``, in pure Python."""
    crc ^= _U32
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ _U32


def _c_implementation() -> tuple[Callable[[bytes], int], Callable[[int, Any], int], str]:
    try:
        import crc32c as _crc32c_mod

        def extend(crc: int, data: Any) -> int:
            return _crc32c_mod.crc32c(data, value=crc)  # type: ignore[no-any-return]

        return _crc32c_mod.crc32c, extend, "crc32c"
    except ImportError:
        pass
    try:
        import google_crc32c

        return google_crc32c.value, google_crc32c.extend, "google-crc32c"
    except ImportError:
        return crc32c_python, crc32c_python_extend, "python"


#: ``crc32c(data)``, and ``crc32c_extend(crc, data)``: the CRC of what gave ``crc``, then ``data``.
crc32c, crc32c_extend, CRC_IMPLEMENTATION = _c_implementation()


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


def frame_parts(parts: Sequence[bytes | memoryview]) -> list[bytes | memoryview]:
    """One framed record holding ``parts`` one after the other, as pieces: joined, the same
    bytes as ``frame(b"".join(parts))``. A caller joins the pieces of many records at once, so
    each part is copied once."""
    crc = 0
    for part in parts:
        crc = crc32c_extend(crc, part)
    n = sum(map(len, parts))
    head = _header_cache.get(n) or _header(n)
    return [head, *parts, _pack_i((((crc >> 15) | (crc << 17)) + _MASK_DELTA) & _U32)]


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


# -- many records at once -------------------------------------------------------------------
#
# CRC-32C without its initial value and final XOR is linear over GF(2), so for records of one
# length L the CRC of a payload is the CRC of a fixed template XOR, for every byte b at position
# i that differs from the template, a table entry that depends only on L - i and b. Bytes that
# are the same in every record (tags, field keys) cost nothing; each varying byte costs one
# table lookup per record, done for all records at once with NumPy (two bytes per lookup where
# the varying bytes come in pairs).

_byte_tables: list[Any] = []  # [d]: uint32[256], contribution of byte b followed by d-1 zeros
_pair_tables: dict[int, Any] = {}  # [d]: uint32[65536], bytes (u & 255, u >> 8) at distances d, d-1
_MAX_PAIR_TABLES = 24
# Writer threads of several files frame batches at once. Each table is derived from the one
# before it, so the tables only grow under this lock; a reader takes a table that is already
# there without it (entries are appended whole and never change).
_tables_lock = threading.Lock()


def byte_table(d: int) -> Any:
    """A uint32[256] array: the contribution to the (linear, unmasked) CRC-32C of a payload of
    one byte value followed by ``d - 1`` bytes. Readers use it to check many records that
    differ from a template in a few bytes with one lookup per differing byte."""
    tables = _byte_tables
    if d < len(tables):
        return tables[d]
    import numpy as np

    with _tables_lock:
        if not tables:
            base = np.array(_TABLE, dtype=np.uint32)
            tables.extend((None, base))  # distance 0 is not a byte of the payload
        base = tables[1]
        while len(tables) <= d:
            prev = tables[-1]
            tables.append(base[prev & 0xFF] ^ (prev >> 8))
    return tables[d]


def pair_table(d: int) -> Any:
    """Contribution of two bytes (low byte at distance ``d``, high byte at ``d - 1``) by uint16,
    or None once the cache is full (each table takes 256 KiB: two byte lookups do instead)."""
    table = _pair_tables.get(d)
    if table is None and len(_pair_tables) < _MAX_PAIR_TABLES:
        import numpy as np

        low, high = byte_table(d), byte_table(d - 1)
        u = np.arange(65536, dtype=np.uint32)
        with _tables_lock:
            table = _pair_tables.get(d)
            if table is None and len(_pair_tables) < _MAX_PAIR_TABLES:
                table = _pair_tables[d] = low[u & 0xFF] ^ high[u >> 8]
    return table


MAX_FIXED_TABLES = 4096  # payload bytes up to which frame_fixed uses tables (1 KiB per byte)


def frame_fixed(template: bytes, fields: Sequence[tuple[int, Any]]) -> Any:
    """Frame ``n`` records that equal ``template`` except at the given fields, all at once.

    ``fields`` holds ``(offset, array)`` pairs: an array of ``n`` fixed-size values (any dtype,
    written as its little-endian bytes) or an ``(n, k)`` uint8 array, placed at ``offset`` in
    each payload. The template's bytes under the fields are ignored. Returns an
    ``(n, len(template) + 16)`` uint8 array: the framed records, one per row. Meant for small
    records (scalars): for payloads over ``MAX_FIXED_TABLES`` bytes the CRCs are computed one
    record at a time.
    """
    import numpy as np

    size = len(template)
    columns = []
    n = -1
    for offset, values in fields:
        arr = np.ascontiguousarray(values)
        if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and not _LITTLE):
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        as_bytes = arr.view(np.uint8).reshape(len(arr), -1)
        if n < 0:
            n = len(arr)
        elif len(arr) != n:
            raise ValueError(f"fields hold {n} and {len(arr)} records")
        if not 0 <= offset <= size - as_bytes.shape[1]:
            raise ValueError(f"field at offset {offset} falls outside a {size}-byte payload")
        columns.append((offset, arr, as_bytes))
    base = bytearray(template)
    for offset, _, as_bytes in columns:
        base[offset : offset + as_bytes.shape[1]] = bytes(as_bytes.shape[1])
    crc = np.full(max(n, 0), crc32c(bytes(base)), dtype=np.uint32)
    out = np.empty((max(n, 0), size + 16), dtype=np.uint8)
    out[:, :12] = np.frombuffer(_header_cache.get(size) or _header(size), dtype=np.uint8)
    out[:, 12 : 12 + size] = np.frombuffer(bytes(base), dtype=np.uint8)
    for offset, _, as_bytes in columns:
        out[:, 12 + offset : 12 + offset + as_bytes.shape[1]] = as_bytes
    if size > MAX_FIXED_TABLES:  # tables would grow with the size: one C CRC per record
        crc[:] = [crc32c(row.tobytes()) for row in out[:, 12 : 12 + size]]
        columns = []
    for offset, _, as_bytes in columns:
        width = as_bytes.shape[1]
        pairs = width // 2
        if pairs:
            wide = np.ascontiguousarray(as_bytes[:, : 2 * pairs]).view("<u2")
            for j in range(pairs):
                table = pair_table(size - offset - 2 * j)
                if table is not None:
                    crc ^= table[wide[:, j]]
                else:
                    crc ^= byte_table(size - offset - 2 * j)[as_bytes[:, 2 * j]]
                    crc ^= byte_table(size - offset - 2 * j - 1)[as_bytes[:, 2 * j + 1]]
        if width % 2:
            crc ^= byte_table(size - offset - width + 1)[as_bytes[:, width - 1]]
    masked = (((crc >> 15) | (crc << 17)) + np.uint32(_MASK_DELTA)) & np.uint32(_U32)
    out[:, 12 + size :] = masked.astype("<u4").view(np.uint8).reshape(-1, 4)
    return out


def in_call_order(keys: Sequence[Any], frame_group: Callable[[Any, Any], Any]) -> bytes:
    """Records of rows of several layouts, framed a layout at a time, back in call order.

    ``keys[i]`` names row ``i``'s layout; ``frame_group(key, idx)`` frames the rows at positions
    ``idx`` (a numpy array, ascending) that share ``key`` and returns them as a 2-D uint8 array, a
    record per row (what :func:`frame_fixed` gives). Rows keep the order they were logged in:
    TensorBoard drops data when a step goes backwards.
    """
    import numpy as np

    ids: dict[Any, int] = {}
    code = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), np.int64, len(keys))
    names = list(ids)
    order = np.argsort(code, kind="stable")
    sorted_code = code[order]
    edges = [0, *(np.flatnonzero(np.diff(sorted_code)) + 1).tolist(), len(keys)]
    sizes = np.empty(len(keys), np.int64)
    groups = []
    for a, b in zip(edges[:-1], edges[1:]):
        idx = order[a:b]
        framed = frame_group(names[int(sorted_code[a])], idx)
        sizes[idx] = framed.shape[1]
        groups.append((idx, framed))
    offsets = np.cumsum(sizes) - sizes
    out = np.empty(int(sizes.sum()), np.uint8)
    for idx, framed in groups:
        out[offsets[idx][:, None] + np.arange(framed.shape[1])] = framed
    return out.tobytes()  # type: ignore[no-any-return]


def varint_columns(values: Any, width: int) -> Any:
    """Unsigned ``values`` (a numpy uint64 array) as protobuf varints of exactly ``width`` bytes,
    one row each: the column a :func:`frame_fixed` field takes for a step of that length."""
    import numpy as np

    out = np.empty((len(values), width), dtype=np.uint8)
    for j in range(width):
        byte = (values >> np.uint64(7 * j)) & np.uint64(0x7F)
        if j < width - 1:
            byte |= np.uint64(0x80)
        out[:, j] = byte
    return out
