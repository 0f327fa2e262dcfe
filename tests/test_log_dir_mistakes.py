"""A log dir that is a file, or lies under one, is refused by every face with the same error
before anything is written; ``tallyboard.read`` of a folder with no runs says so."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest
import tallyboard
import tallyboard.paths
from tallyboard import SummaryRecord, SummaryWriter
from tallyboard.monitor import TensorboardEventHandler
from tallyboard.warn import ReadWarning


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("kept")
    return path


def _untouched(tmp_path: Path, a_file: Path) -> None:
    assert a_file.read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_summary_writer_refuses_a_log_dir_that_is_a_file(tmp_path: Path, a_file: Path) -> None:
    with pytest.raises(NotADirectoryError, match=r"log_dir '.*notes\.txt' is a file, not a dir"):
        SummaryWriter(str(a_file))
    _untouched(tmp_path, a_file)


def test_summary_writer_refuses_a_log_dir_under_a_file(tmp_path: Path, a_file: Path) -> None:
    with pytest.raises(NotADirectoryError, match=r"'.*notes\.txt/run' lies under the file '"):
        SummaryWriter(a_file / "run")
    _untouched(tmp_path, a_file)


def test_the_monitor_face_gets_the_writers_refusal(tmp_path: Path, a_file: Path) -> None:
    with pytest.raises(NotADirectoryError, match="is a file, not a directory"):
        TensorboardEventHandler(SummaryWriter(str(a_file)))
    _untouched(tmp_path, a_file)


def test_summary_record_refuses_a_file_and_a_path_under_one(tmp_path: Path, a_file: Path) -> None:
    with pytest.raises(NotADirectoryError, match=r"is a file path, it should be a directory"):
        SummaryRecord(str(a_file))  # MindSpore's own words
    with pytest.raises(NotADirectoryError, match=r"lies under the file '.*notes\.txt'"):
        SummaryRecord(str(a_file / "run"))
    _untouched(tmp_path, a_file)


def test_a_missing_log_dir_is_still_created(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path / "new" / "run") as w:
        w.add_scalar("loss", 1.0, 0)
    assert any((tmp_path / "new" / "run").iterdir())


def test_reading_a_folder_without_runs_warns_naming_it(tmp_path: Path) -> None:
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.warns(ReadWarning, match=r"no runs under '.*empty': no folder there holds"):
        df = tallyboard.read(tmp_path / "empty")
    assert df.empty


def test_reading_runs_that_match_none_warns_naming_the_selection(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path / "runs" / "seed0") as w:
        w.add_scalar("loss", 1.0, 0)
    with pytest.warns(ReadWarning, match=r"no runs under '.*runs' match runs='seed9'"):
        tallyboard.read(tmp_path / "runs", runs="seed9")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(tallyboard.read(tmp_path / "runs")) == 1


def test_a_log_dir_another_rank_makes_at_the_same_moment_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ranks opening one log dir at once (ranks="all"): the directory appears between the look
    # for a directory and the look for a file in its way (seen in a two-rank gloo job).
    target = tmp_path / "all"
    isdir = os.path.isdir

    def isdir_then_made_by_another_rank(path: Any) -> bool:
        found = isdir(path)
        if os.fspath(path) == str(target) and not os.path.lexists(target):
            target.mkdir()
        return found

    monkeypatch.setattr(os.path, "isdir", isdir_then_made_by_another_rank)
    tallyboard.paths.check_log_dir(target)  # no "is a file" error
    monkeypatch.undo()
    with SummaryWriter(target) as writer:
        writer.add_scalar("loss", 0.5, 0)
    assert [p.name.startswith("events.out.tfevents") for p in target.iterdir()] == [True]
