"""A wide tree listed and read in shares, one process each (what ``tallyboard ls`` does with a
sweep of thousands of runs): the shares hold every file once, and the listing is the one a
single process gives, warnings and notes included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import event_files, load_run
from tallyboard import SummaryWriter
from tallyboard.reading.tree import deal, local_files

WORLD = Path(__file__).parent / "fixtures" / "world"


def _tree(root: Path) -> None:
    """Files at every level, folders of several widths, a symlinked folder, a link loop, a
    dangling link and a FIFO."""
    for top in range(3):
        for run in range(5 + 3 * top):
            folder = root / f"group{top}" / f"run{run:02d}"
            folder.mkdir(parents=True)
            (folder / "events.out.tfevents.1.host").write_bytes(b"x" * run)
            if run % 4 == 0:
                (folder / "nested").mkdir()
                (folder / "nested" / "deeper.txt").write_text("n")
    (root / "top.txt").write_text("t")
    (root / "group1" / "mid.txt").write_text("m")
    os.symlink(root / "group0", root / "group2" / "linked")
    os.symlink(root, root / "group1" / "loop")
    os.symlink(root / "gone", root / "group0" / "dangling")
    os.mkfifo(root / "group2" / "fifo")


@pytest.mark.parametrize("shares", [2, 3])
@pytest.mark.parametrize("at_least", [3, 8, 20])
def test_dealt_shares_hold_every_file_once_as_one_listing_does(
    tmp_path: Path, shares: int, at_least: int
) -> None:
    _tree(tmp_path)
    dealt = deal(str(tmp_path), shares, at_least)
    assert dealt is not None and len(dealt) == shares
    parts = [sorted([*files, *local_files(str(tmp_path), folders)]) for files, folders in dealt]
    every = [f for part in parts for f in part]
    assert sorted(every) == sorted(local_files(str(tmp_path)))  # each file once
    assert all(part for part in parts), parts  # every share has some of the tree
    assert not any(files for files, _ in dealt[1:])  # files found on the way: the first share's


def test_a_tree_without_a_level_that_wide_is_not_dealt(tmp_path: Path) -> None:
    _tree(tmp_path)
    assert deal(str(tmp_path), 2, 1000) is None
    assert deal(str(tmp_path), 2, 20, most=3) is None  # the wide level lies past what is listed


#: in a fresh process (no thread yet, so shares are forked): ``list_tree`` of argv[1] in argv[2]
#: shares wherever a level holds two folders (0: in one process), as JSON.
_LIST = """
import json, sys, threading, warnings
from tallyboard.reading import listing, pool
n = int(sys.argv[2])
listing.SHARE_FOLDERS = 2 if n else 1 << 40
listing.cores = lambda: n or 1
assert pool._can_fork(), threading.enumerate()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    rows, reader = listing.list_tree(sys.argv[1])
print(json.dumps({
    "rows": rows,
    "warnings": sorted({str(w.message) for w in caught}),
    "skipped": {p: sorted(s) for p, s in reader.skipped.items()},
}))
"""

#: in a fresh process: the share and process id of each of three shares, as JSON; then a
#: result that cannot travel, and an error raised in another process's share.
_PIDS = """
import json, os
from tallyboard.reading.pool import in_shares

def share_and_pid(k):
    return k, os.getpid()

def fails(k):
    if k == 1:
        raise OSError("share 1 could not be read")
    return k

got = in_shares(share_and_pid, 3)
here = [f() for f in in_shares(lambda k: (lambda: k), 2)]
try:
    in_shares(fails, 2)
    error = None
except OSError as e:
    error = str(e)
print(json.dumps({"pid": os.getpid(), "got": got, "here": here, "error": error}))
"""


def _run(code: str, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_shares_run_in_processes_of_their_own_and_their_errors_reach_the_caller() -> None:
    out = _run(_PIDS)
    assert [k for k, _ in out["got"]] == [0, 1, 2]
    pids = [pid for _, pid in out["got"]]
    assert pids[0] == out["pid"] and out["pid"] not in pids[1:]
    assert out["here"] == [0, 1]  # a result that cannot travel: the share is done here
    assert out["error"] == "share 1 could not be read"


@pytest.mark.parametrize("n", [2, 3])
def test_other_writers_files_are_listed_in_shares_as_in_one_process(n: int) -> None:
    whole = _run(_LIST, str(WORLD), "0")
    assert _run(_LIST, str(WORLD), str(n)) == whole
    assert {row[0] for row in whole["rows"]} >= {"keras/train", "tf1", "torch", "torch/hparams_run"}


def test_a_sweep_listed_in_shares_counts_what_event_accumulator_reads(tmp_path: Path) -> None:
    for run in range(12):
        with SummaryWriter(str(tmp_path / f"trial{run:02d}")) as w:
            for step in range(run, 3 * run + 5):
                w.add_scalar("loss", 1.0 / (step + 1), step)
                if step % 3 == 0:
                    w.add_scalar("eval/acc", step / 100, step)
    rows = _run(_LIST, str(tmp_path), "3")["rows"]
    for run in range(12):
        acc = load_run(tmp_path / f"trial{run:02d}")
        for tag in ("loss", "eval/acc"):
            events = acc.Scalars(tag)
            (row,) = [r for r in rows if r[:3] == [f"trial{run:02d}", "scalar", tag]]
            assert row[3:7] == [
                len(events),
                events[0].step,
                events[-1].step,
                max(e.wall_time for e in events),
            ]


def test_damage_and_competing_formats_in_every_share_reach_the_caller(tmp_path: Path) -> None:
    """Every run damaged and mirrored in csv, so whichever runs the other process is dealt,
    what it finds reaches the caller."""
    for run in "abcd":
        with SummaryWriter(str(tmp_path / run), sinks=["tfevents", "csv"]) as w:
            for step in range(4):
                w.add_scalar("loss", float(step), step)
        (damaged,) = event_files(tmp_path / run)
        with open(damaged, "ab") as fh:
            fh.write(b"\xff" * 40)
    out = _run(_LIST, str(tmp_path), "2")
    assert [r[:4] for r in out["rows"]] == [[run, "scalar", "loss", 4] for run in "abcd"]
    damaged_runs = {w.split("/")[-2] for w in out["warnings"] if "bad length CRC" in w}
    assert damaged_runs == set("abcd"), out["warnings"]
    assert {os.path.basename(p): s for p, s in out["skipped"].items()} == {
        run: ["csv"] for run in "abcd"
    }


def test_a_process_running_threads_lists_every_share_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Forking a process that runs threads could copy a held lock: the shares are then listed
    one after another here, each by a reader of its own, to the same rows."""
    from tallyboard.reading import listing

    monkeypatch.setattr(listing, "SHARE_FOLDERS", 2)
    monkeypatch.setattr(listing, "cores", lambda: 3)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows, _ = listing.list_tree(str(WORLD))
    finally:
        stop.set()
        thread.join()
    assert json.loads(json.dumps(rows)) == _run(_LIST, str(WORLD), "0")["rows"]
