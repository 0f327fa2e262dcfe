"""Rank awareness in one process: the rank comes from the launcher's variables (no torch)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import load_run
from tallyboard import SummaryRecord, SummaryWriter, TensorboardEventHandler
from tallyboard.ranks.reduce import STAT, RankSyncError, _combine


@pytest.fixture
def rank_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process is rank 1 of 2, as torchrun would say (no process group)."""
    for var in ("SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")


def test_non_zero_rank_validates_every_call_and_creates_nothing(
    tmp_path: Path, rank_one: None
) -> None:
    run = tmp_path / "run"
    w = SummaryWriter(run)
    assert not w.writes
    w.add_scalar("loss", 0.5, 1)
    w.add_scalars("group", {"a": 1.0, "b": 2.0}, 1)
    w.add_text("note", "hello", 1)
    w.add_histogram("weights", np.arange(10.0), 1)
    w.add_embedding(np.zeros((3, 2)), metadata=["a", "b", "c"], global_step=1)
    w.add_hparams({"lr": 0.1}, {"hp/acc": 0.9})
    with pytest.raises(TypeError, match="scalar_value"):
        w.add_scalar("loss", "high", 1)
    with pytest.raises(TypeError, match="tag"):
        w.add_scalar(7, 0.5, 1)
    with pytest.raises(TypeError, match="global_step"):
        w.add_scalar("loss", 0.5, 1.5)
    with pytest.raises(ValueError, match="int64"):
        w.add_scalar("loss", 0.5, 2**63)
    with pytest.raises(TypeError, match="walltime"):
        w.add_scalar("loss", 0.5, 1, walltime="now")
    w.flush()
    w.close()
    assert not run.exists()


def test_each_rank_its_own_sub_run_or_its_own_tags(tmp_path: Path, rank_one: None) -> None:
    with SummaryWriter(tmp_path / "each", ranks="each") as w:
        assert w.writes and w.get_logdir() == str(tmp_path / "each" / "rank_1")
        w.add_scalar("loss", 0.5, 1)
    assert [s.value for s in load_run(tmp_path / "each" / "rank_1").Scalars("loss")] == [0.5]
    with SummaryWriter(tmp_path / "all", ranks="all") as w:
        w.add_scalar("loss", 0.5, 1)
    assert load_run(tmp_path / "all").Tags()["scalars"] == ["loss/rank_1"]


def test_bad_rank_options_name_the_argument(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ranks must be one of"):
        SummaryWriter(tmp_path, ranks="first")
    with pytest.raises(ValueError, match="reduce must be one of"):
        SummaryWriter(tmp_path, reduce="median")
    with pytest.raises(ValueError, match=r"reduce\['loss'\]"):
        SummaryWriter(tmp_path, reduce={"loss": "avg"})
    with pytest.raises(TypeError, match="reduce"):
        SummaryWriter(tmp_path, reduce=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ranks='zero'"):
        SummaryWriter(tmp_path, ranks="each", reduce="mean")
    with pytest.raises(ValueError, match="sync_timeout"):
        SummaryWriter(tmp_path, reduce="mean", sync_timeout=0)
    with pytest.raises(TypeError, match="sync_timeout"):
        SummaryWriter(tmp_path, reduce="mean", sync_timeout="5")  # type: ignore[arg-type]


def test_reduction_without_a_process_group_is_a_clear_error(
    tmp_path: Path, rank_one: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "0")  # rank 0 of 2, which writes
    w = SummaryWriter(tmp_path, reduce="mean")
    w.add_scalar("loss", 0.5, 1)
    with pytest.raises(RankSyncError, match="init_process_group"):
        w.sync()
    monkeypatch.delenv("RANK")  # a single process after all: the queued value is not lost
    monkeypatch.delenv("WORLD_SIZE")
    w.close()
    assert [(s.step, s.value) for s in load_run(tmp_path).Scalars("loss")] == [(1, 0.5)]


def test_stat_windows_of_ranks_combine_by_the_aggregations_they_carry() -> None:
    nan = float("nan")

    def window(rank: int, count: float, mean: float, wall: float) -> tuple[int, list[float]]:
        # used, step, count, sum, min, max, last, mean, wall (a Stat without SUM/MIN/MAX/VALUE)
        return rank, [1.0, 0.0, count, nan, nan, nan, nan, mean, wall]

    key = ("scalar", "step_time", STAT)
    weighted = _combine({(key, 0): [window(0, 3.0, 1.0, 5.0), window(1, 1.0, 5.0, 6.0)]})
    assert weighted == [
        ("scalar", "step_time.count", 0, 4.0, 6.0),
        ("scalar", "step_time.mean", 0, 2.0, 6.0),
        ("scalar", "step_time.slowest_rank", 0, 1.0, 6.0),
    ]
    means_only = _combine({(key, 0): [window(0, nan, 4.0, 5.0), window(1, nan, 2.0, 6.0)]})
    assert means_only == [
        ("scalar", "step_time.mean", 0, 3.0, 6.0),
        ("scalar", "step_time.slowest_rank", 0, 0.0, 6.0),
    ]


def test_single_process_reduces_its_own_values_and_never_imports_torch(tmp_path: Path) -> None:
    code = """
import os, sys
for var in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
    os.environ.pop(var, None)
from tallyboard import SummaryWriter
w = SummaryWriter(sys.argv[1], reduce={"loss": "mean", "*": "max"})
for step in range(3):
    w.add_scalar("loss", 1.0, step)
    w.add_scalar("loss", 3.0, step)
    w.add_scalar("acc", 0.5 + step, step)
    w.add_scalar("acc", 0.25, step)
w.close()
os.environ["RANK"], os.environ["WORLD_SIZE"] = "1", "2"
SummaryWriter(sys.argv[1] + "_silent").add_scalar("x", 1.0, 0)
assert "torch" not in sys.modules, "rank detection imported torch"
"""
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], check=True, timeout=60)
    acc = load_run(tmp_path / "run")
    assert [(s.step, s.value) for s in acc.Scalars("loss")] == [(0, 2.0), (1, 2.0), (2, 2.0)]
    assert [(s.step, s.value) for s in acc.Scalars("acc")] == [(0, 0.5), (1, 1.5), (2, 2.5)]
    assert not (tmp_path / "run_silent").exists()


def test_summary_record_names_its_file_with_the_rank(tmp_path: Path, rank_one: None) -> None:
    with SummaryRecord(str(tmp_path)) as record:
        record.add_value("scalar", "loss", np.float32(0.5))
        record.record(1)
    (name,) = [n for n in os.listdir(tmp_path) if ".summary." in n]
    assert name.endswith(f".1.{platform.node()}_MS")  # device_id 1: this rank


def test_cross_rank_stat_handler_needs_a_tallyboard_writer(tmp_path: Path) -> None:
    class OnlyAddScalar:
        def add_scalar(self, *args: object, **kwargs: object) -> None:
            pass

    with pytest.raises(TypeError, match="across_ranks=True needs a tallyboard SummaryWriter"):
        TensorboardEventHandler(OnlyAddScalar(), across_ranks=True)
    with SummaryWriter(tmp_path) as w, pytest.raises(TypeError, match="torch_compat=False"):
        TensorboardEventHandler(w, across_ranks=True, torch_compat=True)
