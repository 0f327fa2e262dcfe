"""The files under a local directory: listed once (:func:`local_files`), or kept between scans
so that a later scan costs little (:class:`LocalTree`, which on Linux follows the kernel's change
events)."""

from __future__ import annotations

import os
import stat
import time
from operator import attrgetter
from typing import Any

from tallyboard.reading.watch import Changes, Watch

#: A folder to list, with the folders its path is inside (not itself): what a walk is given.
Folder = tuple[str, tuple[str, ...]]
#: A share of a tree (:func:`deal`): ``(path, regular, size)`` of files already found, and the
#: folders whose trees are to be listed.
Share = tuple[list[tuple[str, bool, int]], list[Folder]]


def local_files(root: str, folders: list[Folder] | None = None) -> list[tuple[str, bool, int]]:
    """``(path, regular, size)`` for every file under the local directory ``root``, symlinked folders
    followed as TensorBoard follows them, but never into a folder the path is already inside (a
    link loop); ``regular`` is False for a FIFO, socket, device or dangling link, which are
    never opened (a FIFO would block the reader). One ``scandir`` per folder and one ``stat``
    per file; folders cost none (the kind of an entry comes with the listing), but links,
    whose targets are compared with the folders the path is inside. Nothing is kept
    (:class:`LocalTree` keeps what a later scan needs). ``folders``: list only the trees of
    these (a share :func:`deal` gave), not ``root``'s."""
    out: list[tuple[str, bool, int]] = []
    walk = _Walk()
    todo: list[Folder] = [(root, ())] if folders is None else list(folders)
    while todo:
        todo.extend(walk.folder(*todo.pop(), out))
    return out


def deal(root: str, shares: int, at_least: int, most: int = 4096) -> list[Share] | None:
    """The tree under ``root`` dealt into ``shares`` parts that as many processes list (and
    read) apart: per share, ``(files, folders)``: files found on the way (the first share's)
    and the folders whose trees it lists (:func:`local_files`), the folders of one level
    dealt round-robin as they were listed. The levels are listed one after another until one
    holds ``at_least`` folders; None when none does within ``most`` folders listed (a tree too
    small to be worth dealing, or too deep to find such a level soon)."""
    above: list[tuple[str, bool, int]] = []
    walk = _Walk()
    level: list[Folder] = [(root, ())]
    listed = 0
    while level and listed + len(level) <= most:
        below: list[Folder] = []
        for top, parents in level:
            below.extend(walk.folder(top, parents, above))
        listed += len(level)
        level = below
        if len(level) >= at_least:
            return [(above if k == 0 else [], level[k::shares]) for k in range(shares)]
    return None


class _Walk:
    """The listing of folders one at a time, for :func:`local_files` and :func:`deal`: the
    ``(st_dev, st_ino)`` of the folders met, to tell a symlinked folder from a loop."""

    def __init__(self) -> None:
        self.keys: dict[str, tuple[int, int]] = {}  # folder -> (st_dev, st_ino), when needed

    def key(self, path: str) -> tuple[int, int]:
        found = self.keys.get(path)
        if found is None:
            st = os.stat(path)
            found = self.keys[path] = (st.st_dev, st.st_ino)
        return found

    def folder(
        self, top: str, parents: tuple[str, ...], out: list[tuple[str, bool, int]]
    ) -> list[Folder]:
        """List ``top`` (inside the folders ``parents``): its files added to ``out``; returns
        its folders (symlinked ones that make no loop included), each with the folders it is
        inside."""
        try:
            with os.scandir(top) as it:
                entries = list(it)
        except OSError:
            return []
        folders: list[Folder] = []
        inside = (*parents, top)  # one tuple, shared by every folder found here
        isdir, isreg = stat.S_ISDIR, stat.S_ISREG
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):  # a folder, not a link: no loop
                    folders.append((entry.path, inside))
                    continue
                if entry.is_file(follow_symlinks=False):
                    out.append((entry.path, True, entry.stat(follow_symlinks=False).st_size))
                    continue
                st = entry.stat()  # a link (followed) or a special file
            except OSError:
                out.append((entry.path, False, 0))
                continue
            if isdir(st.st_mode):
                target = (st.st_dev, st.st_ino)
                try:
                    loop = any(self.key(folder) == target for folder in inside)
                except OSError:
                    loop = True
                if not loop:
                    self.keys[entry.path] = target
                    folders.append((entry.path, inside))
            else:
                out.append((entry.path, isreg(st.st_mode), st.st_size))
        return folders


