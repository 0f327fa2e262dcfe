"""The files a run reader reads, in reading order, and how far each was read: which of them the
next read opens (new, grown, or read by a reader that keeps no byte offset)."""

from __future__ import annotations

from tallyboard.plugin.readers import FileReader, ReaderSpec


class FileEntry:
    """A recognised file of a wanted run: its run, reader spec, reader (made on first read), the
    size the last listing gave and the listed size when it was last read (-1: to read again)."""

    __slots__ = ("run", "spec", "reader", "size", "read_at")

    def __init__(self, run: str, spec: ReaderSpec, size: int) -> None:
        self.run, self.spec, self.size = run, spec, size
        self.reader: FileReader | None = None
        self.read_at = -1


class FileTable:
    """The files to read, by path in reading order (:attr:`entries`), and those the next read
    opens (:attr:`dirty`). ``keep``: readers are kept between reads, so a file read up to its
    listed size is opened again only once it grows (a one-time read keeps none)."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.entries: dict[str, FileEntry] = {}
        self.dirty: set[str] = set()

    def add(self, path: str, run: str, spec: ReaderSpec, size: int) -> None:
        """Take in ``path`` of ``run``, read by ``spec``, ``size`` bytes: read at the next read."""
        self.entries[path] = FileEntry(run, spec, size)
        self.dirty.add(path)

    def drop(self, path: str) -> FileEntry | None:
        """Forget ``path``; returns its entry (None: not a file to read)."""
        self.dirty.discard(path)
        return self.entries.pop(path, None)

    def again(self, path: str) -> None:
        """Read ``path`` again at the next read, whatever its size."""
        self.entries[path].read_at = -1
        self.dirty.add(path)

    def clear(self) -> None:
        """Forget every file."""
        self.entries.clear()
        self.dirty.clear()

    def to_read(self, changed: set[str] | None = None) -> list[str]:
        """The files to read, in reading order: those in ``changed``, else those new or grown
        since they were last read (and those whose reader keeps no offset)."""
        if changed is None:
            dirty = self.dirty
            return [p for p in self.entries if p in dirty] if dirty else []
        return [p for p in self.entries if p in changed]

    def resume(self, path: str) -> None:
        """Take ``path`` as read up to now when its reader (given the state of an earlier
        read) is at or past its listed size: it is then opened only once it grows."""
        f = self.entries[path]
        offset = getattr(f.reader, "offset", None)
        if self.keep and isinstance(offset, int) and offset >= f.size:
            f.read_at = f.size
            self.dirty.discard(path)

    def unchanged(self, path: str) -> bool:
        """Whether reading ``path`` now would surely give nothing: it was read before, its
        reader keeps a byte offset, and the file's listed size is what it was when last read
        (or the reader is done with it)."""
        f = self.entries[path]
        if f.reader is None or not isinstance(getattr(f.reader, "offset", None), int):
            return False  # not read yet, or a reader of another sort (a config read whole)
        return bool(getattr(f.reader, "dead", False)) or f.read_at == f.size

    def commit(self, path: str, reader: FileReader | None, capped: bool = False) -> None:
        """Take what was read of ``path`` by ``reader`` (kept, when readers are kept; None:
        the reader kept read in place): it is not read again, but for what is appended
        after, or what ``capped`` left."""
        f = self.entries.get(path)
        if f is None:
            return
        if reader is not None and self.keep:
            f.reader = reader
        if capped:
            f.read_at = -1
            self.dirty.add(path)
            return
        offset = getattr(f.reader, "offset", None)
        f.read_at = max(f.size, offset) if isinstance(offset, int) else f.size
        if self.keep and self.unchanged(path):
            self.dirty.discard(path)
