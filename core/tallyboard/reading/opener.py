"""Makes the reader of a file: its format's reader plugin, opened through what serves the bytes
(the file system, or bytes fetched ahead from a store), given the format's decoders by kind."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from tallyboard.plugin.readers import FileReader, PayloadRows, ReaderSpec
from tallyboard.reading.fetch import LocalFiles, Prefetched, is_local
from tallyboard.reading.files import FileEntry


def snapshot(reader: FileReader) -> FileReader:
    """A copy of ``reader`` that reads on without changing it: its attributes shared, but the
    containers among them (a set of names seen, a dict of offsets) copied, so a read that is
    never committed leaves the kept reader as it was."""
    clone = copy.copy(reader)
    for name, value in getattr(reader, "__dict__", {}).items():
        if isinstance(value, (set, dict, list, bytearray)):
            clone.__dict__[name] = copy.copy(value)
    return clone


def payload_rows(kind: Any, decode: Callable[..., Any]) -> Callable[..., Any]:
    """``decode`` as readers call it: wrapped to turn payloads into rows for a kind that
    declares ``payload`` and ``to_row`` (:class:`~tallyboard.plugin.readers.PayloadRows`)."""
    if kind is None or kind.payload is None or kind.to_row is None:
        return decode
    return PayloadRows(kind, decode)


class Opener:
    """Opens the files of the file system ``fs`` with their reader plugins.

    ``decoders`` are the registry's, by ``(format, kind)``; ``summaries`` is told to readers
    that can keep TensorBoard's summaries as their files hold them (a ``keep_summaries``
    attribute): True to show them, ``"exact"`` to copy them."""

    def __init__(
        self,
        fs: Any,
        decoders: dict[tuple[str, str], Callable[..., Any]],
        summaries: bool | str = False,
    ) -> None:
        self.decoders, self.summaries = decoders, summaries
        #: what readers open files through: on a remote store, one serving bytes fetched ahead.
        self.source: Any = LocalFiles(fs) if is_local(fs) else Prefetched(fs)
        self._by_format: dict[str, dict[str, Callable[..., Any]]] = {}

    def reader_of(self, path: str, f: FileEntry, keep: bool) -> FileReader:
        """The reader of the file ``path`` (its entry ``f``), made on first use and kept in
        ``f`` when ``keep``."""
        reader = f.reader
        if reader is None:
            spec = f.spec
            reader = spec.open(self.source, path, self.decoders_of(spec))
            if self.summaries and hasattr(reader, "keep_summaries"):
                reader.keep_summaries = self.summaries
            if keep:
                f.reader = reader
        return reader

    def decoders_of(self, spec: ReaderSpec) -> dict[str, Callable[..., Any]]:
        """The decoders of ``spec``'s format by kind: one dict shared by all its files."""
        found = self._by_format.get(spec.name)
        if found is None:
            from tallyboard.plugin.registry import get_registry

            kinds = get_registry().kinds
            found = self._by_format[spec.name] = {
                k: payload_rows(kinds.get(k), fn)
                for (fmt, k), fn in self.decoders.items()
                if fmt == spec.name
            }
        return found
