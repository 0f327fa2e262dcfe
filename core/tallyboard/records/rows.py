"""Rows queued for a batch encoder, and their fields as columns.

A :class:`tallyboard.records.recordfile.RecordFile` queues a row ``(key, tag, step, wall_time,
payload)`` as its five fields, one after the other. The writer thread hands a batch encoder the
rows it took as :class:`QueuedRows`: a sequence of those tuples that keeps the flat fields, so
that :func:`columns` gives each field of every row as one list (a slice of the fields) without
building a tuple per row first. An encoder that takes columns does less on the writer thread,
whose time holding the GIL the training loop's thread waits through.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

#: Fields of a row: ``(key, tag, step, wall_time, payload)``.
ROW_FIELDS = 5


class QueuedRows(Sequence[tuple[Any, ...]]):
    """Consecutive rows, kept as the flat list of fields they were queued as."""

    __slots__ = ("_fields",)

    def __init__(self, fields: list[Any]) -> None:
        if len(fields) % ROW_FIELDS:
            raise ValueError(f"QueuedRows: {len(fields)} fields are not whole rows of {ROW_FIELDS}")
        self._fields = fields

    def __len__(self) -> int:
        return len(self._fields) // ROW_FIELDS

    @overload
    def __getitem__(self, index: int) -> tuple[Any, ...]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[Any, ...]]: ...

    def __getitem__(self, index: int | slice) -> Any:
        n = len(self)
        if isinstance(index, slice):
            start, stop, step = index.indices(n)
            if step == 1:
                stop = max(start, stop)
                return QueuedRows(self._fields[start * ROW_FIELDS : stop * ROW_FIELDS])
            return [self[i] for i in range(start, stop, step)]
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"row {index} of {n}")
        return tuple(self._fields[i * ROW_FIELDS : (i + 1) * ROW_FIELDS])

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return zip(*[iter(self._fields)] * ROW_FIELDS)

    def column(self, field: int) -> list[Any]:
        """Field ``field`` (0 to 4) of every row, in order."""
        if not 0 <= field < ROW_FIELDS:
            raise IndexError(f"field {field}: a row has fields 0 to {ROW_FIELDS - 1}")
        return self._fields[field::ROW_FIELDS]


def columns(rows: Sequence[tuple[Any, ...]]) -> tuple[list[Any], ...]:
    """The five fields of ``rows`` as five lists: keys, tags, steps, wall times, payloads.

    Slices of the queue for :class:`QueuedRows`; any other sequence of 5-tuples works too."""
    if type(rows) is QueuedRows:
        return tuple(rows.column(field) for field in range(ROW_FIELDS))
    if not rows:
        return tuple([] for _ in range(ROW_FIELDS))
    return tuple(list(column) for column in zip(*rows, strict=True))
