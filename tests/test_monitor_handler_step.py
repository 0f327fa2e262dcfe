"""TensorboardEventHandler(step=...): Stat windows written at the caller's training step."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from conftest import load_run
from monitor_support import clean_registry  # noqa: F401 - autouse fixture
from tallyboard import SummaryWriter
from tallyboard.monitor import (
    MAX,
    STAT_EVENT,
    Event,
    Stat,
    TensorboardEventHandler,
    register_event_handler,
    unregister_event_handler,
)


def test_step_callable_sets_each_events_step(logdir):
    step = 0
    with SummaryWriter(logdir) as writer:
        handler = TensorboardEventHandler(writer, step=lambda: step)
        ts = datetime(2024, 1, 2, 3, 4, 5)
        for step in (40, 90, 140):
            handler(Event(STAT_EVENT, ts, {"t.mean": float(step), "t.max": 1.0}))
        handler(Event("other", ts, {"t.mean": 5.0}))  # not a Stat event: ignored
    run = load_run(logdir)
    assert [(e.step, e.value) for e in run.Scalars("t.mean")] == [
        (40, 40.0),
        (90, 90.0),
        (140, 140.0),
    ]
    assert [e.step for e in run.Scalars("t.max")] == [40, 90, 140]


def test_stat_window_lands_at_the_step_current_when_it_closed(logdir):
    step = 0
    writer = SummaryWriter(logdir)
    handle = register_event_handler(TensorboardEventHandler(writer, step=lambda: step))
    try:
        full = Stat("full", [MAX], timedelta(days=1), max_samples=4)
        whole = Stat("whole", [MAX], timedelta(days=1))
        for step in range(10):
            full.add(step)  # the 4th add (step 3) closes its window; later ones are dropped
            whole.add(step)  # its window closes with close(), after the loop
        full.close()
        whole.close()
    finally:
        unregister_event_handler(handle)
        writer.close()
    run = load_run(logdir)
    assert [(e.step, e.value) for e in run.Scalars("full.max")] == [(3, 3.0)]
    assert [(e.step, e.value) for e in run.Scalars("whole.max")] == [(9, 9.0)]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"step": 5}, "step must be a callable"),
        ({"step": lambda: 0, "torch_compat": True}, "cannot be combined"),
        ({"step": lambda: 0, "across_ranks": True}, "cannot be combined"),
    ],
)
def test_step_option_bad_input_says_what_to_give(logdir, kwargs, message):
    with SummaryWriter(logdir) as writer, pytest.raises(TypeError, match=message):
        TensorboardEventHandler(writer, **kwargs)


def test_an_error_in_the_step_callable_reaches_the_caller(logdir):
    def broken() -> int:
        raise RuntimeError("no trainer yet")

    with SummaryWriter(logdir) as writer:
        handler = TensorboardEventHandler(writer, step=broken)
        with pytest.raises(RuntimeError, match="no trainer yet"):
            handler(Event(STAT_EVENT, datetime(2024, 1, 2), {"t.max": 1.0}))
