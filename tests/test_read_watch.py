"""A local tree followed by the kernel's change events (inotify): a quiet poll stats nothing,
and whatever changes (files written, made, deleted, replaced, folders added and removed, links
to files outside the tree) is found as a full scan finds it. Real files, a real kernel: the
events come from the writes each test makes. Linux only (inotify), as the CI machine is:
elsewhere these tests fail at their first check that the tree is watched, not pass unchecked."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from tallyboard import Reader
from tallyboard.reading import watch as watch_module
from tallyboard.reading.tree import LocalTree


class _Syscalls:
    """Counts the stats and folder listings made while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stats = 0
        self.listed: list[str] = []
        real_stat, real_scandir = os.stat, os.scandir

        def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
            self.stats += 1
            return real_stat(path, *args, **kwargs)

        def scandir(path: Any) -> Any:
            self.listed.append(str(path))
            return real_scandir(path)

        monkeypatch.setattr(os, "stat", stat)
        monkeypatch.setattr(os, "scandir", scandir)


def _tree(root: Path) -> LocalTree:
    tree = LocalTree(str(root))
    tree.scan()
    assert tree.watch is not None, "this test needs a tree on a local file system"
    return tree


def _files(root: Path) -> dict[str, tuple[bool, int]]:
    """What a fresh full scan of ``root`` finds."""
    return dict(LocalTree(str(root), events=False).scan())


def _runs(root: Path, n: int) -> list[Path]:
    files = []
    for k in range(n):
        (root / f"run{k}").mkdir()
        files.append(root / f"run{k}" / "events.out.tfevents.1.host")
        files[-1].write_bytes(b"x")
    return files


def test_a_quiet_scan_stats_and_lists_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path, 50)
    tree = _tree(tmp_path)
    calls = _Syscalls(monkeypatch)
    tree.scan()
    assert (calls.stats, calls.listed) == (0, [])
    assert not tree.changed and not tree.resized and not tree.replaced


