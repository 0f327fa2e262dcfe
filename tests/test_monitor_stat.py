"""Stat: constructor checks, the window state machine (fake clock), NaN, close, threads."""

from __future__ import annotations

import copy
import gc
import math
import pickle
import random
import threading
from datetime import timedelta

import numpy as np
import pytest
from monitor_support import clean_registry, run_with_timeout  # noqa: F401 - clean_registry: autouse
from tallyboard.monitor import (
    COUNT,
    MAX,
    MEAN,
    MIN,
    STAT_EVENT,
    SUM,
    VALUE,
    Stat,
    register_event_handler,
)
from tallyboard.monitor import handlers as handlers_mod
from tallyboard.monitor import stat as stat_mod

LONG = timedelta(days=3650)  # real-clock tests never see a window boundary
SEC = timedelta(seconds=1)
ALL = [VALUE, MEAN, COUNT, SUM, MAX, MIN]
MS = 1_000_000
BASE = 3 * 10**14  # ns; a multiple of every window size used below
UNLIMITED = 2**63 - 1
#: The lock-free path (unlimited) and the locked path (a max_samples never reached).
PATHS = [UNLIMITED, 10**9]


class Clock:
    """A fake ``monotonic_ns``."""

    def __init__(self, ns: int = BASE) -> None:
        self.ns = ns

    def __call__(self) -> int:
        return self.ns

    def advance_ms(self, ms: float) -> None:
        self.ns += int(ms * MS)


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(stat_mod, "monotonic_ns", c)
    return c


@pytest.fixture
def events():
    got = []
    register_event_handler(got.append)
    return got


def datas(events, name=None):
    return [e.data for e in events if name is None or any(k.startswith(name + ".") for k in e.data)]


# -- constructor ----------------------------------------------------------------------------


def test_keywords_and_properties():
    s = Stat(name="n", aggregations=[SUM], window_size=LONG, max_samples=5)
    assert s.name == "n" and s.count == 0
    assert s.get() == {SUM: 0.0}
    with pytest.raises(AttributeError):
        s.name = "m"
    with pytest.raises(AttributeError):
        s.count = 3
    with pytest.raises(AttributeError):
        s.other = 1
    with pytest.raises(AttributeError):
        s.add = print
    s.close()


def test_identity_equality_not_picklable_or_copyable():
    a = Stat("a", [SUM], LONG)
    b = Stat("a", [SUM], LONG)
    assert a != b and a == a and hash(a) != hash(b)
    for fn in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError):
            fn(a)
    a.close()
    b.close()


@pytest.mark.parametrize("name", [1, None, 1.5, ["a"]])
def test_name_type(name):
    with pytest.raises(TypeError, match="name"):
        Stat(name, [SUM], LONG)


def test_bytes_name_is_decoded():
    with Stat(b"x", [SUM], LONG) as s:
        assert s.name == "x"


@pytest.mark.parametrize(
    "aggs", [iter([SUM]), (a for a in [SUM]), SUM, "SUM", [4], [None], 4, None]
)
def test_aggregations_type(aggs):
    with pytest.raises(TypeError, match="aggregations"):
        Stat("x", aggs, LONG)


def test_aggregations_containers_and_duplicates(clock, events):
    for aggs in ([SUM, SUM, COUNT], (COUNT, SUM), {SUM, COUNT}, frozenset({SUM, COUNT})):
        with Stat("d", aggs, SEC) as s:
            assert list(s.get()) == [COUNT, SUM]  # declaration order
            s.add(2)
    assert datas(events) == [{"d.count": 1.0, "d.sum": 2.0}] * 4


@pytest.mark.parametrize("ws", [1, True, None, "1", 0, 10**9])
def test_window_size_type(ws):
    with pytest.raises(TypeError, match="window_size"):
        Stat("x", [SUM], ws)


