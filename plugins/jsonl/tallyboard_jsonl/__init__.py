"""The ``jsonl`` sink: every kind that has a JSON form, one JSON object per line.

The file is ``<log_dir>/records.jsonl`` (``records.1.jsonl`` ... when the name is taken). Each
line is ``{"wall_time": ..., "step": ..., "tag": ..., "kind": ..., "value": ...}``; ``step`` is
``null`` when none was given and non-finite numbers are written as ``NaN``/``Infinity`` (what
Python's ``json`` and pandas read). Binary payloads (images, audio) are written as files under
``blobs/`` next to the JSONL file and referenced by relative path:
``"value": {"path": "blobs/00000001.png", "content_type": "image/png", ...}``.

An encoder for this sink returns a ``dict`` (the ``value`` field); values of type :class:`Blob`
inside it become side files. Built-in kinds taught here: scalar, text, image, audio (their lines
are not their rows: side files, a bare string); any other kind that declares its row
(``Kind.to_row``: histogram, a third-party one) is written as that row with no encoder of its own
(:func:`encode_row`) and read back by ``reader.decode_row`` (the histogram's decoder also reads
lines written under its older field names).

The plugin reads its files back too (``tallyboard.read``, ``tallyboard ls``), with a decoder per
kind registered for ``("jsonl", kind)``: see :mod:`tallyboard_jsonl.reader`; and it is the target
of ``tallyboard export -o out.jsonl`` (the rows read, one object a line, every field kept): see
:mod:`tallyboard_jsonl.table`.
"""

from __future__ import annotations

import functools
import itertools
import json
import threading
from dataclasses import dataclass
from typing import Any

from tallyboard import Deferred, SinkOptions, SinkSpec, hookimpl

SINK = "jsonl"
FILE_STEM = "records"
BLOB_DIR = "blobs"

_dumps = json.dumps


@dataclass(frozen=True)
class Blob:
    """Binary data an encoder wants stored in a side file; ``suffix`` such as ``".png"``."""

    data: bytes
    suffix: str = ".bin"
    content_type: str = "application/octet-stream"


class Line:
    """An encoded record waiting for the sink: its kind, the common fields and the value."""

    __slots__ = ("kind", "tag", "step", "wall_time", "value")

    def __init__(self, kind: str, tag: str, step: int | None, wall_time: float, value: Any) -> None:
        self.kind, self.tag, self.step, self.wall_time, self.value = (
            kind,
            tag,
            step,
            wall_time,
            value,
        )


def _encoder(kind: str, to_json: Any) -> Any:
    def encode(tag: str, step: int | None, wall_time: float, payload: Any) -> Line:
        return Line(kind, tag, step, wall_time, to_json(payload))

    encode.__name__ = f"encode_{kind}"
    return encode


def _scalar(value: Any) -> float:
    return value if type(value) is float else float(getattr(value, "value", value))


def _text(value: Any) -> Any:
    return value if isinstance(value, str) else value.tolist()  # a table: nested lists


def _image(payload: Any) -> dict[str, Any]:
    from tallyboard_image.encoded import EncodedImages, content_type, suffix

    if isinstance(payload, EncodedImages):  # read from a file: its bytes as they are
        if len(payload.images) != 1:
            raise ValueError(f"a JSONL line holds one image, got {len(payload.images)}")
        data = payload.images[0]
        blob = Blob(data, suffix(data), content_type(data) or "image/png")
        return {
            "file": blob,
            "height": payload.height,
            "width": payload.width,
            "channels": payload.colorspace,
        }
    from tallyboard_image.codec import encode

    img = encode(payload)
    return {
        "file": Blob(img.data, suffix(img.data), img.content_type),
        "height": img.height,
        "width": img.width,
        "channels": img.colorspace,
    }


def _audio(payload: Any) -> dict[str, Any]:
    from tallyboard_audio.codec import encode_wav

    return {
        "file": Blob(encode_wav(payload), ".wav", "audio/wav"),
        "sample_rate": float(payload.sample_rate),
        "num_channels": payload.num_channels,
        "length_frames": payload.length_frames,
    }


