"""SystemMetrics: sampled Stats reach a real TensorboardEventHandler; ranks; stop; bad input."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import load_run
from tallyboard import SummaryWriter
from tallyboard.monitor import (
    MAX,
    MEAN,
    Event,
    TensorboardEventHandler,
    register_event_handler,
    unregister_event_handler,
)
from tallyboard_system import SystemMetrics, _nvml

PROCESS = {"cpu_percent", "rss_mib", "threads"}
HOST = {"cpu_percent", "memory_used_percent", "memory_available_mib"}
GPU = {"utilization_percent", "memory_used_mib", "memory_used_percent"}


@pytest.fixture
def events() -> Iterator[list[Event]]:
    got: list[Event] = []
    handle = register_event_handler(got.append)
    yield got
    unregister_event_handler(handle)


@pytest.fixture(autouse=True)
def single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(var, raising=False)


def _names(events: list[Event]) -> set[str]:
    return {key for event in events for key in event.data}


def _gpu_present() -> bool:
    nvml = _nvml()
    if nvml is None:
        return False
    nvml.nvmlShutdown()
    return True


def test_samples_reach_tensorboard_through_the_registered_handler(tmp_path: Path) -> None:
    writer = SummaryWriter(tmp_path / "run")
    handle = register_event_handler(TensorboardEventHandler(writer))
    try:
        with SystemMetrics(interval=0.05) as sampler:
            deadline = time.monotonic() + 30
            while sampler.samples < 4 and time.monotonic() < deadline:
                time.sleep(0.02)
    finally:
        unregister_event_handler(handle)
        writer.close()
    assert sampler.samples >= 4
    acc = load_run(tmp_path / "run")
    tags = set(acc.Tags()["scalars"])
    expected = {f"system/process/{m}.value" for m in PROCESS}
    expected |= {f"system/host/{m}.value" for m in HOST}
    assert expected <= tags
    if psutil.disk_io_counters() is not None:  # rates start from the second sample
        assert {
            "system/host/disk_read_mib_per_s.value",
            "system/host/disk_write_mib_per_s.value",
        } <= tags
    assert {"system/host/net_recv_mib_per_s.value", "system/host/net_sent_mib_per_s.value"} <= tags
    gpu_tags = {t for t in tags if t.startswith("system/gpu")}
    if _gpu_present():
        assert {f"system/gpu0/{m}.value" for m in GPU} <= gpu_tags
    else:
        assert gpu_tags == set()  # no GPU: those stats are simply absent
    rss = acc.Scalars("system/process/rss_mib.value")
    assert [e.step for e in rss] == list(range(sampler.samples))
    now_mib = psutil.Process().memory_info().rss / 2**20
    assert 0.5 * now_mib < rss[-1].value < 2 * now_mib
    threads = acc.Scalars("system/process/threads.value")
    assert all(e.value >= 2 for e in threads)  # the caller and the sampler at least
    available = acc.Scalars("system/host/memory_available_mib.value")[-1].value
    assert 0 < available <= psutil.virtual_memory().total / 2**20


def test_window_aggregates_samples_into_one_event_per_window(events: list[Event]) -> None:
    started = time.monotonic()
    with SystemMetrics(interval=0.01, window=0.25, aggregations=(MEAN, MAX), gpu=False):
        time.sleep(0.6)
    elapsed = time.monotonic() - started
    rss = [e.data for e in events if "system/process/rss_mib.mean" in e.data]
    assert rss and all(
        set(d) == {"system/process/rss_mib.mean", "system/process/rss_mib.max"} for d in rss
    )
    assert all(d["system/process/rss_mib.max"] >= d["system/process/rss_mib.mean"] for d in rss)
    # one event per 0.25 s window the samples fell in, the last one emitted by stop()
    assert 2 <= len(rss) <= math.ceil(elapsed / 0.25) + 1


def test_ranks_sample_their_process_and_only_local_rank_zero_the_host(
    monkeypatch: pytest.MonkeyPatch, events: list[Event]
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    with SystemMetrics(interval=60):
        pass  # one sample at start
    assert _names(events) == {f"system/rank3/process/{m}.value" for m in PROCESS}
    events.clear()
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("LOCAL_RANK", "0")
    with SystemMetrics(interval=60, process=False, gpu=False):
        pass
    assert {f"system/rank2/host/{m}.value" for m in HOST} <= _names(events)
    assert all(name.startswith("system/rank2/host/") for name in _names(events))


def test_stop_returns_promptly_even_with_a_long_interval() -> None:
    sampler = SystemMetrics(interval=3600).start()
    assert sampler.running
    started = time.monotonic()
    sampler.stop()
    assert time.monotonic() - started < 5
    assert not sampler.running and sampler.samples == 1
    sampler.stop()  # idempotent


def test_a_failing_handler_does_not_stop_sampling_and_is_raised_by_stop() -> None:
    def broken(event: Event) -> Any:
        raise RuntimeError("handler broke")

    handle = register_event_handler(broken)
    try:
        with pytest.warns(RuntimeWarning, match="sampling goes on"):
            sampler = SystemMetrics(interval=0.02, host=False, gpu=False).start()
            deadline = time.monotonic() + 30
            while sampler.samples < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            with pytest.raises(RuntimeError, match="handler broke"):
                sampler.stop()
    finally:
        unregister_event_handler(handle)
    assert sampler.samples >= 3


@pytest.mark.parametrize(
    ("kwargs", "error", "word"),
    [
        ({"interval": 0}, ValueError, "interval"),
        ({"interval": -1.0}, ValueError, "interval"),
        ({"interval": float("nan")}, ValueError, "interval"),
        ({"interval": "1"}, TypeError, "interval"),
        ({"interval": 1.0, "window": 0.5}, ValueError, "window"),
        ({"aggregations": ("mean",)}, TypeError, "aggregations"),
        ({"prefix": ""}, TypeError, "prefix"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs: dict[str, Any], error: type, word: str) -> None:
    with pytest.raises(error, match=word):
        SystemMetrics(**kwargs)


def test_starting_twice_is_refused() -> None:
    with SystemMetrics(interval=3600) as sampler, pytest.raises(RuntimeError, match="already"):
        sampler.start()


def test_integrations_import_nothing_heavy_until_used() -> None:
    import subprocess
    import sys

    code = (
        "import sys, tallyboard, tallyboard_system, tallyboard_keras, tallyboard_mlflow\n"
        "tallyboard.get_registry()\n"
        "heavy = {'psutil', 'pynvml', 'mlflow', 'keras', 'tensorflow'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KERAS_BACKEND": "torch"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
