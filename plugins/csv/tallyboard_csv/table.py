"""The ``csv`` sink as an export target: ``tallyboard export -o out.csv`` writes one header
line (the columns) and one line per row, lists and bytes as their text (:func:`text_cell`)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any, BinaryIO

from tallyboard.plugin.tables import TableExport, TableOptions, text_cell


class CsvTable:
    """Rows as CSV lines (``\\n`` ends each), UTF-8; the header comes first, from the columns
    known at open or, for a kind whose rows name them, from the first write."""

    def __init__(self, file: BinaryIO, options: TableOptions) -> None:
        self._file = file
        self._header = options.columns is not None
        if options.columns is not None:
            self._lines([options.columns])

    def write(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Write the header first if it is not there yet, then ``rows``."""
        if not self._header:
            self._header = True
            self._lines([columns])
        self._lines(rows)

    def _lines(self, rows: Any) -> None:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        self._file.write(buf.getvalue().encode())

    def close(self) -> None:
        """Nothing is held back: every write went to the file."""


EXPORT = TableExport(formats=("csv",), open=CsvTable, cell=text_cell, fixed_columns=True)
