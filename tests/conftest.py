"""Shared fixtures: a fresh log directory and TensorBoard's own reader."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    """An empty directory to write a run into."""
    path = tmp_path / "run"
    path.mkdir()
    return path


def load_run(path: os.PathLike[str] | str) -> Any:
    """TensorBoard's EventAccumulator over one run directory, nothing sampled away."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(
        str(path),
        size_guidance={
            "scalars": 0,
            "tensors": 0,
            "images": 0,
            "audio": 0,
            "histograms": 0,
            "compressedHistograms": 0,
        },
    )
    acc.Reload()
    return acc


def event_files(path: os.PathLike[str] | str) -> list[Path]:
    """The event files directly in ``path``, in name order."""
    return sorted(p for p in Path(path).iterdir() if "tfevents" in p.name)


def raw_events(path: os.PathLike[str] | str) -> list[Any]:
    """Every Event of every file in ``path`` parsed with TensorBoard's own protos and reader."""
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.compat.proto import event_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: F401

    events = []
    for f in event_files(path):
        for ev in event_file_loader.RawEventFileLoader(str(f)).Load():
            events.append(event_pb2.Event.FromString(ev))
    return events