@pytest.mark.parametrize(
    "ws",
    [
        0.0,
        0.0009,
        -1.0,
        timedelta(0),
        timedelta(microseconds=999),
        timedelta(seconds=-1),
        math.inf,
        -math.inf,
        math.nan,
    ],
)
def test_window_size_value(ws):
    with pytest.raises(ValueError, match="window_size"):
        Stat("x", [SUM], ws)


def test_max_samples_accepts_bool_and_index_types(clock, events):
    for limit in (True, np.int64(1)):
        s = Stat("mx", [SUM], LONG, limit)
        s.add(1)
        s.add(2)
        s.close()
    assert datas(events) == [{"mx.sum": 1.0}] * 2


def test_window_size_accepts_float_subclasses():
    with Stat("x", [SUM], np.float64(1.0)):
        pass


@pytest.mark.parametrize("ms", [1.5, None, "3", 2**63, -(2**63) - 1])
def test_max_samples_type(ms):
    with pytest.raises(TypeError, match="max_samples"):
        Stat("x", [SUM], LONG, ms)


# -- windows with a fake clock --------------------------------------------------------------


@pytest.mark.parametrize("limit", PATHS)
def test_window_conversion_float_seconds_truncates(clock, events, limit):
    with Stat("w", [COUNT], 1.5, limit) as s:  # 1500 ms; BASE is aligned to it
        s.add(1)
        clock.advance_ms(1499.999)
        s.add(1)
        assert events == []
        clock.advance_ms(0.001)
        s.add(1)
        assert datas(events) == [{"w.count": 2.0}]


@pytest.mark.parametrize("limit", PATHS)
def test_window_conversion_timedelta_truncates(clock, events, limit):
    with Stat("w", [COUNT], timedelta(microseconds=1500), limit) as s:  # 1 ms
        s.add(1)
        clock.advance_ms(0.9)
        s.add(1)
        assert events == []
        clock.advance_ms(0.1)
        s.add(1)
        assert datas(events) == [{"w.count": 2.0}]


@pytest.mark.parametrize("limit", PATHS)
def test_windows_align_to_monotonic_epoch_not_creation(clock, events, limit):
    clock.advance_ms(700)
    with Stat("a", [COUNT], SEC, limit) as s:
        s.add(1)
        clock.advance_ms(299)
        s.add(1)
        assert events == []
        clock.advance_ms(1)
        s.add(1)
        assert datas(events) == [{"a.count": 2.0}]
        assert s.count == 1


def test_max_samples_worked_example(clock, events):
    s = Stat("asdf", (SUM, COUNT), LONG, max_samples=3)
    s.add(1)
    s.add(2)
    assert s.count == 2 and s.get() == {SUM: 0.0, COUNT: 0.0}
    s.add(3)
    assert s.count == 0 and s.get() == {SUM: 6.0, COUNT: 3.0}
    assert datas(events) == [{"asdf.sum": 6.0, "asdf.count": 3.0}]
    assert events[0].name == STAT_EVENT
    s.add(4)
    s.add(5)
    assert s.count == 0 and s.get() == {SUM: 6.0, COUNT: 3.0} and len(events) == 1
    del s
    gc.collect()
    assert len(events) == 1


@pytest.mark.parametrize("limit", [6, UNLIMITED])
def test_all_aggregations_worked_values(clock, events, limit):
    s = Stat("m", ALL, LONG, limit)
    for v in (0, 5, -5, -6, 9, 2):
        s.add(v)
    s.close()
    expected = {VALUE: 2.0, MEAN: 0.8333333333333334, COUNT: 6.0, SUM: 5.0, MAX: 9.0, MIN: -6.0}
    assert s.get() == expected
    assert datas(events) == [{"m." + a.name.lower(): v for a, v in expected.items()}]
    assert all(type(v) is float for v in events[0].data.values())


@pytest.mark.parametrize("limit", PATHS)
def test_mean_of_1_2_2(clock, events, limit):
    with Stat("mean", [MEAN], LONG, limit) as s:
        for v in (1, 2, 2):
            s.add(v)
    assert datas(events) == [{"mean.mean": 1.6666666666666667}]


