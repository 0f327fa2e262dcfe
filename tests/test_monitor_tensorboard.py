"""TensorboardEventHandler: Stat events become scalars in TensorBoard event files."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from conftest import load_run
from monitor_support import clean_registry  # noqa: F401 - autouse fixture
from tallyboard import SummaryWriter
from tallyboard.monitor import (
    COUNT,
    STAT_EVENT,
    SUM,
    Event,
    Stat,
    TensorboardEventHandler,
    log_event,
    register_event_handler,
    unregister_event_handler,
)


class Recorder:
    def __init__(self):
        self.calls = []

    def add_scalar(self, *args, **kwargs):
        self.calls.append((args, kwargs))


def scalars(run, tag):
    return [(e.step, e.value) for e in run.Scalars(tag)]


def test_torch_end_to_end_scenario(logdir):
    writer = SummaryWriter(logdir)
    handle = register_event_handler(TensorboardEventHandler(writer))
    try:
        s = Stat("asdf", [SUM, COUNT], timedelta(days=3650), max_samples=5)
        for i in range(10):
            s.add(i)
        s.close()
    finally:
        unregister_event_handler(handle)
        writer.close()
    run = load_run(logdir)
    assert scalars(run, "asdf.sum") == [(0, 10.0)]
    assert scalars(run, "asdf.count") == [(0, 5.0)]


def test_default_step_is_per_tag_count(logdir):
    writer = SummaryWriter(logdir)
    handler = TensorboardEventHandler(writer)
    ts = datetime(2024, 1, 2, 3, 4, 5)
    for i in range(3):
        handler(Event(STAT_EVENT, ts, {"a": float(i)}))
    handler(Event(STAT_EVENT, ts, {"b": 7}))
    handler(Event("other", ts, {"a": 100.0}))  # ignored
    writer.close()
    run = load_run(logdir)
    assert scalars(run, "a") == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert scalars(run, "b") == [(0, 7.0)]


def test_hand_built_event_walltime(logdir):
    writer = SummaryWriter(logdir)
    register_event_handler(TensorboardEventHandler(writer))
    ts = datetime(2024, 1, 2, 3, 4, 5, 600000, tzinfo=timezone.utc)
    log_event(Event(STAT_EVENT, ts, {"manual": 7}))
    writer.close()
    (point,) = load_run(logdir).Scalars("manual")
    assert point.value == 7.0 and point.step == 0
    assert point.wall_time == pytest.approx(1704164645.6)


def test_naive_timestamp_is_local_time():
    rec = Recorder()
    ts = datetime(2024, 1, 2, 3, 4, 5)
    TensorboardEventHandler(rec)(Event(STAT_EVENT, ts, {"x": 1.0}))
    assert rec.calls == [(("x", 1.0), {"global_step": 0, "walltime": ts.timestamp()})]


def test_torch_compat_makes_torchs_exact_call():
    rec = Recorder()
    handler = TensorboardEventHandler(rec, torch_compat=True)
    ts = datetime(2024, 1, 2, 3, 4, 5)
    handler(Event(STAT_EVENT, ts, {"x": 1.0, "y": 2.0}))
    handler(Event(STAT_EVENT, ts, {"x": 3.0}))
    expected = {"walltime": ts.timestamp()}
    assert rec.calls == [(("x", 1.0), expected), (("y", 2.0), expected), (("x", 3.0), expected)]


def test_same_calls_as_torch_handler():
    import torch.monitor as tm

    ours, theirs = Recorder(), Recorder()
    ts = datetime(2024, 1, 2, 3, 4, 5)
    TensorboardEventHandler(ours, torch_compat=True)(Event(STAT_EVENT, ts, {"k": 1.5}))
    tm.TensorboardEventHandler(theirs)(tm.Event(STAT_EVENT, ts, {"k": 1.5}))
    assert ours.calls == theirs.calls
    assert TensorboardEventHandler(Recorder())._writer is not None


def test_str_value_propagates_from_log_event(logdir):
    writer = SummaryWriter(logdir)
    register_event_handler(TensorboardEventHandler(writer))
    try:
        with pytest.raises((TypeError, ValueError)):
            log_event(Event(STAT_EVENT, datetime.now(), {"bad": "text"}))
    finally:
        writer.close()


def test_writer_without_add_scalar_rejected():
    with pytest.raises(TypeError, match="writer"):
        TensorboardEventHandler(object())


def test_step_counter_is_thread_safe():
    rec = Recorder()
    handler = TensorboardEventHandler(rec)
    ts = datetime(2024, 1, 2)

    def worker():
        for _ in range(500):
            handler(Event(STAT_EVENT, ts, {"t": 1.0}))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(kw["global_step"] for _, kw in rec.calls) == list(range(2000))
