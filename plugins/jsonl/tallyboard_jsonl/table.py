"""The ``jsonl`` sink as an export target: ``tallyboard export -o out.jsonl`` writes one JSON
object a line, the row ``read`` gives with every field it has (:func:`json_cell`: lists stay
lists, bytes are base64)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, BinaryIO

from tallyboard.plugin.tables import TableExport, TableOptions, json_cell, json_default


class JsonlTable:
    """Each row as ``{"column": cell, ...}`` on its own line, UTF-8."""

    def __init__(self, file: BinaryIO, options: TableOptions) -> None:
        self._file = file
        self._encode = json.JSONEncoder(default=json_default).encode  # one, not one a row

    def write(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Write ``rows``, one line each (non-finite numbers as ``NaN``/``Infinity``)."""
        keys, encode = list(columns), self._encode
        self._file.write("".join(encode(dict(zip(keys, row))) + "\n" for row in rows).encode())

    def close(self) -> None:
        """Nothing is held back: every write went to the file."""


EXPORT = TableExport(formats=("jsonl",), open=JsonlTable, cell=json_cell, fixed_columns=False)
