"""The files under a log dir, as ``(path, regular, size)``: a local tree (kept between listings,
so a later one stats what it knows instead of walking again), a share of one, or a store."""

from __future__ import annotations

import os
from typing import Any

from tallyboard.reading.tree import LocalTree, Share, local_files


class Lister:
    """Lists the files under ``root`` of the file system ``fs``.

    A local tree read again (``keep``) is kept as a :class:`~tallyboard.reading.tree.LocalTree`,
    whose :meth:`rescan` says what changed since; a tree read once is walked once (or only
    :meth:`only` a share of it); a store is listed whole, within ``deadline`` seconds."""

    def __init__(self, fs: Any, root: str, keep: bool, deadline: float | None) -> None:
        from fsspec.implementations.local import LocalFileSystem

        self.fs, self.root, self.keep, self.deadline = fs, root, keep, deadline
        self.local = isinstance(fs, LocalFileSystem)
        #: the local tree kept between listings (None: none kept, or not listed yet).
        self.tree: LocalTree | None = None
        self._scanned: dict[str, tuple[bool, int]] = {}  # what the tree's last scan found
        self.share: Share | None = None

    def only(self, share: Share) -> None:
        """List only ``share`` of a local tree (see :func:`tallyboard.reading.tree.deal`)."""
        self.share = share

    def rescan(self) -> tuple[list[str], list[tuple[str, int]] | None] | None:
        """Scan the local tree kept (None: none is) and say what changed: ``(replaced,
        resized)``, the files now another file at a known path, and, when none is and no file
        appeared nor vanished, ``(path, size)`` of those whose size moved (else None: list
        again, :meth:`files` with ``scanned``)."""
        tree = self.tree
        if tree is None:
            return None
        self._scanned = tree.scan()
        if tree.replaced:
            return [p.replace(os.sep, "/") for p in tree.replaced], None
        if tree.changed:
            return [], None
        scanned = self._scanned
        return [], [(p.replace(os.sep, "/"), scanned[p][1]) for p in tree.resized]

    def files(self, again: bool, scanned: bool = False) -> list[tuple[str, bool, int]]:
        """``(path, regular, size)`` of every file under the root, sorted (``again``: listed
        before; ``scanned``: :meth:`rescan` scanned the local tree just now)."""
        if self.local:
            if self.keep:
                if self.tree is None:
                    self.tree = LocalTree(self.root)
                files = self._scanned if scanned else self.tree.scan()
                found = [(p, r, n) for p, (r, n) in files.items()]
            elif self.share is not None:
                found = [*self.share[0], *local_files(self.root, self.share[1])]
            else:
                found = local_files(self.root)
            if os.sep != "/":
                found = [(p.replace(os.sep, "/"), r, n) for p, r, n in found]
            found.sort()
            return found
        from tallyboard.reading.fetch import url, within

        if again:
            # a store's listing cache would hide news (s3fs keeps one per folder: drop all)
            self.fs.invalidate_cache()
        listing = within(
            lambda: self.fs.find(self.root, detail=True),  # no FIFOs in a store
            self.deadline,
            f"listing {url(self.fs, self.root)}",
        )
        return [(p, True, int(listing[p].get("size") or 0)) for p in sorted(listing)]

    def close(self) -> None:
        """Let go of the local tree kept (and its watches): the next listing walks again."""
        if self.tree is not None:
            self.tree.close()
        self.tree = None
        self._scanned = {}
