"""The rows ``tallyboard export`` takes from each file read, and how they reach the export
target (:class:`tallyboard.plugin.tables.TableWriter`) a sink opened."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from tallyboard.plugin.kinds import PAYLOAD_KEY
from tallyboard.plugin.readers import Batch
from tallyboard.plugin.tables import TableExport, TableWriter
from tallyboard.reading.select import matcher, names_or_globs

SCALAR_COLUMNS = ("run", "tag", "step", "wall_time", "value")
SCALAR_TYPES = (str, str, int, float, float)


class TagFilter:
    """The tags ``--tags`` keeps (names or globs, matched as :func:`tallyboard.read` matches
    them), each tag's answer kept; and every tag it was asked about, to say what exists when
    it kept none."""

    def __init__(self, tags: Sequence[str] | None) -> None:
        self.asked = names_or_globs(tags, "tags") if tags else None
        self._match = matcher(self.asked)
        self.seen: dict[str, bool] = {}

    def __call__(self, tag: str) -> bool:
        keep = self.seen.get(tag)
        if keep is None:
            keep = self.seen[tag] = self.asked is None or self._match(tag)
        return keep

    def keep(self, tags: Iterable[str]) -> list[bool]:
        seen, match = self.seen, self
        return [seen[t] if t in seen else match(t) for t in tags]


def scalar_records(run: str, b: Batch, tags: TagFilter) -> list[tuple[Any, ...]]:
    """The scalars of one file that ``tags`` keeps, as rows of :data:`SCALAR_COLUMNS`."""
    tag, step, wall, value = b.scalars()
    keep = tags.keep(tag.tolist())
    if not all(keep):
        tag, step, wall, value = tag[keep], step[keep], wall[keep], value[keep]
    return list(zip([run] * len(tag), tag.tolist(), step.tolist(), wall.tolist(), value.tolist()))


def kind_rows(run: str, b: Batch, kind: Any, tags: TagFilter | None = None) -> list[dict[str, Any]]:
    """The decoded rows of ``kind`` in one file, shaped by the kind's ``read_table`` (applied to
    this file's rows and batch: memory stays one file's worth)."""
    rows = [  # the fields of each row, not the payload a decoder gave (Kind.to_row's row)
        {"run": run, **{k: v for k, v in row.items() if k != PAYLOAD_KEY}}
        for row in b.rows.get(kind.name, ())
        if tags is None or tags(row["tag"])
    ]
    if kind.read_table is not None and rows:
        rows = kind.read_table(rows, [(run, b)])
    return rows


class RowFeed:
    """Hands decoded rows to an export target, in the form its :class:`TableExport` declares:
    each field turned into its cell; with fixed columns, the first rows' columns kept (a field
    that appears later is left out, with one note naming ``keeps_all``, a format that keeps
    every field); without, each run of rows that share their fields in one write."""

    def __init__(self, writer: TableWriter, export: TableExport, keeps_all: str | None) -> None:
        self.writer, self.cell, self.fixed = writer, export.cell, export.fixed_columns
        self.keeps_all = keeps_all
        self.columns: list[str] | None = None
        self.dropped: set[str] = set()

    def write(self, rows: list[dict[str, Any]]) -> None:
        """Write one file's rows (at least one)."""
        cell = self.cell
        if not self.fixed:
            for keys, group in itertools.groupby(rows, key=tuple):
                self.writer.write(keys, [tuple(cell(row[k]) for k in keys) for row in group])
            return
        if self.columns is None:
            self.columns = list(rows[0])
        extra = {k for row in rows for k in row} - set(self.columns) - self.dropped
        if extra:
            self.dropped |= extra
            keep = f" (export as {self.keeps_all} to keep every field)" if self.keeps_all else ""
            print(
                f"tallyboard export: columns {sorted(extra)} appear after the first file and "
                f"are left out{keep}",
                file=sys.stderr,
            )
        columns = self.columns
        self.writer.write(columns, [[cell(row.get(k)) for k in columns] for row in rows])
