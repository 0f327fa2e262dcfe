"""Reading the ``jsonl`` sink's files back: ``records.jsonl`` into a :class:`~tallyboard.plugin.readers.Batch`.

The file is read in chunks (:class:`tallyboard.plugin.readers.ChunkedFileReader`), so memory holds one
chunk, not the file; the
reader keeps its byte offset, so ``read_new`` called again returns only lines appended since. A
last line without its newline is a record still being written: it is left for the next read. A
malformed line is reported (:class:`~tallyboard.plugin.readers.ReadWarning`, naming the file and the
byte offset of the line) and skipped, brackets nested too deep for the parser included; a line
longer than :data:`MAX_LINE` is reported and skipped up to its end.

Scalars go to the batch's scalar columns (a ``null`` step reads as 0, as an event file's does).
Every other line goes to the decoder registered for ``("jsonl", kind)``, called as
``decode(value, step, wall_time)`` with the line's ``value`` in which each side-file reference
(``{"path": "blobs/...", "content_type": ..., "bytes": ...}``) is replaced by a
:class:`SideFile` holding the file's path and bytes (``data`` None when the file is missing,
which is reported); it returns the row's fields or None. A decoder that fails on a line (a
missing field: ``KeyError``, ``TypeError``, ``ValueError``) reports it and the line is skipped.
A kind with no decoder is read as ``{"value": <the JSON value as written>}``.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tallyboard.plugin.readers import Batch, ChunkedFileReader, warn_corrupt

from . import BLOB_DIR, FILE_STEM

#: ``records.jsonl``, ``records.1.jsonl`` ... and the part objects of a remote file.
_NAME = re.compile(rf"{FILE_STEM}(\.\d+)?\.jsonl(\.part\d+)?")
#: what a side-file reference looks like (the sink names them ``blobs/<counter><suffix>``).
_BLOB_PATH = re.compile(rf"{BLOB_DIR}/[0-9A-Za-z_-]+(\.[0-9A-Za-z]+)?")
_BLOB_KEYS = {"path", "content_type", "bytes"}
_FIELDS = ("wall_time", "step", "tag", "kind", "value")
#: between a scalar line's tag and its value, as the sink writes it.
_SCALAR_MID = b'","kind":"scalar","value":'
#: the longest line read whole (side files hold images and audio; a line holds numbers and text).
MAX_LINE = 64 << 20


def matches(basename: str) -> bool:
    """The files the jsonl sink writes: ``records.jsonl``, ``records.<n>.jsonl`` (and remote parts)."""
    return _NAME.fullmatch(basename) is not None


@dataclass(frozen=True)
class SideFile:
    """A side file (image, audio ...) a line refers to, read back: ``data`` None if missing."""

    path: str
    content_type: str
    data: bytes | None


def _side_file(value: Any) -> tuple[bytes | None, str | None, str | None]:
    """``(data, content_type, path)`` of a side file read back (all None when there is none)."""
    if isinstance(value, SideFile):
        return value.data, value.content_type, value.path
    return None, None, None


class JsonlFileReader(ChunkedFileReader):
    """One ``records.jsonl``; :meth:`read_new` returns the records appended since the last call."""

    #: the longest line read whole; a longer one is reported and skipped up to its end.
    max_unit = MAX_LINE
    unit_end = b"\n"

    def __init__(self, fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> None:
        super().__init__(fs, path)
        self.decoders = decoders
        self.dir = path.rsplit("/", 1)[0] if "/" in path else ""
        #: side files on a local disk are checked to be regular files (only there can be FIFOs),
        #: sparing a remote store a request per side file.
        self._local = "file" in getattr(fs, "protocol", ())

    def _scan(self, data: bytes, batch: Batch) -> int:
        used = data.rfind(b"\n") + 1  # a last line without its newline is left
        if used:
            self._lines(data, used, batch)
        return used

    def _lines(self, data: bytes, used: int, batch: Batch) -> None:
        tags, steps, walls, values = batch.tags, batch.steps, batch.wall_times, batch.values
        loads = json.loads
        tag_of: dict[bytes, str] = {}
        pos = 0
        while pos < used:
            stop = data.index(b"\n", pos)
            line, start, pos = data[pos:stop], pos, stop + 1
            if line[:13] == b'{"wall_time":':  # the sink's own scalar line, parsed by hand
                a = line.find(b',"step":', 13)
                b = line.find(b',"tag":"', a)
                c = line.find(_SCALAR_MID, b)
                if 0 < a < b < c and line[-1:] == b"}" and b"\\" not in line[b:c]:
                    try:
                        wall = float(line[13:a])
                        raw = line[a + 8 : b]
                        step = 0 if raw == b"null" else int(raw)
                        value = float(line[c + len(_SCALAR_MID) : -1])
                    except ValueError:
                        pass  # the JSON parser below says what is wrong
                    else:
                        if -(1 << 63) <= step < 1 << 63:
                            raw = line[b + 8 : c]
                            tag = tag_of.get(raw)
                            if tag is None:
                                tag = tag_of[raw] = raw.decode("utf-8", "replace")
                            tags.append(tag)
                            steps.append(step)
                            walls.append(wall)
                            values.append(value)
                            continue
            try:
                rec = loads(line)
                if type(rec) is not dict:
                    raise ValueError("not a JSON object")
                wall, step, tag, kind, value = (rec[k] for k in _FIELDS)
                if step is None:
                    step = 0
                if type(step) is not int or not -(1 << 63) <= step < 1 << 63:
                    raise ValueError(f"step {step!r} is not an int64")
                if type(tag) is not str or type(kind) is not str:
                    raise ValueError("tag and kind must be strings")
                wall = float(wall)
            except (ValueError, KeyError, TypeError, RecursionError) as exc:
                # JSONDecodeError is a ValueError; RecursionError: brackets nested too deep
                what = f"KeyError {exc}" if isinstance(exc, KeyError) else str(exc)
                warn_corrupt(
                    self.path, self.offset + start, f"malformed JSON line ({what}); line skipped"
                )
                continue
            if kind == "scalar":
                if type(value) is float or type(value) is int:
                    tags.append(tag)
                    steps.append(step)
                    walls.append(wall)
                    values.append(float(value))
                else:
                    warn_corrupt(
                        self.path,
                        self.offset + start,
                        f"scalar value {value!r} is not a number; line skipped",
                    )
                continue
            decode = self.decoders.get(kind)
            if decode is None:
                row = {"value": value}
            else:
                try:
                    row = decode(self._blobs(value, start), step, wall)
                except (KeyError, TypeError, ValueError, RecursionError) as exc:
                    warn_corrupt(
                        self.path,
                        self.offset + start,
                        f"{kind} value not readable ({type(exc).__name__}: {exc}); line skipped",
                    )
                    continue
                if row is None:  # the decoder does not take it: counted, not dropped
                    batch.undecoded[(kind, tag)] = batch.undecoded.get((kind, tag), 0) + 1
                    continue
            batch.add_row(kind, {"tag": tag, "step": step, "wall_time": wall, **row})

    def _blobs(self, value: Any, start: int) -> Any:
        """``value`` with each side-file reference replaced by a :class:`SideFile`."""
        if isinstance(value, list):
            return [self._blobs(v, start) for v in value]
        if not isinstance(value, dict):
            return value
        if value.keys() == _BLOB_KEYS and isinstance(value["path"], str):
            rel = value["path"]
            if _BLOB_PATH.fullmatch(rel):  # never a path outside the run's blobs/
                full = f"{self.dir}/{rel}" if self.dir else rel
                data: bytes | None = None
                try:
                    if self._local and not stat.S_ISREG(os.stat(full).st_mode):
                        raise IsADirectoryError("not a regular file")  # a FIFO would block
                    data = bytes(self.fs.cat_file(full))
                except FileNotFoundError:
                    warn_corrupt(self.path, self.offset + start, f"side file {rel} is missing")
                except OSError as exc:
                    warn_corrupt(
                        self.path, self.offset + start, f"side file {rel} cannot be read ({exc})"
                    )
                return SideFile(full, str(value["content_type"]), data)
        return {k: self._blobs(v, start) for k, v in value.items()}


def decode_text(value: Any, step: int, wall_time: float) -> Any:
    """The text kind's payload of a line: its string, or a table written as nested lists of
    strings as a read-only numpy array of str (the tag has no ``/text_summary``)."""
    import numpy as np

    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return None
    strings = np.array(value, dtype=object)
    if strings.dtype != object or not all(isinstance(s, str) for s in strings.reshape(-1)):
        return None  # not a rectangular table of strings
    from tallyboard_text import table_of

    return table_of(strings.reshape(-1).tolist(), strings.shape)


def decode_histogram(value: Any, step: int, wall_time: float) -> Any:
    """The histogram kind's payload (a ``tallyboard_histogram.compute.Histogram``) of a line
    holding its row (``ROW_FIELDS``, as the generic row encoder writes it); lines written
    before the kind's names were used (``bucket_limits``, ``bucket_counts``) read the same."""
    if not isinstance(value, dict):
        return None
    from tallyboard_histogram.compute import from_row

    if "bucket_limit" not in value and "bucket_limits" in value:
        value = {**value, "bucket_limit": value["bucket_limits"], "bucket": value["bucket_counts"]}
    return from_row(value)