def test_max_samples_across_rollover(clock, events):
    s = Stat("r", (SUM, COUNT), SEC, max_samples=2)
    for v in (1, 2, 3):
        s.add(v)
    assert datas(events) == [{"r.sum": 3.0, "r.count": 2.0}]
    clock.advance_ms(1000)
    assert s.get() == {SUM: 3.0, COUNT: 2.0}
    s.add(4)
    assert s.count == 1 and s.get() == {SUM: 0.0, COUNT: 0.0} and len(events) == 1
    s.add(5)
    assert datas(events)[1] == {"r.sum": 9.0, "r.count": 2.0}
    s.close()
    assert len(events) == 2


@pytest.mark.parametrize("limit", PATHS)
def test_idle_gap_emits_one_event(clock, events, limit):
    s = Stat("idle", (SUM, COUNT), SEC, limit)
    s.add(1)
    s.add(2)
    clock.advance_ms(3500)
    assert events == [] and s.count == 2  # stale until the next add
    s.add(4)
    assert datas(events) == [{"idle.sum": 3.0, "idle.count": 2.0}]
    assert s.count == 1 and s.get() == {SUM: 3.0, COUNT: 2.0}
    s.close()
    assert datas(events)[1] == {"idle.sum": 4.0, "idle.count": 1.0}


@pytest.mark.parametrize("limit", [1, 0, -5])
def test_max_samples_at_most_one_behaves_like_one(clock, events, limit):
    s = Stat("one", [SUM], LONG, limit)
    s.add(7)
    s.add(8)
    assert datas(events) == [{"one.sum": 7.0}] and s.count == 0
    s.close()


@pytest.mark.parametrize("limit", PATHS)
def test_nan_rules(clock, events, limit):
    def run(values):
        with Stat("nan", [MIN, MAX, SUM, MEAN], LONG, limit) as s:
            for v in values:
                s.add(v)
        return s.get()

    got = run([math.nan, 1, 2])
    assert math.isnan(got[MIN]) and math.isnan(got[MAX]) and math.isnan(got[SUM])
    got = run([1, math.nan, 2])
    assert got[MIN] == 1.0 and got[MAX] == 2.0 and math.isnan(got[SUM]) and math.isnan(got[MEAN])


@pytest.mark.parametrize("limit", PATHS)
def test_value_aggregation_works(clock, events, limit):
    with Stat("v", [VALUE], LONG, limit) as s:
        s.add(3)
        s.add(-1.5)
    assert datas(events) == [{"v.value": -1.5}]
    assert s.get() == {VALUE: -1.5}


@pytest.mark.parametrize("name,key", [("", ".sum"), ("a.b", "a.b.sum")])
def test_names_used_verbatim(clock, events, name, key):
    with Stat(name, [SUM], LONG) as s:
        s.add(1)
    assert datas(events) == [{key: 1.0}]


def test_no_aggregations_still_emits(clock, events):
    with Stat("none", [], SEC) as s:
        assert s.get() == {}
        s.add(1)
        clock.advance_ms(1000)
        s.add(1)
    assert [e.data for e in events] == [{}, {}]


def test_event_timestamp_is_wall_clock_now(clock, events):
    import time

    with Stat("ts", [SUM], LONG) as s:
        s.add(1)
        before = time.time()
    after = time.time()
    assert before - 0.01 <= events[0].timestamp.timestamp() <= after + 0.01
    assert events[0].timestamp.tzinfo is None


# -- add() input ----------------------------------------------------------------------------


@pytest.mark.parametrize("limit", PATHS)
def test_add_accepts_numbers(clock, events, limit):
    import torch

    values = [1, 2.5, True, np.float32(0.5), np.int64(3), torch.tensor(4.0), 2**70, math.inf]
    with Stat("in", [SUM, COUNT, MAX], LONG, limit) as s:
        for v in values:
            assert s.add(v) is None
        s.add(v=1)
    assert datas(events) == [{"in.count": 9.0, "in.sum": math.inf, "in.max": math.inf}]


