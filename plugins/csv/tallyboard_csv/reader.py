"""Reading the ``csv`` sink's files back: ``scalars.csv`` into a :class:`~tallyboard.plugin.readers.Batch`.

The file is read in chunks (:class:`tallyboard.plugin.readers.ChunkedFileReader`), so memory holds one
chunk, not the file; the
reader keeps its byte offset, so ``read_new`` called again returns only rows appended since. A
last line without its newline is a row still being written: it is left for the next read. A
malformed row is reported (:class:`~tallyboard.plugin.readers.ReadWarning`, naming the file and the
byte offset of the row) and skipped; a file whose first line is not the sink's header is
reported once and not read. A quote can open a line break only where a quoted tag starts: a
stray one elsewhere is damage in its row only. A line longer than :data:`MAX_ROW` is reported
and skipped up to its end, so memory never holds more than a chunk and one row. An empty ``step`` (none given) reads as 0, as an event file's does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tallyboard.plugin.readers import Batch, ChunkedFileReader, warn_corrupt

from . import FILE_STEM, HEADER

#: ``scalars.csv``, ``scalars.1.csv`` ... and the part objects of a remote file.
_NAME = re.compile(rf"{FILE_STEM}(\.\d+)?\.csv(\.part\d+)?")
_HEADER = HEADER.encode()
#: the longest row a quoted line break may make; an unclosed quote beyond it is damage.
MAX_QUOTED = 4096
#: the longest line read whole: a longer one is damage, reported and skipped up to its end.
MAX_ROW = 1 << 20


def matches(basename: str) -> bool:
    """The files the csv sink writes: ``scalars.csv``, ``scalars.<n>.csv`` (and remote parts)."""
    return _NAME.fullmatch(basename) is not None


class CsvFileReader(ChunkedFileReader):
    """One ``scalars.csv``; :meth:`read_new` returns the rows appended since the previous call."""

    #: the longest row; a longer line (no row the sink writes) is reported and skipped.
    max_unit = MAX_ROW
    unit_end = b"\n"

    def __init__(self, fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> None:
        super().__init__(fs, path)
        # a remote part after the first starts with rows, not the header
        self._header_seen = ".part" in path.rsplit("/", 1)[-1]

    def _scan(self, data: bytes, batch: Batch) -> int:
        used = 0
        if not self._header_seen and b"\n" in data:  # the header line alone first
            used = self._rows(data[: data.index(b"\n") + 1], batch)
            if self.dead:
                return used
            data = data[used:]
        self.offset += used  # warnings name offsets from the start of what is left ...
        try:
            n = self._bulk(data, batch) if self._header_seen else 0
            return used + (n or self._rows(data, batch))
        finally:
            self.offset -= used  # ... and read_new adds all that was used

    def _bulk(self, data: bytes, batch: Batch) -> int:
        """Decode the whole rows of ``data`` at once with numpy when every one is a plain row
        (four fields, no quote); returns the bytes consumed, 0 to leave them to :meth:`_rows`."""
        import numpy as np

        cut = data.rfind(b"\n") + 1
        body = data[: cut - 1]
        if cut < 2 or b'"' in body or b"\r" in body or b"\x00" in body:
            return 0
        rows = body.count(b"\n") + 1
        fields = body.replace(b"\n", b",").split(b",")
        if len(fields) != 4 * rows:
            return 0  # some row has too few or too many fields: found and reported row by row
        m = np.array(fields).reshape(rows, 4)
        del fields
        step_text = m[:, 1]
        step_text[step_text == b""] = b"0"
        try:
            wall = m[:, 0].astype(np.float64)
            step = step_text.astype(np.int64)
            value = m[:, 3].astype(np.float64)
        except (ValueError, OverflowError):
            return 0
        names, codes = np.unique(m[:, 2], return_inverse=True)
        batch.flush_lists()  # rows decoded one by one before these keep their place
        batch.columns.append(
            (
                [bytes(t).decode("utf-8", "replace") for t in names],
                codes.astype(np.int32).ravel(),
                step,
                wall,
                value,
            )
        )
        return cut

    def _rows(self, data: bytes, batch: Batch) -> int:
        """Decode the whole rows of ``data`` into ``batch``; returns the bytes consumed."""
        tags, steps, walls, values = batch.tags, batch.steps, batch.wall_times, batch.values
        tag_of: dict[bytes, str] = {}
        lines = data.split(b"\n")
        lines.pop()  # the piece after the last newline: a row still being written
        pos, i, n = 0, 0, len(lines)
        while i < n:
            line = lines[i]
            start = pos
            if b'"' in line and line.count(b'"') % 2:  # a quoted line break: join the rows
                j = i + 1
                if _OPENS_TAG.match(line):  # elsewhere a lone quote is damage in this line
                    while j < n and line.count(b'"') % 2 and len(line) <= MAX_QUOTED:
                        line += b"\n" + lines[j]
                        j += 1
                if line.count(b'"') % 2:
                    if len(line) <= MAX_QUOTED and j > i + 1 and j == n:
                        if not any(_is_row(x) for x in lines[i + 1 : j]):
                            return start  # the closing quote is still being written
                    elif j == i + 1 == n and _OPENS_TAG.match(line):
                        return start  # the last row, its tag still being written
                    line, j = lines[i], i + 1  # an unclosed quote: damage in this line only
                i = j
            else:
                i += 1
            pos = start + len(line) + 1
            if not self._header_seen:
                self._header_seen = True
                if line.rstrip(b"\r") + b"\n" != _HEADER:
                    warn_corrupt(
                        self.path,
                        self.offset + start,
                        f"not a tallyboard scalars CSV (header {line[:80]!r}, expected "
                        f"{_HEADER.strip()!r}); file skipped",
                    )
                    self.dead = True
                    return pos
                continue
            try:
                wall, step, raw_tag, value = _row(line.rstrip(b"\r"))
            except ValueError as exc:
                warn_corrupt(
                    self.path, self.offset + start, f"malformed CSV row ({exc}); row skipped"
                )
                continue
            tag = tag_of.get(raw_tag)
            if tag is None:
                tag = tag_of[raw_tag] = raw_tag.decode("utf-8", "replace")
            tags.append(tag)
            steps.append(step)
            walls.append(wall)
            values.append(value)
        return pos


#: the start of a row whose tag is quoted: only there may a quote open a line break.
_OPENS_TAG = re.compile(rb'[^,"\n]*,[^,"\n]*,"')


def _row(line: bytes) -> tuple[float, int, bytes, float]:
    """``(wall_time, step, raw tag, value)`` of one row (no line end); ValueError if malformed."""
    if b'"' not in line:
        parts = line.split(b",")
        raw_tag = parts[2] if len(parts) == 4 else None
    else:
        parts, raw_tag = _quoted(line)
    if raw_tag is None:
        raise ValueError("expected 4 fields")
    wall = float(parts[0])
    step = int(parts[1]) if parts[1] else 0
    value = float(parts[3])
    if not -(1 << 63) <= step < 1 << 63:
        raise ValueError("step out of int64 range")
    return wall, step, raw_tag, value


def _is_row(line: bytes) -> bool:
    """Whether ``line`` is a whole row on its own (so no part of a quoted tag before it)."""
    try:
        _row(line.rstrip(b"\r"))
    except ValueError:
        return False
    return True


def _quoted(line: bytes) -> tuple[list[bytes], bytes | None]:
    """A row whose tag is quoted: ``wall,step,"t,a""g",value``; ``(fields, tag)`` or a None tag."""
    first = line.split(b",", 2)
    last = line.rsplit(b",", 1)
    if len(first) != 3 or len(last) != 2:
        return [], None
    field = first[2][: len(first[2]) - len(last[1]) - 1]
    if len(field) < 2 or field[:1] != b'"' or field[-1:] != b'"':
        return [], None
    inner = field[1:-1]
    if inner.replace(b'""', b"").count(b'"'):
        return [], None
    return [first[0], first[1], field, last[1]], inner.replace(b'""', b'"')


def open_reader(fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> CsvFileReader:
    return CsvFileReader(fs, path, decoders)