def test_a_written_file_is_the_only_one_stat_ed_and_is_resized(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _runs(tmp_path, 50)
    tree = _tree(tmp_path)
    with open(files[7], "ab") as f:
        f.write(b"yz")
    calls = _Syscalls(monkeypatch)
    found = tree.scan()
    assert calls.stats == 1 and calls.listed == []
    assert tree.resized == [str(files[7])] and not tree.changed
    assert found[str(files[7])] == (True, 3)
    monkeypatch.undo()
    assert found == _files(tmp_path)


def test_new_deleted_and_nested_folders_are_found_as_a_full_scan_finds_them(
    tmp_path: Path,
) -> None:
    files = _runs(tmp_path, 5)
    tree = _tree(tmp_path)
    (tmp_path / "sweep" / "lr=0.1" / "seed0").mkdir(parents=True)
    (tmp_path / "sweep" / "lr=0.1" / "seed0" / "events.out.tfevents.2.host").write_bytes(b"ab")
    shutil.rmtree(tmp_path / "run3")
    files[1].unlink()
    (tmp_path / "run2" / "events.out.tfevents.3.host").write_bytes(b"abc")
    assert tree.scan() == _files(tmp_path) and tree.changed
    shutil.rmtree(tmp_path / "sweep" / "lr=0.1")
    assert tree.scan() == _files(tmp_path) and tree.changed
    assert not any("sweep" in p for p in tree.scan())


def test_a_folder_deleted_and_made_again_is_walked_anew(tmp_path: Path) -> None:
    files = _runs(tmp_path, 3)
    tree = _tree(tmp_path)
    shutil.rmtree(tmp_path / "run1")
    (tmp_path / "run1").mkdir()
    tree.scan()
    (tmp_path / "run1" / "events.out.tfevents.2.host").write_bytes(b"new")
    (tmp_path / "run2").rename(tmp_path / "moved")
    (tmp_path / "run0").rename(tmp_path / "run2")  # a folder moved over another's name
    assert tree.scan() == _files(tmp_path) and tree.changed
    with open(tmp_path / "run2" / files[0].name, "ab") as f:
        f.write(b"more")
    assert tree.scan() == _files(tmp_path)
    assert tree.resized == [str(tmp_path / "run2" / files[0].name)]


def test_a_file_deleted_and_written_again_is_replaced_whatever_its_inode(tmp_path: Path) -> None:
    files = _runs(tmp_path, 3)
    tree = _tree(tmp_path)
    tree.scan()
    files[0].unlink()
    files[0].write_bytes(b"new")  # ext4 may give back the freed inode: events tell anyway
    tree.scan()
    assert tree.replaced == {str(files[0])}
    tree.scan()
    assert not tree.replaced


def test_a_file_made_between_its_folders_watch_and_listing_is_not_replaced(
    tmp_path: Path,
) -> None:
    """A writer can make a file after the folder's watch began and before it is listed: its
    creation event then comes after the file was found, and is not a replacement."""
    (tmp_path / "run").mkdir()
    late = tmp_path / "run" / "events.out.tfevents.1.host"

    class Racing(LocalTree):
        @staticmethod
        def _entries(top: str) -> list[tuple[str, os.stat_result | None, bool]]:
            if top == str(tmp_path / "run") and not late.exists():
                late.write_bytes(b"x")
            return LocalTree._entries(top)

    tree = Racing(str(tmp_path))
    assert str(late) in tree.scan()
    tree.scan()
    assert not tree.replaced and not tree.changed


def test_a_link_to_a_file_outside_the_tree_follows_its_target(tmp_path: Path) -> None:
    logdir, elsewhere = tmp_path / "logs", tmp_path / "elsewhere"
    (logdir / "run").mkdir(parents=True)
    elsewhere.mkdir()
    target = elsewhere / "events.out.tfevents.1.host"
    target.write_bytes(b"x")
    link = logdir / "run" / "events.out.tfevents.1.host"
    link.symlink_to(target)
    tree = _tree(logdir)
    with open(target, "ab") as f:
        f.write(b"yy")  # no event in the watched tree
    assert tree.scan()[str(link)] == (True, 3) and tree.resized == [str(link)]


def test_dropped_events_make_the_scan_stat_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _runs(tmp_path, 2)
    tree = _tree(tmp_path)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    with open(files[0], "ab") as a, open(files[1], "ab") as b:
        for _ in range(limit // 2 + 10):  # alternating: the kernel merges no two in a row
            a.write(b"1")
            a.flush()
            b.write(b"2")
            b.flush()
    late = tmp_path / "run0" / "events.out.tfevents.2.host"
    late.write_bytes(b"z")  # the queue is full: its event is dropped
    assert tree.scan() == _files(tmp_path)
    assert str(late) in tree._all and tree.changed
    calls = _Syscalls(monkeypatch)
    tree.scan()  # events again
    assert (calls.stats, calls.listed) == (0, [])


def test_a_full_scan_comes_every_full_every_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(tmp_path, 4)
    tree = _tree(tmp_path)
    tree.full_every = 0.0
    calls = _Syscalls(monkeypatch)
    tree.scan()
    assert calls.stats >= 4 + 5  # every file and folder


def test_a_folder_on_a_file_system_others_change_is_scanned_by_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On NFS, SMB or FUSE, other hosts change files without an event here: such a tree
    (simulated: the file system's type as /proc/self/mountinfo would give it) is stat-ed."""
    monkeypatch.setattr(watch_module, "_fs_type", lambda dev: "nfs4")
    files = _runs(tmp_path, 3)
    tree = LocalTree(str(tmp_path))
    tree.scan()
    assert tree.watch is None
    with open(files[2], "ab") as f:
        f.write(b"more")
    assert tree.scan() == _files(tmp_path) and tree.resized == [str(files[2])]


def test_a_folder_gone_before_its_watch_began_leaves_the_tree_watched(tmp_path: Path) -> None:
    _runs(tmp_path, 3)
    tree = _tree(tmp_path)
    (tmp_path / "brief").mkdir()

    class Vanishing(LocalTree):
        @staticmethod
        def _entries(top: str) -> list[tuple[str, os.stat_result | None, bool]]:
            found = LocalTree._entries(top)
            if (tmp_path / "brief").exists():
                (tmp_path / "brief").rmdir()  # listed, then gone before it is watched
            return found

    tree.__class__ = Vanishing
    (tmp_path / "run9").mkdir()
    tree.scan()
    assert tree.watch is not None
    tree.__class__ = LocalTree
    assert tree.scan() == _files(tmp_path) and "brief" not in str(list(tree._dirs))


def test_a_tree_larger_than_its_share_of_the_users_watches_is_scanned_by_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Editors and file sync draw on the same per-user limit: a tree takes at most a quarter."""
    monkeypatch.setattr(watch_module, "_max_user_watches", lambda: 4 * 6)
    _runs(tmp_path, 5)  # 6 folders: the root and 5 runs
    assert _tree(tmp_path).watch is not None
    (tmp_path / "run5").mkdir()
    (tmp_path / "run5" / "events.out.tfevents.1.host").write_bytes(b"x")
    tree = LocalTree(str(tmp_path))
    found = tree.scan()
    assert tree.watch is None and found == _files(tmp_path)
    (tmp_path / "run6").mkdir()
    (tmp_path / "run6" / "events.out.tfevents.1.host").write_bytes(b"y")
    assert tree.scan() == _files(tmp_path)


def test_a_quiet_reader_poll_stats_nothing_and_a_grown_run_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tallyboard import SummaryWriter

    for k in range(20):
        with SummaryWriter(str(tmp_path / f"trial{k}")) as w:
            w.add_scalar("loss", 1.0, 0)
    reader = Reader(str(tmp_path), workers=1)
    assert len(reader.poll().added) == 20
    with SummaryWriter(str(tmp_path / "trial3"), filename_suffix=".b") as w:
        w.add_scalar("loss", 0.5, 1)
    update = reader.poll()
    assert list(update.batches) == ["trial3"] and not update.added
    calls = _Syscalls(monkeypatch)
    assert not reader.poll()
    assert (calls.stats, calls.listed) == (0, [])


def test_close_lets_go_of_the_watches(tmp_path: Path) -> None:
    _runs(tmp_path, 2)
    reader = Reader(str(tmp_path))
    reader.poll()
    tree = reader._files.tree
    assert tree is not None and tree.watch is not None
    notify = tree.watch._notify
    reader.close()
    assert notify.closed
    assert len(reader.poll().added) == 2  # read again from the start, watched again