@pytest.mark.parametrize("bad", ["1", b"1", bytearray(b"1"), None, [1], {}, object()])
def test_add_rejects_non_numbers(bad):
    with Stat("x", [SUM], LONG) as s:
        with pytest.raises(TypeError, match="v"):
            s.add(bad)
        assert s.count == 0


def test_add_rejects_multi_element_tensor():
    import torch

    with Stat("x", [SUM], LONG) as s, pytest.raises(TypeError):
        s.add(torch.tensor([1.0, 2.0]))


# -- a reference model of the spec's state machine ------------------------------------------


class Model:
    """specs/monitor.md §3.3, written as plainly as possible."""

    def __init__(self, wms, limit):
        self.wms, self.limit = wms, max(1, limit)
        self.O = self.L = 0
        self.open = [0.0, 0.0, 0.0, 0.0, 0]  # value, sum, min, max, count
        self.closed = list(self.open)
        self.events = []

    def check(self, w):
        if (w != self.O or self.open[4] >= self.limit) and w != self.L:
            self.closed, self.open = self.open, [0.0, 0.0, 0.0, 0.0, 0]
            if self.closed[4]:
                self.events.append(self.data())
            self.L, self.O = self.O, w

    def data(self):
        value, total, lo, hi, n = self.closed
        return {
            "value": value,
            "mean": total / n if n else 0.0,
            "count": float(n),
            "sum": total,
            "max": hi,
            "min": lo,
        }

    def add(self, now_ns, v):
        w = now_ns // MS // self.wms + 1
        self.check(w)
        if w == self.L:
            return
        o = self.open
        o[0] = v
        o[1] += v
        if o[4] == 0 or o[3] < v:
            o[3] = v
        if o[4] == 0 or o[2] > v:
            o[2] = v
        o[4] += 1
        self.check(w)

    def close(self):
        self.closed, self.open = self.open, [0.0, 0.0, 0.0, 0.0, 0]
        if self.closed[4]:
            self.events.append(self.data())


def same(a, b):
    return a.keys() == b.keys() and all(
        (math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k] for k in a
    )


@pytest.mark.parametrize("limit", [UNLIMITED, 10**9, 1, 3, 7])
@pytest.mark.parametrize("seed", range(6))
def test_matches_reference_model(clock, events, limit, seed):
    rng = random.Random(seed)
    wms = rng.choice([1, 5, 1000])
    model = Model(wms, limit)
    name = f"ref{seed}"
    s = Stat(name, ALL, timedelta(milliseconds=wms), limit)
    pool = [0.0, 1.0, -1.0, 2.5, math.nan, math.inf, -math.inf, 1e16, 3.0]
    for _ in range(600):
        r = rng.random()
        if r < 0.05:
            clock.advance_ms(wms * rng.randint(1, 4))
        elif r < 0.15:
            clock.ns += rng.randint(0, stat_mod.FOLD_NS * 2)  # crosses fold deadlines
        v = rng.choice(pool) if rng.random() < 0.3 else rng.uniform(-10, 10)
        model.add(clock.ns, v)
        s.add(v)
        assert s.count == model.open[4]
    got = [{k.split(".", 1)[1]: v for k, v in d.items()} for d in datas(events)]
    assert len(got) == len(model.events)
    assert all(same(a, b) for a, b in zip(got, model.events))
    s.close()
    model.close()
    assert len(events) == len(model.events)
    last = {k.split(".", 1)[1]: v for k, v in events[-1].data.items()} if events else {}
    if model.events:
        assert same(last, model.events[-1])


# -- parity with torch.monitor --------------------------------------------------------------


def torch_aggs(aggs):
    import torch.monitor as tm

    return [getattr(tm.Aggregation, a.name) for a in aggs]


