"""Reading embeddings back: ``projector_config.pbtxt`` and the files it names, as rows of kind
``embedding``.

Embeddings are not records of an event file but files beside it (as torch, tensorboardX and
tallyboard write them), so this is a reader of its own (format ``projector``). Each read parses
the config (a small text file) again and returns a row for every entry not returned before (an
entry tallyboard rewrote for the same tag and step counts as new): ``tag`` and ``step`` (from the
entry's ``tensor_name``, ``"<tag>:<step>"``), ``wall_time`` (the tensor file's modification time,
NaN where the file system has none), ``tensor`` (float32 [N, D], parsed as TensorBoard's
projector does), ``metadata`` (one str per point, or one list per point when there are several
columns), ``metadata_header`` (the column names, or None), ``sprite`` (the PNG bytes, or None),
``sprite_dim`` ([height, width] of one image, or None) and ``tensor_path``.

A config that does not parse, or an entry whose tensor file is missing or not numbers, is
reported (:class:`~tallyboard.plugin.readers.ReadWarning`, offset 0: the config has no records) and
skipped; the next read tries again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tallyboard.plugin.readers import Batch, warn_corrupt

from .methods import CONFIG_NAME

FORMAT = "projector"
#: the largest file (config, tensors, metadata, sprite) read: each is read whole, as
#: TensorBoard's projector reads it; a larger one is reported and skipped.
MAX_FILE = 1 << 30
#: the largest projector config read (a small text file).
MAX_CONFIG = 4 << 20


def matches(basename: str) -> bool:
    """TensorBoard's projector reads ``projector_config.pbtxt``."""
    return basename == CONFIG_NAME


def parse_tensor(text: str) -> Any:
    """A tensors.tsv as float32 [N, D], as TensorBoard's projector parses it (float, then float32)."""
    import numpy as np

    rows = [line.split("\t") for line in text.split("\n") if line]
    return np.array(rows, dtype=np.float64).astype(np.float32).reshape(len(rows), -1)


def parse_metadata(text: str) -> tuple[list[Any], list[str] | None]:
    """A metadata.tsv as ``(rows, header)``: with several columns the first line is the header
    (TensorBoard's rule) and each row a list; with one column each row is a str."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if any("\t" in line for line in lines):
        return [line.split("\t") for line in lines[1:]], lines[0].split("\t")
    return lines, None


class ProjectorReader:
    """One run's projector config; :meth:`read_new` returns the embeddings not returned before."""

    def __init__(self, fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> None:
        self.fs, self.path = fs, path
        self.dir = path.rsplit("/", 1)[0] if "/" in path else ""
        self._seen: set[bytes] = set()

    def _join(self, rel: str) -> str:
        return f"{self.dir}/{rel}" if self.dir else rel

    def _bytes(self, rel: str, limit: int = MAX_FILE) -> bytes | str:
        """The file ``rel`` of the run, or why it cannot be read (missing, not a regular file,
        too large): a FIFO would block the read, a directory raise."""
        try:
            info = self.fs.info(self._join(rel))
            if info.get("type") != "file":
                return "is not a regular file"
            if (info.get("size") or 0) > limit:
                return f"holds {info['size']} bytes, more than the {limit} read"
            return bytes(self.fs.cat_file(self._join(rel)))
        except FileNotFoundError:
            return "is missing"
        except OSError as exc:
            return f"cannot be read ({exc})"

    def _text(self, rel: str, limit: int = MAX_FILE) -> str:
        """The UTF-8 text of ``rel``; ValueError saying why it cannot be had."""
        data = self._bytes(rel, limit)
        if isinstance(data, str):
            raise ValueError(data)
        return data.decode("utf-8")

    def read_new(self) -> Batch:
        from google.protobuf import text_format

        from .proto import ProjectorConfig

        batch = Batch()
        try:
            config = text_format.Parse(self._text(CONFIG_NAME, MAX_CONFIG), ProjectorConfig())
        except (text_format.ParseError, ValueError, RecursionError) as exc:
            warn_corrupt(self.path, 0, f"unparsable projector config ({exc}); read skipped")
            return batch
        for info in config.embeddings:
            key = info.SerializeToString(deterministic=True)
            if key in self._seen:
                continue
            row = self._row(info)
            if row is not None:
                self._seen.add(key)
                batch.add_row("embedding", row)
        return batch

    def _row(self, info: Any) -> dict[str, Any] | None:
        tag, _, step_text = info.tensor_name.rpartition(":")
        numbered = bool(tag) and step_text.isascii() and step_text.isdigit()
        step = int(step_text) if numbered and len(step_text) < 19 else 0
        if not numbered:
            tag = info.tensor_name
        if not _inside(info.tensor_path):
            warn_corrupt(
                self.path, 0, f"tensor file {info.tensor_path!r} of {tag!r} is outside the run"
            )
            return None
        got = self._bytes(info.tensor_path)
        if isinstance(got, str):
            warn_corrupt(
                self.path, 0, f"tensor file {info.tensor_path!r} of {tag!r} {got}; skipped"
            )
            return None
        try:
            tensor = parse_tensor(got.decode("utf-8"))
        except ValueError as exc:  # UnicodeDecodeError is one
            warn_corrupt(
                self.path, 0, f"tensor file {info.tensor_path!r} of {tag!r}: {exc}; skipped"
            )
            return None
        metadata, header = None, None
        if info.metadata_path and _inside(info.metadata_path):
            try:
                metadata, header = parse_metadata(self._text(info.metadata_path))
            except ValueError as exc:
                warn_corrupt(self.path, 0, f"metadata file {info.metadata_path!r}: {exc}")
        sprite, sprite_dim = None, None
        if info.sprite.image_path and _inside(info.sprite.image_path):
            got = self._bytes(info.sprite.image_path)
            if isinstance(got, str):
                warn_corrupt(self.path, 0, f"sprite {info.sprite.image_path!r} {got}")
            else:
                sprite = got
            sprite_dim = [int(d) for d in info.sprite.single_image_dim] or None
        try:
            mtime = self.fs.info(self._join(info.tensor_path)).get("mtime")
            wall = float(mtime.timestamp() if hasattr(mtime, "timestamp") else mtime)
        except (TypeError, ValueError, OSError):
            wall = math.nan
        return {
            "tag": tag,
            "step": step,
            "wall_time": wall,
            "tensor": tensor,
            "metadata": metadata,
            "metadata_header": header,
            "sprite": sprite,
            "sprite_dim": sprite_dim,
            "tensor_path": self._join(info.tensor_path),
        }


def _inside(rel: str) -> bool:
    """A relative path that stays in the run directory (a config never sends the reader out)."""
    parts = rel.replace("\\", "/").split("/")
    return bool(rel) and not rel.startswith("/") and ".." not in parts and ":" not in parts[0]


def open_reader(fs: Any, path: str, decoders: dict[str, Callable[..., Any]]) -> ProjectorReader:
    return ProjectorReader(fs, path, decoders)
