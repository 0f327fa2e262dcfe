"""Scalars as TensorBoard ``Event`` bytes: hand-packed for plain scalars (the hot path).

:func:`encode` packs one record; :func:`encode_batch` (``encode.batch``) frames many at once on
the writer thread, column by column with NumPy: the caller only queues ``(tag, step, wall_time,
value)`` and the bytes are built, and their CRCs computed, for thousands of records per call.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from tallyboard.records.framing import frame, frame_fixed, in_call_order, varint_columns
from tallyboard.records.rows import columns
from tallyboard.records.wire import float32, varint, wall_step
from tallyboard_tfevents.encoding import summary_event

from .methods import TensorScalar

_pack_head = struct.Struct("<Bd").pack
_pack_f = struct.Struct("<f").pack
_suffixes: dict[str, bytes] = {}


def _suffix(tag: str) -> bytes:
    """Everything after wall_time and step, up to the float: the same bytes for every step."""
    tag_bytes = tag.encode("utf-8")
    value_len = 1 + len(varint(len(tag_bytes))) + len(tag_bytes) + 5
    summary_len = 1 + len(varint(value_len)) + value_len
    out = (
        b"\x2a"
        + varint(summary_len)
        + b"\x0a"
        + varint(value_len)
        + b"\x0a"
        + varint(len(tag_bytes))
        + tag_bytes
        + b"\x15"
    )
    if len(_suffixes) < 100_000:
        _suffixes[tag] = out
    return out


def encode(tag: str, step: int | None, wall_time: float, value: object) -> bytes:
    """One ``Event`` with ``Summary.Value(tag, simple_value)``, or a rank-0 tensor (new style)."""
    if type(value) is float:
        try:
            tail = (_suffixes.get(tag) or _suffix(tag)) + _pack_f(value)
        except OverflowError:
            tail = _suffixes[tag] + float32(value)
        if not step:  # None, or 0 which proto3 leaves out
            return _pack_head(9, wall_time) + tail
        return wall_step(wall_time, step) + tail
    assert isinstance(value, TensorScalar)
    from tallyboard_tfevents.proto import DT_DOUBLE, DT_FLOAT, SummaryValue, TensorProto, metadata

    if value.double_precision:
        tensor = TensorProto(dtype=DT_DOUBLE, double_val=[value.value])
    else:
        tensor = TensorProto(dtype=DT_FLOAT, float_val=[value.value])
    return summary_event(
        step, wall_time, [SummaryValue(tag=tag, tensor=tensor, metadata=metadata("scalars"))]
    )


# Records per batch below which packing them one by one is cheaper than NumPy's fixed costs.
_MIN_BATCH = 48
# Steps at or above _WIDTHS[k] need more than k bytes as a varint (negative ones: all ten).
_WIDTHS = [1 << (7 * k) for k in range(10)]


def encode_batch(rows: Sequence[tuple[Any, str, int | None, float, object]]) -> bytes:
    """Framed records for ``rows`` of ``(key, tag, step, wall_time, value)``, in order.

    ``key`` is ``tallyboard.records.recordfile.row_key(encode_batch)`` (the writer queues such rows for a
    sink with ``write_row``). The result is byte for byte what :func:`encode` and
    :func:`tallyboard.records.framing.frame` give one record at a time. Records are grouped by layout
    (tag, and how many bytes the step takes), each group packed and framed as one array (tags
    in a fixed rotation as column blocks of one array), and put back in call order.
    """
    n = len(rows)
    if n < _MIN_BATCH:
        return _one_by_one(rows)
    import numpy as np

    _, tags, steps, walls, values = columns(rows)
    try:
        with np.errstate(over="ignore"):  # beyond float32: +-inf, as encode() writes them
            value = np.array(values, dtype=np.float32)
    except TypeError:  # tensor-style scalars among them
        return _one_by_one(rows)
    wall = np.array(walls, dtype=np.float64)
    try:
        step = np.array(steps, dtype=np.int64)
    except TypeError:  # None among them: written as 0 is, with no step field
        step = np.array([s or 0 for s in steps], dtype=np.int64)
    ustep = step.view(np.uint64)
    bounds = np.array(_WIDTHS, dtype=np.uint64)
    low, high = np.searchsorted(bounds, [ustep.min(), ustep.max()], side="right")
    first = tags[0]
    if low == high:
        if tags.count(first) == n:  # one layout: one array
            return _group(first, int(low), wall, ustep, value).tobytes()
        period = tags.index(first, 1) if first in tags[1:] else n
        cycles = n // period
        m = cycles * period
        if (
            cycles > 1
            and tags[: m - period] == tags[period:m]
            and len(set(tags[:period])) == period
        ):
            # tags in a fixed rotation (loss, lr, acc, loss, lr, acc, ...): one array per tag,
            # interleaved as column blocks of one array with a row per rotation
            parts = [
                _group(tags[j], int(low), wall[j:m:period], ustep[j:m:period], value[j:m:period])
                for j in range(period)
            ]
            out = np.empty((cycles, sum(part.shape[1] for part in parts)), dtype=np.uint8)
            at = 0
            for part in parts:
                out[:, at : at + part.shape[1]] = part
                at += part.shape[1]
            return out.tobytes() + (encode_batch(rows[m:]) if m < n else b"")
    width = np.searchsorted(bounds, ustep, side="right")
    return in_call_order(
        list(zip(tags, width.tolist())),
        lambda key, idx: _group(key[0], key[1], wall[idx], ustep[idx], value[idx]),
    )


def _one_by_one(rows: Sequence[tuple[Any, ...]]) -> bytes:
    return b"".join([frame(encode(*row[1:])) for row in rows])


def _group(tag: str, width: int, wall: Any, ustep: Any, value: Any) -> Any:
    """Framed records of one tag whose steps all take ``width`` varint bytes (0: no step)."""

    suffix = _suffixes.get(tag) or _suffix(tag)
    fields: list[tuple[int, Any]] = [(1, wall)]
    head = b"\x09" + bytes(8)
    if width:
        fields.append((10, varint_columns(ustep, width)))
        head += b"\x10" + bytes(width)
    fields.append((len(head) + len(suffix), value))
    return frame_fixed(head + suffix + bytes(4), fields)


encode.batch = encode_batch  # type: ignore[attr-defined]


#: dtype code -> struct format of one packed number, and the repeated field holding it.
_ONE = {
    1: (struct.Struct("<f"), "float_val"),
    2: (struct.Struct("<d"), "double_val"),
    3: (struct.Struct("<i"), "int_val"),
    4: (struct.Struct("<B"), "int_val"),
    5: (struct.Struct("<h"), "int_val"),
    6: (struct.Struct("<b"), "int_val"),
    9: (struct.Struct("<q"), "int64_val"),
    10: (struct.Struct("<?"), "bool_val"),
    17: (struct.Struct("<H"), "int_val"),
    19: (struct.Struct("<e"), "half_val"),
    22: (struct.Struct("<I"), "uint32_val"),
    23: (struct.Struct("<Q"), "uint64_val"),
}
_BFLOAT16 = 14


def decode(value: object, step: int, wall_time: float) -> float | None:
    """A tensor-style scalar (plugin ``scalars``: TF2 ``tf.summary.scalar`` in
    ``tensor_content``, torch's ``new_style`` in ``float_val`` or ``double_val``) as the kind's
    payload: one float, which readers put in their scalar columns (no row, no object per value).

    Read field by field, not through numpy: TF2 logs hold every scalar in this form.
    """
    meta = getattr(value, "metadata", None)
    if meta is None or meta.plugin_data.plugin_name != "scalars":
        return None
    if not value.HasField("tensor"):  # type: ignore[attr-defined]
        return None
    tensor = value.tensor  # type: ignore[attr-defined]
    dims = tensor.tensor_shape.dim
    if len(dims) and any(dim.size != 1 for dim in dims):  # TF2 scalars have no dims
        return None
    code = tensor.dtype
    if code == _BFLOAT16:  # the high half of a float32
        content = tensor.tensor_content
        bits = _unpack_h(content)[0] if len(content) == 2 else (list(tensor.half_val) or [None])[0]
        return None if bits is None else float(_unpack_f(_pack_i(bits << 16))[0])
    one = _ONE.get(code)
    if one is None:
        return None
    packed, field = one
    content = tensor.tensor_content
    if content:
        return float(packed.unpack(content)[0]) if len(content) == packed.size else None
    values = getattr(tensor, field)
    if len(values) != 1:
        return None
    if field == "half_val":  # float16 bits
        return float(packed.unpack(_pack_h(values[0]))[0])
    return float(values[0])


_unpack_h = struct.Struct("<H").unpack
_pack_h = struct.Struct("<H").pack
_pack_i = struct.Struct("<I").pack
_unpack_f = struct.Struct("<f").unpack