@pytest.mark.parametrize(
    "values", [[0, 5, -5, -6, 9, 2], [1, 2, 2], [1.5], [1, math.nan, 2], [-0.0, 1e300, 1e300]]
)
def test_parity_with_torch_values(events, values):
    import torch.monitor as tm

    aggs = [MEAN, COUNT, SUM, MAX, MIN]
    theirs = []
    h = tm.register_event_handler(theirs.append)
    try:
        ts = tm.Stat("p", torch_aggs(aggs), LONG, max_samples=len(values))
        s = Stat("p", aggs, LONG, max_samples=len(values))
        for v in values:
            ts.add(v)
            s.add(v)
        ours_get = {a.name: v for a, v in s.get().items()}
        their_get = {a.name: v for a, v in ts.get().items()}
        assert same(ours_get, their_get)
        assert ts.count == s.count == 0
        assert len(theirs) == len(datas(events)) == 1
        assert same(events[0].data, theirs[0].data)
        del ts
    finally:
        tm.unregister_event_handler(h)
        s.close()


def test_parity_with_torch_get_before_close_and_close_on_destroy(events):
    import torch.monitor as tm

    theirs = []
    h = tm.register_event_handler(theirs.append)
    try:
        ts = tm.Stat("q", torch_aggs([SUM, COUNT]), LONG)
        s = Stat("q", [SUM, COUNT], LONG)
        for v in (1, 2):
            ts.add(v)
            s.add(v)
        assert ts.count == s.count == 2
        assert {a.name: v for a, v in s.get().items()} == {a.name: v for a, v in ts.get().items()}
        del ts
        s.close()
        assert same(events[0].data, theirs[0].data)
    finally:
        tm.unregister_event_handler(h)


# -- close, context manager, garbage collection ---------------------------------------------


def test_close_is_idempotent_and_add_after_close_raises(events):
    s = Stat("c", [SUM], LONG)
    s.add(1)
    s.close()
    s.close()
    assert datas(events) == [{"c.sum": 1.0}]
    with pytest.raises(ValueError, match="'c'"):
        s.add(1)
    assert s.get() == {SUM: 1.0} and s.count == 0


def test_close_empty_emits_nothing(events):
    Stat("e", [SUM], LONG).close()
    assert events == []


def test_context_manager_returns_stat_and_does_not_suppress(events):
    with pytest.raises(KeyError), Stat("cm", [SUM], LONG) as s:
        assert isinstance(s, Stat)
        s.add(2)
        raise KeyError("x")
    assert datas(events) == [{"cm.sum": 2.0}]


def test_garbage_collection_closes(events):
    s = Stat("gc", [SUM], LONG)
    s.add(3)
    del s
    gc.collect()
    assert datas(events) == [{"gc.sum": 3.0}]


def test_gc_handler_error_goes_to_unraisablehook(monkeypatch, events):
    seen = []
    monkeypatch.setattr("sys.unraisablehook", seen.append)

    def bad(e):
        raise RuntimeError("handler failed")

    register_event_handler(bad)
    s = Stat("gcerr", [SUM], LONG)
    s.add(1)
    del s
    gc.collect()
    assert len(events) == 1
    assert len(seen) == 1 and isinstance(seen[0].exc_value, RuntimeError)
    assert "Exception ignored" in seen[0].err_msg


def test_close_handler_error_propagates_after_closing(events):
    def bad(e):
        raise RuntimeError("handler failed")

    register_event_handler(bad)
    s = Stat("cerr", [SUM], LONG)
    s.add(1)
    with pytest.raises(RuntimeError):
        s.close()
    assert len(events) == 1
    s.close()  # already closed: nothing more
    assert len(events) == 1


def test_handler_error_on_max_samples_close_keeps_state(events):
    def bad(e):
        raise RuntimeError("x")

    register_event_handler(bad)
    s = Stat("ms", [SUM, COUNT], LONG, max_samples=2)
    s.add(1)
    with pytest.raises(RuntimeError):
        s.add(2)
    assert len(events) == 1  # the handler after the failing one still ran (events is first)
    s.add(3)  # the window was marked closed: dropped
    assert s.count == 0 and s.get() == {SUM: 3.0, COUNT: 2.0}
    handlers_mod._publish(())
    s.close()