def _json_of(value: Any) -> Any:
    """A row field as JSON data: numpy arrays and numbers as lists and numbers, bytes as a
    side file (:class:`Blob`), dicts, lists and tuples field by field."""
    if isinstance(value, (bytes, bytearray)):
        return Blob(bytes(value))
    if isinstance(value, dict):
        return {str(k): _json_of(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_of(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    return _json_of(tolist()) if callable(tolist) else value


def encode_row(kind: str, tag: str, step: int | None, wall_time: float, row: Any) -> Line:
    """Any kind that declares ``Kind.to_row``: its row's fields as the line's value."""
    return Line(kind, tag, step, wall_time, _json_of(row))


encode_row.rows = True  # type: ignore[attr-defined]  # every kind with a row, not only one


BUILTIN_ENCODERS = {
    "scalar": _scalar,
    "text": _text,
    "image": _image,
    "audio": _audio,
}


class JsonlSink:
    """Appends one JSON object per record to ``records.jsonl``; blobs go to ``blobs/``."""

    def __init__(self, options: SinkOptions) -> None:
        from tallyboard import paths
        from tallyboard.records import storage

        self._paths, self._storage = paths, storage
        self.log_dir = options.log_dir
        self.path, handle = storage.create_unique(options.log_dir, FILE_STEM, ".jsonl")
        self._out = storage.BatchWriter(
            handle, max_lines=options.max_queue, flush_secs=options.flush_secs
        )
        self._blob_counter = itertools.count(1)
        self._blob_lock = threading.Lock()
        self._blob_dir_made = False
        self._tags: dict[str, str] = {}
        self.flush = self._out.flush
        self.close = self._out.close
        self.abandon = self._out.abandon

    def write(self, data: Line | Deferred) -> None:
        """Queue one encoded record as a JSON line. A number or a string is made into its line
        now; anything else (a :class:`Deferred` encode of a heavy kind or of a value still on a
        device, a value with side files) when its batch is written, in order, so no call waits
        for a device and side files are numbered in the order of the lines."""
        if type(data) is Line and (type(data.value) is float or type(data.value) is str):
            self._out.write(self._line(data))
        else:
            self._out.write(functools.partial(self._line_of, data))

    def _line_of(self, data: Line | Deferred) -> str:
        if not isinstance(data, Line):
            data = data()
        assert isinstance(data, Line)
        return self._line(data)

    def _line(self, data: Line) -> str:
        value = data.value
        if type(value) is not float and type(value) is not str:
            value = self._store_blobs(value)
        tag = self._tags.get(data.tag)
        if tag is None:
            tag = self._tags[data.tag] = _dumps(data.tag)
        step = "null" if data.step is None else data.step
        return (
            f'{{"wall_time":{data.wall_time!r},"step":{step},"tag":{tag},"kind":"{data.kind}",'
            f'"value":{_dumps(value)}}}\n'
        )

    def _store_blobs(self, value: Any) -> Any:
        if isinstance(value, Blob):
            return self._store_blob(value)
        if isinstance(value, dict):
            return {k: self._store_blobs(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._store_blobs(v) for v in value]
        return value

    def _store_blob(self, blob: Blob) -> dict[str, Any]:
        with self._blob_lock:
            if not self._blob_dir_made:
                self._storage.makedirs(self._paths.join(self.log_dir, BLOB_DIR))
                self._blob_dir_made = True
            while True:
                rel = f"{BLOB_DIR}/{next(self._blob_counter):08d}{blob.suffix}"
                try:
                    self._storage.write_new(self._paths.join(self.log_dir, rel), blob.data)
                    break
                except FileExistsError:
                    continue  # another writer of this run took the name
        return {"path": rel, "content_type": blob.content_type, "bytes": len(blob.data)}

    def __repr__(self) -> str:
        return f"<JsonlSink {self.path!r}>"


def encoder_for(kind: str, to_json: Any) -> Any:
    """An encoder of ``kind`` for this sink from ``to_json(payload)`` (JSON data or :class:`Blob`)."""
    return _encoder(kind, to_json)


@hookimpl
def register_sinks(register: Any) -> None:
    from .table import EXPORT

    register(
        SinkSpec(
            name=SINK,
            open=JsonlSink,
            schemes=("jsonl",),
            description="JSON lines, blobs as files",
            export=EXPORT,  # tallyboard export -o out.jsonl: see .table
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    for kind, to_json in BUILTIN_ENCODERS.items():
        register(kind, SINK, _encoder(kind, to_json))
    register("*", SINK, encode_row)  # the rest: kinds that declare their row (Kind.to_row)


@hookimpl
def register_readers(register: Any) -> None:
    from tallyboard.plugin.readers import ReaderSpec

    from .reader import matches, open_reader

    register(
        ReaderSpec(
            name=SINK,
            matches=matches,
            open=open_reader,
            description="records.jsonl of the jsonl sink",
            priority=20,
        )
    )


@hookimpl
def register_decoders(register: Any) -> None:
    from .reader import BUILTIN_DECODERS, decode_row

    for kind, decode in BUILTIN_DECODERS.items():
        register(SINK, kind, decode)
    register(SINK, "*", decode_row)  # the rest: kinds that declare their row (Kind.to_row)
