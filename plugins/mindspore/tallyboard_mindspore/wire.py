"""MindSpore ``summary.proto`` / ``anf_ir.proto`` / ``lineage.proto`` records, packed by hand.

Every message here is proto2 and written byte-canonically, as MindSpore's C++ writer does:
fields in field-number order, required fields and set oneof members always emitted (even when
zero), ``TensorProto.dims`` unpacked and ``float_data`` packed. Field numbers:

- ``Event``: wall_time 1 (double), step 2 (int64), version 3, graph_def 4, summary 5.
- ``Summary.Value``: tag 1, scalar_value 3 (float), image 4, tensor 8, histogram 9,
  loss_landscape 10.
- ``Image``: height 1, width 2, colorspace 3, encoded_image 4.
- ``Histogram``: buckets 1 {left 1, width 2, count 3}, nan_count 2, pos_inf_count 3,
  neg_inf_count 4, max 5, min 6, sum 7, count 8.
- ``TensorProto``: dims 1, data_type 2, float_data 3 (packed).
- ``LineageEvent``: wall_time 1, step 2, train_lineage 6, evaluation_lineage 7, dataset_graph 9,
  user_defined_info 10.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
from tallyboard.records.wire import (
    field_bytes,
    field_double,
    field_varint,
    float32,
    read_varint,
    varint,
    wall_step,
)

VERSION = "MindSpore.Event:1"

_pack_d = struct.Struct("<d").pack

#: ``anf_ir.DataType`` of each NumPy scalar type MindSpore can write (everything else: TypeError).
DATA_TYPES: dict[type, int] = {
    np.bool_: 1,
    np.int8: 2,
    np.int16: 3,
    np.int32: 4,
    np.int64: 5,
    np.uint8: 6,
    np.uint16: 7,
    np.uint32: 8,
    np.uint64: 9,
    np.float16: 10,
    np.float32: 11,
    np.float64: 12,
}


# -- events -----------------------------------------------------------------------------------


def version_event(wall_time: float) -> bytes:
    """The first record of every summary file."""
    return b"\x09" + _pack_d(wall_time) + field_bytes(3, VERSION.encode())


def summary_event(wall_time: float, step: int, values: list[bytes]) -> bytes:
    """``Event{wall_time, step, summary{value...}}`` from serialized ``Summary.Value`` messages."""
    if len(values) == 1 and len(values[0]) < 126:
        value = values[0]
        n = len(value)
        body = bytes((10, n)) + value
        n += 2
    else:
        body = b"".join([b"\x0a" + varint(len(v)) + v for v in values])
        n = len(body)
    head = wall_step(wall_time, step)
    return head + (bytes((42, n)) if n < 128 else b"\x2a" + varint(n)) + body


def graph_event(wall_time: float, graph: bytes) -> bytes:
    """``Event{wall_time, graph_def}`` (no step) from a serialized anf_ir ``GraphProto``."""
    return b"\x09" + _pack_d(wall_time) + field_bytes(4, graph)


def lineage_event(wall_time: float, field: int, message: bytes) -> bytes:
    """``LineageEvent{wall_time, <field>}`` (no step) from a serialized lineage message."""
    return b"\x09" + _pack_d(wall_time) + field_bytes(field, message)


# -- values -----------------------------------------------------------------------------------

_tag_cache: dict[str, bytes] = {}


def tag_field(tag: str) -> bytes:
    """The encoded ``Value.tag`` field, cached per tag."""
    out = _tag_cache.get(tag)
    if out is None:
        out = field_bytes(1, tag.encode("utf-8"))
        if len(_tag_cache) < 100_000:
            _tag_cache[tag] = out
    return out


def scalar_value(tag: str, value: Any) -> bytes:
    """``Value{tag, scalar_value}``: ``value.item()`` stored as float32."""
    if type(value) is not float:
        value = value.item() if isinstance(value, (np.ndarray, np.generic)) else value
        value = float(value)
    return tag_field(tag) + b"\x1d" + float32(value)


def tensor_proto(array: np.ndarray) -> bytes:
    """anf_ir ``TensorProto``: dims, data_type, and every element in ``float_data`` (float32)."""
    data_type = DATA_TYPES.get(array.dtype.type)
    if data_type is None:
        raise TypeError(
            "Transform numpy type failed in Summary, expect numpy type is one of ['np.bool_', 'np.int8', "
            "'np.int16', 'np.int32', 'np.int64', 'np.uint8', 'np.uint16', 'np.uint32', 'np.uint64', "
            "'np.float16', 'np.float32', 'np.float64']."
        )
    parts = [b"\x08" + varint(int(d)) for d in array.shape]
    parts.append(b"\x10" + varint(data_type))
    if array.size:
        with np.errstate(over="ignore", invalid="ignore"):
            floats = np.ascontiguousarray(array, dtype="<f4").tobytes()
        parts.append(b"\x1a" + varint(len(floats)) + floats)
    return b"".join(parts)


def tensor_value(tag: str, array: np.ndarray) -> bytes:
    return tag_field(tag) + field_bytes(8, tensor_proto(array))


def image_proto(height: int, width: int, colorspace: int, png: bytes) -> bytes:
    return (
        field_varint(1, height)
        + field_varint(2, width)
        + field_varint(3, colorspace)
        + field_bytes(4, png)
    )


def image_value(tag: str, height: int, width: int, colorspace: int, png: bytes) -> bytes:
    return tag_field(tag) + field_bytes(4, image_proto(height, width, colorspace, png))


def value_event_head(value_head: bytes, size: int) -> bytes:
    """What a summary Event of one ``Summary.Value`` holds between its step and the Value's last
    ``size`` bytes (a message written after it), ``value_head`` being the Value's bytes before
    them: the Event's and the Summary's length-delimited heads around it."""
    summary = b"\x0a" + varint(len(value_head) + size) + value_head
    return b"\x2a" + varint(len(summary) + size) + summary


_image_heads: dict[tuple[str, int, int, int, int], bytes] = {}


def image_event_parts(
    wall_time: float, step: int, tag: str, height: int, width: int, colorspace: int, png: list[Any]
) -> list[Any]:
    """``summary_event(wall_time, step, [image_value(tag, ...)])`` as pieces, the PNG given as
    pieces too, for one copy of the PNG into the framed record rather than one per enclosing
    message. What comes between the step and the PNG is kept per tag, shape and PNG size
    (stored PNGs of one shape share a size)."""
    size = sum(map(len, png))
    key = (tag, height, width, colorspace, size)
    head = _image_heads.get(key)
    if head is None:
        fields = field_varint(1, height) + field_varint(2, width) + field_varint(3, colorspace)
        image = fields + b"\x22" + varint(size)
        head = value_event_head(tag_field(tag) + b"\x22" + varint(len(image) + size) + image, size)
        if len(_image_heads) < 4096:
            _image_heads[key] = head
    return [wall_step(wall_time, step) + head + png[0], *png[1:]]  # small pieces joined


def histogram_proto(
    buckets: list[tuple[float, float, int]] | bytes,
    nan: int,
    pos_inf: int,
    neg_inf: int,
    stats: tuple[float, float, float] | None,
    count: int,
) -> bytes:
    """``Histogram``; ``stats`` is (max, min, sum), absent when no value is finite. ``buckets``
    are (left, width, count) tuples, or the bytes ``histogram_buckets`` packed for them."""
    if isinstance(buckets, bytes):
        parts = [buckets]
    else:
        parts = [
            field_bytes(1, b"\x09" + _pack_d(left) + b"\x11" + _pack_d(width) + b"\x18" + varint(n))
            for left, width, n in buckets
        ]
    if nan or pos_inf or neg_inf:
        parts.append(field_varint(2, nan) + field_varint(3, pos_inf) + field_varint(4, neg_inf))
    else:
        parts.append(_NO_NONFINITE)
    if stats is not None:
        parts.append(
            field_double(5, stats[0]) + field_double(6, stats[1]) + field_double(7, stats[2])
        )
    parts.append(field_varint(8, count))
    return b"".join(parts)


_NO_NONFINITE = field_varint(2, 0) + field_varint(3, 0) + field_varint(4, 0)


def histogram_buckets(lefts: np.ndarray, widths: np.ndarray, counts: np.ndarray) -> bytes:
    """The repeated ``buckets`` fields of a ``Histogram`` ({left 1, width 2, count 3} each), packed
    with NumPy rather than a Python loop: the same bytes as ``histogram_proto`` writes for them."""
    n = len(counts)
    if not n:
        return b""
    rows = np.empty((n, 22), dtype=np.uint8)
    rows[:, :21] = _BUCKET_HEAD
    rows[:, 3:11].view("<f8")[:, 0] = lefts
    rows[:, 12:20].view("<f8")[:, 0] = widths
    if int(counts.max()) < 0x80:  # every count one varint byte: fixed-size buckets
        rows[:, 1] = 20
        rows[:, 21] = counts
        return rows.tobytes()
    counts = counts.astype(np.uint64)
    sizes = np.ones(n, dtype=np.intp)  # bytes of each count's varint
    rest = counts >> np.uint64(7)
    while rest.any():
        sizes += rest != 0
        rest >>= np.uint64(7)
    width = int(sizes.max())
    rows = np.concatenate([rows[:, :21], np.empty((n, width), dtype=np.uint8)], axis=1)
    rows[:, 1] = 19 + sizes  # the bucket's length: always below 128, one byte
    value = counts
    for i in range(width):
        more = (sizes > i + 1).astype(np.uint8) << 7
        rows[:, 21 + i] = (value & np.uint64(0x7F)).astype(np.uint8) | more
        value = value >> np.uint64(7)
    keep = np.arange(21 + width) < (21 + sizes)[:, None]
    return rows[keep].tobytes()


#: A bucket field's fixed bytes: field 1 (length-delimited), its length (set per bucket),
#: ``left`` (double, field 1), 8 bytes, ``width`` (double, field 2), 8 bytes, ``count`` (varint).
_BUCKET_HEAD = np.frombuffer(b"\x0a\x00\x09" + bytes(8) + b"\x11" + bytes(8) + b"\x18", np.uint8)


def histogram_value(tag: str, histogram: bytes) -> bytes:
    return tag_field(tag) + field_bytes(9, histogram)


def landscape_value(tag: str, landscape: bytes) -> bytes:
    return tag_field(tag) + field_bytes(10, landscape)


# -- reading (validation of user-supplied graphs) --------------------------------------------


def fields(data: bytes) -> list[tuple[int, int, Any]]:
    """Split one message into (number, wire type, value); raises ValueError if malformed."""
    out = []
    pos, end = 0, len(data)
    value: Any
    while pos < end:
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, pos = read_varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        elif wire == 2:
            n, pos = read_varint(data, pos)
            value, pos = data[pos : pos + n], pos + n
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > end:
            raise ValueError("truncated message")
        out.append((number, wire, value))
    return out


def model_graph(model: bytes) -> bytes:
    """The serialized ``GraphProto`` (field 4) of a serialized anf_ir ``ModelProto``.

    Checks the ModelProto's own fields (ir_version 1, domain 2, model_version 3 varint or
    string; graph 4 and metadata_operators 5 messages) and that the graph parses.
    """
    expected = {1: 0, 2: 2, 3: 0, 4: 2, 5: 2}
    graph = b""
    for number, wire, value in fields(model):
        if number in expected and expected[number] != wire:
            raise ValueError(f"ModelProto field {number} has wire type {wire}")
        if number == 4:
            fields(value)
            graph += value  # repeated occurrences of a message field merge
    return graph