def test_handler_error_on_window_change_keeps_value(clock, events):
    def bad(e):
        raise RuntimeError("x")

    s = Stat("wc", [SUM, COUNT], SEC)
    s.add(1)
    register_event_handler(bad)
    clock.advance_ms(1000)
    with pytest.raises(RuntimeError):
        s.add(5)
    assert s.count == 1
    handlers_mod._publish(())
    handlers_mod._publish(((handlers_mod._new_handle(), events.append),))
    s.close()
    assert datas(events)[-1] == {"wc.sum": 5.0, "wc.count": 1.0}


# -- threads and re-entrancy ----------------------------------------------------------------


def test_threads_max_samples_exactly_one_event(events):
    s = Stat("c", (COUNT, SUM), LONG, max_samples=1000)
    barrier = threading.Barrier(4)

    def worker():
        barrier.wait()
        for _ in range(2500):
            s.add(1)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert datas(events) == [{"c.count": 1000.0, "c.sum": 1000.0}]
    assert s.count == 0
    s.close()
    assert len(events) == 1


@pytest.mark.parametrize("window", [LONG, timedelta(milliseconds=1)])
def test_threads_lose_no_value(events, window):
    """Many threads adding while windows close and buffers fold: every value lands once."""
    s = Stat("t", (COUNT, SUM), window)
    barrier = threading.Barrier(4)
    per_thread = 30_000

    def worker():
        barrier.wait()
        for _ in range(per_thread):
            s.add(1.0)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s.close()
    total = sum(d["t.count"] for d in datas(events))
    assert total == 4 * per_thread
    assert sum(d["t.sum"] for d in datas(events)) == 4 * per_thread
    assert all(d["t.count"] == d["t.sum"] for d in datas(events))


def test_handlers_may_reenter_the_emitting_stat(clock, events):
    s = Stat("re", [SUM, COUNT], SEC, max_samples=2)
    other = Stat("other", [SUM], LONG)
    seen = []

    def handler(e):
        if "re.sum" in e.data:
            seen.append((s.count, s.get()))
            s.add(10)  # dropped: the window was closed by max_samples
            other.add(1)
            other.close()

    register_event_handler(handler)
    run_with_timeout(lambda: (s.add(1), s.add(2)))
    assert seen == [(0, {SUM: 3.0, COUNT: 2.0})]
    assert s.count == 0
    # a handler closing the Stat that is emitting
    closer = Stat("closer", [SUM], SEC)
    register_event_handler(lambda e: closer.close() if "closer.sum" in e.data else None)
    closer.add(1)
    clock.advance_ms(1000)
    run_with_timeout(lambda: closer.add(2))
    assert [d for d in datas(events) if "closer.sum" in d] == [
        {"closer.sum": 1.0},
        {"closer.sum": 2.0},
    ]
    s.close()


def test_count_is_consistent_while_other_threads_add():
    s = Stat("cnt", [COUNT], LONG)
    stop = threading.Event()
    seen = []

    def adder():
        while not stop.is_set():
            s.add(1.0)

    t = threading.Thread(target=adder)
    t.start()
    try:
        for _ in range(2000):
            seen.append(s.count)
    finally:
        stop.set()
        t.join()
    assert seen == sorted(seen)  # the open window only grows: count never goes back
    final = s.count
    s.close()
    assert s.get() == {COUNT: float(final)}


def test_a_stat_name_that_cannot_be_written_is_refused_when_the_stat_is_made():
    import pytest
    from tallyboard import Aggregation, Stat

    with pytest.raises(ValueError, match="name .* cannot be written as UTF-8"):
        Stat("bad\ud800", [Aggregation.MEAN], 10.0)
