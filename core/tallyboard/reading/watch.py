"""The kernel's change events for a local tree (Linux inotify): which folders and files a later
scan must look at again, so that a poll of a large quiet tree stats only what changed.

Events are trusted only where the kernel sees every change: folders on a local file system
(ext4, xfs, btrfs, tmpfs, overlay, ...). A network or FUSE file system (NFS, SMB, sshfs, 9p)
is changed by other hosts without an event here; a tree with such a folder, a system without
inotify, or one out of watches is scanned by ``stat`` as before. Watches are shared by every
program of the user (editors and file sync use them too): a tree takes at most a quarter of
``fs.inotify.max_user_watches``, and a larger one is scanned by ``stat``.
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import Any

#: file systems whose changes are all made through this kernel, so all raise events.
LOCAL_FILE_SYSTEMS = frozenset(
    {
        "ext2",
        "ext3",
        "ext4",
        "xfs",
        "btrfs",
        "bcachefs",
        "f2fs",
        "jfs",
        "nilfs2",
        "reiserfs",
        "zfs",
        "tmpfs",
        "ramfs",
        "overlay",
    }
)

# inotify(7) event bits
_MODIFY, _MOVED_FROM, _MOVED_TO = 0x2, 0x40, 0x80
_CREATE, _DELETE, _DELETE_SELF, _MOVE_SELF = 0x100, 0x200, 0x400, 0x800
_Q_OVERFLOW, _IGNORED, _ONLYDIR = 0x4000, 0x8000, 0x01000000
_ENTRIES = _CREATE | _DELETE | _MOVED_FROM | _MOVED_TO
_MASK = _MODIFY | _ENTRIES | _DELETE_SELF | _MOVE_SELF | _ONLYDIR


class Changes:
    """What the events read at once name: ``folders`` whose entries changed (to list again),
    ``files`` written to (to stat), ``created`` paths made or moved in (a file known there
    before is another file now), and ``lost``: events were dropped (the kernel's queue
    overflowed, the root went away), so everything must be scanned."""

    __slots__ = ("folders", "files", "created", "lost")

    def __init__(self) -> None:
        self.folders: set[str] = set()
        self.files: set[str] = set()
        self.created: set[str] = set()
        self.lost = False


class Watch:
    """The folders of one tree watched through one inotify instance.

    :meth:`open` gives None where events cannot be had; :meth:`add` returns False for a folder
    that cannot be watched (then the caller stops using events for the tree and closes this).
    """

    #: the share of the user's inotify watches one tree may take.
    share = 0.25

    def __init__(self, root: str, notify: Any) -> None:
        self.root = root
        self._notify = notify
        self._budget = int(_max_user_watches() * self.share)
        # a tree forgotten without close() lets go of its instance quietly
        self._release = weakref.finalize(self, notify.close)
        self._paths: dict[int, list[str]] = {}  # watch descriptor -> the folder paths it is
        self._wd: dict[str, int] = {}
        self._local_devs: dict[int, bool] = {}

    @classmethod
    def open(cls, root: str) -> Watch | None:
        """A watch for the tree at ``root``, or None: not Linux, no ``inotify_simple``, or
        the kernel has no inotify instance left."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            from inotify_simple import INotify
        except ImportError:
            return None
        try:
            return cls(root, INotify())
        except (OSError, AttributeError):  # EMFILE: max_user_instances reached; a libc without it
            return None

    def add(self, path: str, dev: int) -> bool:
        """Watch the folder ``path`` (on device ``dev``); False when its changes cannot all be
        seen here (a file system other hosts change, no watch left, no permission)."""
        local = self._local_devs.get(dev)
        if local is None:
            local = self._local_devs[dev] = _fs_type(dev) in LOCAL_FILE_SYSTEMS
        if not local or len(self._wd) >= self._budget:
            return False
        try:
            wd = self._notify.add_watch(path, _MASK)
        except (FileNotFoundError, NotADirectoryError):
            return True  # gone since listed: its parent's events say so
        except OSError:  # ENOSPC: max_user_watches reached; EACCES
            return False
        except ValueError:  # the instance was closed meanwhile (close(), or at the exit)
            return False
        paths = self._paths.setdefault(wd, [])
        if path not in paths:
            paths.append(path)
        self._wd[path] = wd
        return True

    def remove(self, path: str) -> None:
        """Stop watching ``path`` (its watch ends when no other path leads to that folder)."""
        wd = self._wd.pop(path, None)
        if wd is None:
            return
        paths = self._paths.get(wd, [])
        if path in paths:
            paths.remove(path)
        if not paths:
            self._paths.pop(wd, None)
            try:
                self._notify.rm_watch(wd)
            except OSError:  # the kernel ended it already (the folder was deleted)
                pass

    def changes(self) -> Changes:
        """The changes since the last call, without waiting."""
        out = Changes()
        join = os.path.join
        for wd, mask, _, name in self._notify.read(timeout=0):
            if mask & _Q_OVERFLOW:
                out.lost = True
                continue
            paths = self._paths.get(wd)
            if not paths:
                continue
            if mask & _IGNORED:  # the folder is gone: its parent's events say so
                for path in self._paths.pop(wd):
                    self._wd.pop(path, None)
                    if path == self.root:
                        out.lost = True
                continue
            if mask & (_DELETE_SELF | _MOVE_SELF):
                if self.root in paths:
                    out.lost = True
                continue
            if not name:
                continue
            if mask & _ENTRIES:
                out.folders.update(paths)
                if mask & (_CREATE | _MOVED_TO):
                    out.created.update(join(p, name) for p in paths)
            elif mask & _MODIFY:
                out.files.update(join(p, name) for p in paths)
        return out

    def close(self) -> None:
        """Let go of the inotify instance and every watch."""
        self._release()
        self._paths.clear()
        self._wd.clear()


def _max_user_watches() -> int:
    """The user's inotify watch limit (8192, the old kernels' default, when unreadable)."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 8192


def _fs_type(dev: int) -> str:
    """The type of the file system mounted as device ``dev`` ("" when not found)."""
    want = f"{os.major(dev)}:{os.minor(dev)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 2 and fields[2] == want and "-" in fields:
                    return fields[fields.index("-") + 1]
    except OSError:
        pass
    return ""
