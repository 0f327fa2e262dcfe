"""SystemMetrics: sampled Stats reach a real TensorboardEventHandler; ranks; stop; bad input."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
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
        time.sleep(0.15)  # one sample, at stop (CPU use needs 0.1 s at least)
    assert _names(events) == {f"system/rank3/process/{m}.value" for m in PROCESS}
    events.clear()
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("LOCAL_RANK", "0")
    with SystemMetrics(interval=60, process=False, gpu=False):
        time.sleep(0.15)
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
        ({"writer": object()}, TypeError, "writer"),
        ({"writer": SimpleNamespace(add_scalar=print), "window": 60.0}, ValueError, "window"),
        ({"step": 5}, TypeError, "step"),
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


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_samples_written_at_the_training_step_with_plain_tags_and_no_first_sample_spike(
    tmp_path: Path,
) -> None:
    """writer= and step=: tags as people name them, steps of the training, CPU % primed."""

    class Trainer:  # anything with a global_step, as Lightning's Trainer or HF's TrainerState
        global_step = 0

    trainer = Trainer()
    writer = SummaryWriter(tmp_path / "run")
    process_cpu = []
    with SystemMetrics(interval=0.2, writer=writer, step=trainer, gpu=False) as sampler:
        for step in range(100, 106):
            trainer.global_step = step
            before = time.process_time()
            _spin(0.25)  # one thread busy: the process uses at most one core's worth
            process_cpu.append(100 * (time.process_time() - before) / 0.25)
    writer.close()
    acc = load_run(tmp_path / "run")
    tags = set(acc.Tags()["scalars"])
    assert {f"system/process/{m}" for m in PROCESS} | {f"system/host/{m}" for m in HOST} <= tags
    assert not any(tag.endswith(".value") for tag in tags)
    host = acc.Scalars("system/host/cpu_percent")
    steps = [e.step for e in host]
    rss = acc.Scalars("system/process/rss_mib")
    assert len(rss) == sampler.samples >= 5 and steps == sorted(steps)
    # the last sample (at stop) leaves out a CPU reading over less than 0.1 s
    assert sampler.samples - 1 <= len(steps) <= sampler.samples
    assert set(steps) <= set(range(100, 106))  # the training's steps, not sample indices
    first = host[0].value
    assert 0 < first <= 100  # was 0.0: psutil's first reading measures nothing
    proc = [e.value for e in acc.Scalars("system/process/cpu_percent")]
    assert 0 < proc[0] <= 120  # was 139% for one busy thread
    assert max(proc) <= 120
    # the mean share of a core matches what the process itself measured, within noise
    assert abs(sum(proc) / len(proc) - sum(process_cpu) / len(process_cpu)) < 35
    rates = {t for t in tags if t.endswith("_per_s")}
    if psutil.disk_io_counters() is not None:  # the counters are primed: the first sample has them
        assert len(acc.Scalars("system/host/disk_read_mib_per_s")) == len(rss)
    assert {"system/host/net_recv_mib_per_s", "system/host/net_sent_mib_per_s"} <= rates


def test_a_callable_step_source_and_a_step_source_that_fails(tmp_path: Path) -> None:
    writer = SummaryWriter(tmp_path / "run")
    with SystemMetrics(interval=3600, writer=writer, step=lambda: 42, host=False, gpu=False):
        time.sleep(0.12)
    with pytest.warns(RuntimeWarning, match="sampling goes on"):
        sampler = SystemMetrics(interval=0.02, writer=writer, step=lambda: "7", host=False).start()
        deadline = time.monotonic() + 30
        while sampler.samples < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        with pytest.raises(TypeError, match="not an int"):
            sampler.stop()
    writer.close()
    acc = load_run(tmp_path / "run")
    assert [e.step for e in acc.Scalars("system/process/rss_mib")] == [42]