def _stat_files(paths: list[str]) -> tuple[Any, Any]:
    """Sizes (int64, -1 where ``stat`` fails) and inodes (uint64, 0 there) of every path, in
    one tight pass while none fails."""
    import numpy as np

    st, size_and_inode = os.stat, attrgetter("st_size", "st_ino")
    flat: list[int] = []
    add = flat.extend
    try:
        for p in paths:
            add(size_and_inode(st(p)))
    except OSError:
        flat = []
        for p in paths:
            try:
                flat.extend(size_and_inode(st(p)))
            except OSError:
                flat.extend(((1 << 64) - 1, 0))  # the size reads -1 as int64
    both = np.array(flat, np.uint64)
    return both[0::2].view(np.int64), both[1::2]


def _mtimes(paths: list[str]) -> Any:
    """``st_mtime_ns`` of every path as an int64 array (-1 where ``stat`` fails), in one tight
    pass while none fails."""
    import numpy as np

    st = os.stat
    try:
        got = [st(p).st_mtime_ns for p in paths]
    except OSError:
        got = []
        for p in paths:
            try:
                got.append(st(p).st_mtime_ns)
            except OSError:
                got.append(-1)
    return np.array(got, np.int64)


class _Dir:
    """A folder as last scanned: its mtime, its ``(st_dev, st_ino)`` and the folder it is in
    (a link back to a folder it is inside is a loop), its files and subfolders."""

    __slots__ = ("mtime", "key", "parent", "files", "subdirs")

    def __init__(self, mtime: int, key: tuple[int, int], parent: str | None) -> None:
        self.mtime, self.key, self.parent = mtime, key, parent
        self.files: dict[str, tuple[bool, int]] = {}
        self.subdirs: list[str] = []


