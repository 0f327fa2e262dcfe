"""The ``parquet`` sink's export: rows as one Parquet file, a row group per file read.

The scalar table has the schema ``run: string, tag: string, step: int64, wall_time: double,
value: double``. Another kind's columns are the first rows' (a field that appears later is left
out, with a note), typed as pyarrow infers them from the cells :func:`binary_cell` gives: bytes
binary, NumPy arrays ``.npy`` bytes, lists lists, dicts their JSON text. A column whose type
changes between files stops the export with a ``ValueError`` that names another format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, BinaryIO

from tallyboard.extras import require
from tallyboard.plugin.tables import TableExport, TableOptions, binary_cell

#: the arrow type of a column declared with a Python type (TableOptions.types)
_ARROW_TYPES = {str: "string", int: "int64", float: "float64"}


class ParquetTable:
    """One ``pyarrow.parquet.ParquetWriter`` on the export's file, opened at the first write
    (its schema: the declared one, else the first rows')."""

    def __init__(self, file: BinaryIO, options: TableOptions) -> None:
        self._pa = require("pyarrow", "read", "tallyboard export --format parquet")
        self._pq = require("pyarrow.parquet", "read", "tallyboard export --format parquet")
        self._file = file
        self._schema: Any = None
        if options.columns is not None and options.types is not None:
            pa = self._pa
            self._schema = pa.schema(
                [
                    (c, getattr(pa, _ARROW_TYPES[t])())
                    for c, t in zip(options.columns, options.types)
                ]
            )
        self._writer: Any = None

    def write(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Write ``rows`` as one row group.

        Raises:
            ValueError: A column's cells are not of the schema's type (a column that changes
                type between files).
        """
        pa = self._pa
        data = {k: [row[i] for row in rows] for i, k in enumerate(columns)}
        try:
            table = pa.table(data, schema=self._schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise ValueError(
                f"a column changes type between files ({exc}); export as jsonl or csv instead"
            ) from None
        if self._writer is None:
            self._schema = table.schema
            self._writer = self._pq.ParquetWriter(self._file, self._schema)
        self._writer.write_table(table)

    def close(self) -> None:
        """Write the footer (an empty table of the declared schema when no row came)."""
        if self._writer is None:
            schema = self._schema if self._schema is not None else self._pa.schema([])
            self._pq.write_table(schema.empty_table(), self._file)
        else:
            self._writer.close()


EXPORT = TableExport(formats=("parquet",), open=ParquetTable, cell=binary_cell, fixed_columns=True)