def decode_image(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """The tfevents image columns (width, height, colorspace, data: the PNG/GIF bytes) plus
    ``path``, the side file's path."""
    if not isinstance(value, dict):
        return None
    data, _, path = _side_file(value.get("file"))
    return {
        "width": int(value["width"]),
        "height": int(value["height"]),
        "colorspace": int(value["channels"]),
        "data": data,
        "sample": 0,
        "path": path,
    }


def decode_audio(value: Any, step: int, wall_time: float) -> Any:
    """The audio kind's payload of a line: an ``EncodedAudio`` of the side file's bytes and
    the line's facts, with ``path``, the side file's path. A clip whose side file is missing
    stays a row (its ``data`` None): there is nothing to rebuild."""
    if not isinstance(value, dict):
        return None
    data, content_type, path = _side_file(value.get("file"))
    facts = (float(value["sample_rate"]), int(value["num_channels"]), int(value["length_frames"]))
    if data is None:
        return dict(zip(("sample_rate", "num_channels", "length"), facts)) | {
            "content_type": content_type,
            "data": None,
            "label": "",
            "sample": 0,
            "path": path,
        }
    from tallyboard_audio.encoded import EncodedAudio

    return EncodedAudio(data, content_type or "", *facts, path=path)


def decode_row(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """A line of any kind that declares its row (``Kind.to_row``): the row's fields as the line
    holds them, side files as their bytes."""
    if not isinstance(value, dict):
        return None
    return {k: v.data if isinstance(v, SideFile) else v for k, v in value.items()}


decode_row.rows = True  # type: ignore[attr-defined]  # every kind with a row, not only one


#: decoders of the kinds this plugin's sink encodes itself (scalars need none: they are columns).
BUILTIN_DECODERS = {
    "text": decode_text,
    "histogram": decode_histogram,
    "image": decode_image,
    "audio": decode_audio,
}


def open_reader(fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> JsonlFileReader:
    return JsonlFileReader(fs, path, decoders)
