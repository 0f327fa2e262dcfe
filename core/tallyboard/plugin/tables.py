"""How a sink becomes a target of ``tallyboard export``: the rows read, as one table in one file.

A sink plugin declares :class:`TableExport` beside its writer road,
``SinkSpec(..., export=TableExport(formats=("csv",), open=..., cell=text_cell))``: the format
names it exports to (also the file suffixes ``-o out.csv`` is told by), how it opens a
:class:`TableWriter` on the output file, and the cell form a decoded field takes there.
``tallyboard export`` finds the sink that claims the suffix or ``--format`` among the installed
sinks, reads the runs one file at a time and hands each file's rows to that writer: core names
no format.

The cell forms are shared here, by what they are rather than by a format's name:
:func:`text_cell` (a flat text table), :func:`json_cell` (JSON data), :func:`binary_cell` (a
table with binary and list columns, as ``tallyboard export --dataset`` writes too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol


@dataclass(frozen=True)
class TableOptions:
    """What an export target is told when its output file is opened.

    Attributes:
        kind: The kind exported (``"scalar"`` for the scalar table).
        columns: The columns, in order, when they are known before the first row (the scalar
            table's ``run, tag, step, wall_time, value``); None when the rows name them (every
            :meth:`TableWriter.write` gives its rows' columns).
        types: The Python type of each of :attr:`columns` (``str``, ``int``, ``float``) when
            known, for a format that declares a schema up front; None otherwise.
    """

    kind: str
    columns: tuple[str, ...] | None = None
    types: tuple[type, ...] | None = None


class TableWriter(Protocol):
    """An open export file: rows go in by :meth:`write`, :meth:`close` finishes the file.

    The export writes to a temporary file and puts it in place only after :meth:`close`; on an
    error (a ``ValueError`` from :meth:`write`, an interrupted read) the file is removed, so a
    writer never cleans up after itself.
    """

    def write(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Write ``rows``, each one cell per column of ``columns``, the cells in the form
        :attr:`TableExport.cell` gave (scalar rows hold plain ``str``, ``int`` and ``float``).

        With :attr:`TableExport.fixed_columns` every call gives the columns of the first;
        without, consecutive calls may give others (rows of one kind that differ in fields).

        Raises:
            ValueError: Rows the format cannot hold (a column that changes type between
                files); the export stops with this message and writes nothing.
        """
        ...

    def close(self) -> None:
        """Finish the file (a footer, buffered rows); called once, after the last write."""
        ...


def json_default(value: Any) -> Any:
    """``json.dumps``' ``default=`` for what decoded rows hold inside lists and dicts: complex
    numbers as ``[real, imag]``, NumPy numbers and arrays as numbers and lists, bytes as base64.

    Raises:
        TypeError: Any other type (as ``json.dumps`` does).
    """
    import base64

    import numpy as np

    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"cannot export a {type(value).__name__} value")


def json_cell(value: Any) -> Any:
    """A field as JSON data: bytes as base64 text, NumPy arrays as nested lists and NumPy
    numbers as numbers; lists and dicts as they are (``json.dumps(..., default=json_default)``
    takes what they hold)."""
    import base64

    import numpy as np

    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def text_cell(value: Any) -> Any:
    """A field as a flat cell: as :func:`json_cell`, and lists, tuples and dicts (arrays too) as
    their JSON text."""
    import json

    value = json_cell(value)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, default=json_default)
    return value


def binary_cell(value: Any) -> Any:
    """A field as a cell of a typed binary table: bytes as they are, NumPy arrays as ``.npy``
    bytes (``numpy.load(io.BytesIO(cell))`` gives the array back, dtype and shape included),
    NumPy numbers as numbers, dicts as their JSON text, lists as lists."""
    import io
    import json

    import numpy as np

    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, np.ndarray):
        out = io.BytesIO()
        np.save(out, value, allow_pickle=False)
        return out.getvalue()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return json.dumps(value, default=json_default)
    return value


@dataclass(frozen=True)
class TableExport:
    """What makes a sink an export target (:attr:`tallyboard.SinkSpec.export`).

    Attributes:
        formats: The format names the sink exports to, lowercase identifiers: ``--format``
            takes them, and an output whose suffix is one of them (``out.csv``) chooses the
            sink. Should two sinks claim one, the first by sink name writes it.
        open: Called as ``open(file, options)`` with the output opened for binary writing and
            a :class:`TableOptions`; returns the :class:`TableWriter`. Import heavy libraries
            here, not at module level.
        cell: How one decoded field becomes a cell: :func:`text_cell`, :func:`json_cell`,
            :func:`binary_cell` or a function of your own.
        fixed_columns: True when the first rows fix the columns of the file (a header, a
            schema): a field that appears later is left out, with one note naming a format
            that keeps every field. False when each row keeps its own fields.
    """

    formats: tuple[str, ...]
    open: Callable[[BinaryIO, TableOptions], TableWriter]
    cell: Callable[[Any], Any]
    fixed_columns: bool = True

    def __post_init__(self) -> None:
        if (
            not isinstance(self.formats, tuple)
            or not self.formats
            or not all(
                isinstance(f, str) and f.isidentifier() and f.islower() for f in self.formats
            )
        ):
            raise ValueError(
                "TableExport.formats must be a non-empty tuple of lowercase identifiers (file "
                f"suffixes without the dot, such as ('csv',)), got {self.formats!r}"
            )
        if not callable(self.open):
            raise TypeError(f"TableExport {self.formats!r}: open must be callable")
        if not callable(self.cell):
            raise TypeError(f"TableExport {self.formats!r}: cell must be callable")
        if not isinstance(self.fixed_columns, bool):
            raise TypeError(
                f"TableExport {self.formats!r}: fixed_columns must be a bool, "
                f"got {self.fixed_columns!r}"
            )