class LocalTree:
    """The files under a local directory, kept between scans so that a later :meth:`scan` costs
    a ``stat`` per known folder and file, not a walk of the whole tree.

    A folder is listed again only when its mtime changed (a file or folder was added, removed
    or renamed in it) or was too recent to trust at the previous scan: file systems stamp times
    at a coarse granularity, so a change made in the same tick as that scan may leave the mtime
    as it was. Files are ``stat``-ed every scan for their size (appending changes no folder)
    and their inode: a file replaced by another at the same path (renamed over it, as atomic
    rewrites and rsync without ``--inplace`` do) is listed in :attr:`replaced`.

    On Linux, where every folder is on a local file system, the kernel's change events
    (:mod:`tallyboard.reading.watch`) say what changed instead: a scan then lists the folders
    whose entries changed and stats the files written to, nothing else, and a file deleted and
    written again is seen as replaced even when it got the freed inode back. Every
    :attr:`full_every` seconds, and whenever the kernel dropped events, a scan stats everything
    as above (a file written through a hard link from outside the tree raises no event here).
    Without events, a file deleted and written again with its old inode is not seen replaced.
    """

    #: a folder whose mtime is this close to (or after) the previous scan's start is listed again.
    racy_ns = 2_000_000_000
    #: with events, a scan stats every folder and file at least this often (seconds).
    full_every = 60.0

    def __init__(self, root: str, events: bool = True) -> None:
        self.root = root
        #: the kernel's change events for this tree, while every folder can be watched.
        self.watch: Watch | None = Watch.open(root) if events else None
        self._full_at = 0.0  # time.monotonic() of the last scan that stat-ed everything
        self._linked: set[str] = set()  # files that are links: their targets raise no event here
        self._dirs: dict[str, _Dir] = {}
        self._started = 0  # time.time_ns() when the previous scan began (0: none yet)
        #: every file found, and, flat, the folders and regular files stat-ed at each scan.
        self._all: dict[str, tuple[bool, int]] = {}
        self._dir_list: list[str] = []
        self._mtimes: Any = None
        self._file_list: list[str] = []
        self._sizes: Any = None
        self._inos: Any = None  # of the files of _file_list, from _ino_of
        self._ino_of: dict[str, int] = {}  # regular file -> its inode when last stat-ed
        self._first_seen: set[str] = set()  # files the previous scan found first
        #: after a scan: whether files appeared or vanished, and (when not) those that resized.
        self.changed = True
        self.resized: list[str] = []
        #: after a scan: files now another file (a new inode) at a path already known.
        self.replaced: set[str] = set()

    def scan(self) -> dict[str, tuple[bool, int]]:
        """``{path: (regular, size)}`` of every file now under the root (see :func:`local_files`).

        With the kernel's events, only what they name is listed or stat-ed; without, the
        folders and files known are stat-ed in two tight passes. :attr:`changed`,
        :attr:`resized` and :attr:`replaced` then say what this scan found different."""
        import numpy as np

        started = time.time_ns()
        self.resized = []
        self.replaced = set()
        fresh, self._first_seen = self._first_seen, set()
        if not self._dirs:
            self._full_at = time.monotonic()
            self._walk(self.root, os.stat(self.root), None)
            self._rebuild()
            self._started = started
            return self._all
        self.changed = False
        was_known: list[str] = []
        if self.watch is not None:
            changes = self.watch.changes()
            # a file made again at a known path: another file even with the same inode; but a
            # file the previous scan found first may have been made after its folder's watch
            # began and before the folder was listed: then the same inode is the same file
            was_known = [p for p in changes.created if p in self._ino_of and p not in fresh]
            if not changes.lost and time.monotonic() - self._full_at < self.full_every:
                self._apply(changes, was_known)
                self._started = started
                return self._all
            self._full_at = time.monotonic()
            if changes.lost:
                was_known = []
            else:  # the folders events name are listed again, whatever their mtime
                self._renew(changes.created)
                at = self._dir_index
                for path in changes.folders:
                    if path in at:
                        self._mtimes[at[path]] = -2
        trust_before = self._started - self.racy_ns
        mtimes = _mtimes(self._dir_list)
        suspect = np.flatnonzero((mtimes != self._mtimes) | (self._mtimes >= trust_before))
        for i in suspect.tolist():
            self._list_again(self._dir_list[i], int(mtimes[i]))
        if self.changed:
            self._rebuild()
        elif len(suspect):
            self._mtimes = mtimes  # the same folders, some relisted with their new times
            for i in suspect.tolist():
                self._mtimes[i] = self._dirs[self._dir_list[i]].mtime
        sizes, inos = _stat_files(self._file_list)
        inos = np.where(sizes < 0, self._inos, inos)  # vanished: judged when listed next scan
        moved = np.flatnonzero((sizes != self._sizes) | (inos != self._inos))
        for i in moved.tolist():
            path = self._file_list[i]
            if sizes[i] < 0:
                continue
            if inos[i] != self._inos[i]:
                self.replaced.add(path)
                self._ino_of[path] = int(inos[i])
            if sizes[i] == self._sizes[i]:
                continue
            self._all[path] = (True, int(sizes[i]))
            d = self._dirs[path.rsplit(os.sep, 1)[0] if os.sep in path else path]
            d.files[path] = (True, int(sizes[i]))
            self.resized.append(path)
        self._sizes, self._inos = sizes, inos
        self.replaced.update(p for p in was_known if self._all_has(p))
        self._started = started
        return self._all

    def _apply(self, changes: Changes, was_known: list[str]) -> None:
        """Scan what the kernel's events name: list again the folders whose entries changed,
        stat the files written to (and links, whose targets raise no event here).
        ``was_known``: files known before that were made again."""
        known = self._ino_of
        self._renew(changes.created)
        for path in sorted(changes.folders):
            if path in self._dirs:  # else dropped with a folder above it
                self._list_again(path, int(_mtimes([path])[0]))
        # deleted and made again, or another file moved over it
        self.replaced.update(p for p in was_known if self._all_has(p))
        relisted = changes.folders
        written = [
            p
            for p in changes.files | self._linked
            if p.rsplit(os.sep, 1)[0] not in relisted and p in known
        ]
        sizes, inos = _stat_files(written)
        new_size: dict[str, int] = {}
        for path, size, ino in zip(written, sizes.tolist(), inos.tolist()):
            if size < 0:
                continue  # vanished: its folder's event comes
            if ino != known[path]:
                self.replaced.add(path)
                known[path] = ino
            d = self._dirs.get(path.rsplit(os.sep, 1)[0])
            if d is not None and path in d.files and d.files[path][1] != size:
                d.files[path] = (True, size)
                new_size[path] = size
        if self.changed:
            self._rebuild()
            return
        for path in relisted:  # the same entries, listed again: their sizes are fresh
            d = self._dirs.get(path)
            if d is not None:
                self._mtimes[self._dir_index[path]] = d.mtime
                for p, (regular, size) in d.files.items():
                    if regular and self._all.get(p, (True, size))[1] != size:
                        new_size[p] = size
        at = self._index
        for path, size in new_size.items():
            i = at[path]
            self._sizes[i] = size
            self._inos[i] = known[path]
            self._all[path] = (True, size)
            self.resized.append(path)

    def _list_again(self, path: str, mtime: int) -> None:
        """List the known folder ``path`` again (``mtime`` -1: it is gone, and forgotten);
        :attr:`changed` when its files or subfolders are not what they were."""
        d = self._dirs.get(path)
        if d is None:  # dropped with a folder above it
            return
        if mtime < 0:
            self._drop(path)
            self.changed = True
            return
        before = (set(d.files), set(d.subdirs))
        self._relist(path, d, mtime)
        if (set(d.files), set(d.subdirs)) != before:
            self.changed = True

    def _renew(self, created: set[str]) -> None:
        """Forget the known folders among ``created`` (deleted and made again, another folder
        moved over, a link pointed elsewhere): their parents' listings walk them anew."""
        for path in created:
            if path in self._dirs and path != self.root:
                self._drop(path)
                self.changed = True

    def _all_has(self, path: str) -> bool:
        """Whether ``path`` is a regular file of the tree now."""
        d = self._dirs.get(path.rsplit(os.sep, 1)[0])
        return d is not None and d.files.get(path, (False, 0))[0]

    def close(self) -> None:
        """Stop watching the tree's folders."""
        if self.watch is not None:
            self.watch.close()
            self.watch = None

    def _rebuild(self) -> None:
        """The flat lists and the union of every folder's files, after folders changed."""
        import numpy as np

        self.changed = True
        self._all = {}
        for d in self._dirs.values():
            self._all.update(d.files)
        self._dir_list = list(self._dirs)
        self._mtimes = np.array([self._dirs[p].mtime for p in self._dir_list], np.int64)
        self._file_list = [p for p, (regular, _) in self._all.items() if regular]
        self._sizes = np.array([self._all[p][1] for p in self._file_list], np.int64)
        self._ino_of = {p: self._ino_of[p] for p in self._file_list}
        self._inos = np.array([self._ino_of[p] for p in self._file_list], np.uint64)
        self._index = {p: i for i, p in enumerate(self._file_list)}
        self._dir_index = {p: i for i, p in enumerate(self._dir_list)}

    @staticmethod
    def _entries(top: str) -> list[tuple[str, os.stat_result | None, bool]]:
        """``(path, stat or None, is a link)`` of the entries of ``top`` (None: a dangling
        link)."""
        try:
            with os.scandir(top) as it:
                entries = list(it)
        except OSError:
            return []
        out: list[tuple[str, os.stat_result | None, bool]] = []
        for entry in entries:
            try:
                out.append((entry.path, entry.stat(), entry.is_symlink()))
            except OSError:
                out.append((entry.path, None, True))
        return out

    def _walk(self, top: str, st: os.stat_result, parent: str | None) -> None:
        """List ``top`` and every folder below it (not known yet)."""
        todo = [(top, st, parent)]
        while todo:
            path, st, parent = todo.pop()
            if self.watch is not None and not self.watch.add(path, st.st_dev):
                self.close()  # a folder whose changes cannot all be seen: stat everything
            d = self._dirs[path] = _Dir(st.st_mtime_ns, (st.st_dev, st.st_ino), parent)
            for sub, sub_st in self._fill(path, d):
                todo.append((sub, sub_st, path))

    def _inside(self, d: _Dir, key: tuple[int, int]) -> bool:
        """Whether the folder ``key`` is ``d`` or a folder ``d`` is in."""
        at: _Dir | None = d
        while at is not None:
            if at.key == key:
                return True
            at = self._dirs.get(at.parent) if at.parent is not None else None
        return False

    def _fill(self, path: str, d: _Dir) -> list[tuple[str, Any]]:
        """Record the files of ``path`` in ``d``; returns its subfolders to enter (not loops)."""
        subs = []
        for entry, st, link in self._entries(path):
            if st is None:
                d.files[entry] = (False, 0)
            elif stat.S_ISDIR(st.st_mode):
                if not self._inside(d, (st.st_dev, st.st_ino)):
                    subs.append((entry, st))
            else:
                regular = stat.S_ISREG(st.st_mode)
                d.files[entry] = (regular, st.st_size)
                if regular and link:
                    self._linked.add(entry)
                if regular:
                    known = self._ino_of.get(entry)
                    if known is None:
                        if self.watch is not None:
                            self._first_seen.add(entry)
                    elif known != st.st_ino:
                        self.replaced.add(entry)
                    self._ino_of[entry] = st.st_ino
        d.subdirs = [sub for sub, _ in subs]
        return subs

    def _relist(self, path: str, d: _Dir, mtime: int) -> None:
        """List ``path`` again: new folders are walked, vanished ones dropped."""
        before = set(d.subdirs)
        d.mtime = mtime
        self._linked.difference_update(d.files)
        d.files = {}
        for sub, st in self._fill(path, d):
            if sub not in before or sub not in self._dirs:
                self._walk(sub, st, path)
        for sub in before - set(d.subdirs):
            self._drop(sub)

    def _drop(self, path: str) -> None:
        """Forget ``path`` and every folder below it."""
        todo = [path]
        while todo:
            path = todo.pop()
            d = self._dirs.pop(path, None)
            if d is not None:
                todo.extend(d.subdirs)
                self._linked.difference_update(d.files)
                if self.watch is not None:
                    self.watch.remove(path)
