"""Shared fixtures: a fresh log directory and TensorBoard's own reader; and which test modules
pytest-xdist keeps on one worker."""

from __future__ import annotations

import functools
import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

# Tests that press Ctrl-C on a process they start (SIGINT to `tallyboard board`) stand for a
# user at a terminal, where the process in the foreground gets the key. A suite started with
# SIGINT ignored (a script's `cmd &` without job control ignores it, and so every process
# started under it, Python's handler included) would otherwise test a press that nothing can see.
if (
    threading.current_thread() is threading.main_thread()
    and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
):
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Modules whose tests share a module-scoped setup (runs written by Keras, Lightning, Hugging Face,
# MindSpore and the demo; TensorBoard or tallyboard board; a Ray runtime; a fitted model; the built
# site or distributions): with pytest-xdist (`-n auto`) the tests of each run on one worker, so
# that setup is made once instead of once per worker; every other test is handed out on its own.
# A module is one of them when its source defines a module- or session-scoped fixture (so a new
# one needs no list), or when it is named here because it takes such a fixture from elsewhere.
# (xdist's own `--dist loadgroup` does this with marks, but its grouping silently does nothing on
# pytest 9.2, pytest-dev/pytest-xdist#1386: hence a scheduler of our own, below.)
ONE_WORKER_MODULES = {"test_quantiles_example", "test_world_fixtures"}
# Modules whose own module fixture is cheap next to their many independent tests: spread out.
SPREAD_MODULES = {"test_docs"}  # a moto S3 server for its few s3 blocks
# Tests that start a local Ray runtime (Ray allows its raylet a fixed 30 s to start): one after
# another on one worker, never two runtimes starting side by side on a 2-core host.
ONE_AFTER_ANOTHER = {
    "ray": ("test_engine_ray.py", "test_raytune.py", "[docs/sweeps-beyond-one-machine.md:")
}
_SHARED_FIXTURE = re.compile(r"@pytest\.fixture\([^)]*scope=[\"'](module|session)[\"']")


@functools.cache
def _one_worker(module: str) -> bool:
    if module in ONE_WORKER_MODULES:
        return True
    if module in SPREAD_MODULES:
        return False
    path = Path(__file__).with_name(module + ".py")
    return path.is_file() and bool(_SHARED_FIXTURE.search(path.read_text(encoding="utf-8")))


# Modules holding the longest tests (a minute or more of waiting on servers and deadlines on a
# loaded 2-core machine): started first, so that no worker begins one when the rest is done.
FIRST_MODULES = (
    "test_sync",
    "test_browser_dashboards",
    "test_mindspore_tensorboard",
    "test_raytune",
    "test_keras_parity",
    "test_summary_collector",
    "test_browser_board",
    "test_docs_site",
    "test_faces_visible",
)


def _module(nodeid: str) -> str:
    return Path(nodeid.split("::", 1)[0]).stem


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first (a stable sort: the same order in every xdist worker)."""
    rank = {name: i for i, name in enumerate(FIRST_MODULES)}
    items.sort(key=lambda item: rank.get(_module(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Hand out ONE_WORKER_MODULES a module at a time, each ONE_AFTER_ANOTHER group whole, and
    every other test one at a time."""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None  # a --dist the caller chose
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for scope, parts in ONE_AFTER_ANOTHER.items():
                if any(part in nodeid for part in parts):
                    return scope
            module = _module(nodeid)
            return module if _one_worker(module) else nodeid

    return Scheduling(config, log)


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
