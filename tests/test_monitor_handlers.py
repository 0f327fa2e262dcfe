"""Handlers: registration, order, exceptions, re-entrancy, threads, plugin handlers."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest
import tallyboard.monitor as mon
from monitor_support import TIMEOUT, clean_registry, run_with_timeout  # noqa: F401 - clean_registry: autouse
from tallyboard.monitor import (
    COUNT,
    SUM,
    Event,
    EventHandlerHandle,
    Stat,
    log_event,
    register_event_handler,
    unregister_event_handler,
)
from tallyboard.monitor import handlers as handlers_mod

TS = datetime(2024, 1, 2, 3, 4, 5)


def test_register_and_order():
    calls = []
    ev = Event("e", TS, {})
    h1 = register_event_handler(lambda e: calls.append(("a", e)))
    h2 = register_event_handler(callback=lambda e: calls.append(("b", e)))
    assert isinstance(h1, EventHandlerHandle) and h1 is not h2 and h1 != h2
    assert log_event(ev) is None
    assert calls == [("a", ev), ("b", ev)]
    unregister_event_handler(handler=h1)
    calls.clear()
    log_event(event=ev)
    assert [c[0] for c in calls] == ["b"]
    unregister_event_handler(h1)  # second unregister: no-op
    unregister_event_handler(None)
    log_event(ev)
    assert [c[0] for c in calls] == ["b", "b"]
    unregister_event_handler(h2)
    log_event(ev)
    assert len(calls) == 2


def test_same_callable_twice_and_reregister_goes_last():
    got = []
    a = register_event_handler(got.append)
    register_event_handler(got.append)
    tag = []
    register_event_handler(lambda e: tag.append(len(got)))
    ev = Event("e", TS, {})
    log_event(ev)
    assert got == [ev, ev] and tag == [2]
    unregister_event_handler(a)
    register_event_handler(got.append)  # now after the lambda
    got.clear()
    tag.clear()
    log_event(ev)
    assert tag == [1] and len(got) == 2


class Callable_:
    def __init__(self):
        self.seen = []

    def __call__(self, e):
        self.seen.append(e)

    def method(self, e):
        self.seen.append(("m", e))


def test_any_callable():
    obj = Callable_()
    register_event_handler(obj)
    register_event_handler(obj.method)
    ev = Event("e", TS, {})
    log_event(ev)
    assert obj.seen == [ev, ("m", ev)]


@pytest.mark.parametrize("bad", [5, "x", None])
def test_register_rejects_non_callables(bad):
    with pytest.raises(TypeError, match="callback"):
        register_event_handler(bad)


@pytest.mark.parametrize("bad", [1, "x", print])
def test_unregister_rejects_other_types(bad):
    with pytest.raises(TypeError, match="handler"):
        unregister_event_handler(bad)


def test_handle_cannot_be_built():
    with pytest.raises(TypeError):
        EventHandlerHandle()
    h = register_event_handler(print)
    assert not [a for a in dir(h) if not a.startswith("_")]


@pytest.mark.parametrize("bad", [None, "e", {"name": "x"}, 1])
def test_log_event_rejects_non_events(bad):
    with pytest.raises(TypeError, match="event"):
        log_event(bad)


def test_no_handlers_is_noop():
    assert log_event(Event("e", TS, {})) is None


def test_all_handlers_run_first_exception_propagates_with_notes():
    seen = []
    first = ValueError("first")

    def bad1(e):
        seen.append(1)
        raise first

    def bad2(e):
        seen.append(2)
        raise KeyError("second")

    register_event_handler(bad1)
    register_event_handler(bad2)
    register_event_handler(lambda e: seen.append(3))
    with pytest.raises(ValueError) as info:
        log_event(Event("e", TS, {}))
    assert info.value is first
    assert seen == [1, 2, 3]
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1 and "KeyError" in notes[0] and "second" in notes[0]


def test_wrong_arity_handler_is_a_handler_error():
    seen = []
    register_event_handler(lambda: None)
    register_event_handler(seen.append)
    with pytest.raises(TypeError):
        log_event(Event("e", TS, {}))
    assert len(seen) == 1


def test_snapshot_dispatch_changes_apply_later():
    calls = []
    handles = {}

    def first(e):
        calls.append("first")
        unregister_event_handler(handles["second"])
        handles.setdefault("third", register_event_handler(lambda e: calls.append("third")))

    handles["first"] = register_event_handler(first)
    handles["second"] = register_event_handler(lambda e: calls.append("second"))
    log_event(Event("e", TS, {}))
    assert calls == ["first", "second"]
    calls.clear()
    log_event(Event("e", TS, {}))
    assert calls == ["first", "third"]


def test_reentrant_log_event_and_registration_do_not_deadlock():
    calls = []

    def handler(e):
        calls.append(e.name)
        if e.name == "outer":
            log_event(Event("inner", TS, {}))
            h = register_event_handler(print)
            unregister_event_handler(h)

    register_event_handler(handler)
    run_with_timeout(lambda: log_event(Event("outer", TS, {})))
    assert calls == ["outer", "inner"]


def test_concurrent_log_event_with_slow_handlers():
    barrier = threading.Barrier(4, timeout=TIMEOUT)
    seen = []
    lock = threading.Lock()

    def slow(e):
        barrier.wait()  # all four dispatches are inside a handler at the same time
        with lock:
            seen.append(e.data["i"])

    register_event_handler(slow)

    def worker(i):
        log_event(Event("e", TS, {"i": i}))

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads)
    assert sorted(seen) == [0, 1, 2, 3]


def test_stat_events_reach_every_handler_as_the_same_object():
    got1, got2 = [], []
    register_event_handler(got1.append)
    register_event_handler(got2.append)
    with Stat("same", (SUM,), timedelta(days=3650)) as s:
        s.add(1)
    assert len(got1) == 1 and got1[0] is got2[0]


def test_plugin_handlers_attach_lazily_on_first_dispatch(monkeypatch):
    from tallyboard.plugin import registry

    plugin_seen = []
    calls = []

    def fake_get_registry():
        calls.append(1)
        return SimpleNamespace(event_handlers=[plugin_seen.append])

    monkeypatch.setattr(registry, "get_registry", fake_get_registry)
    handlers_mod._plugins_pending = True
    user_seen = []
    register_event_handler(user_seen.append)
    assert calls == []  # registering does not build the registry
    ev = Event("e", TS, {})
    log_event(ev)
    log_event(ev)
    assert calls == [1]
    assert plugin_seen == [ev, ev] and user_seen == [ev, ev]


def test_plugin_handlers_attach_on_first_stat_event(monkeypatch):
    from tallyboard.plugin import registry

    plugin_seen = []
    monkeypatch.setattr(
        registry, "get_registry", lambda: SimpleNamespace(event_handlers=[plugin_seen.append])
    )
    handlers_mod._plugins_pending = True
    with Stat("plug", (COUNT,), timedelta(days=3650)) as s:
        s.add(1)
    assert [e.data for e in plugin_seen] == [{"plug.count": 1.0}]


def test_broken_registry_warns_and_dispatch_goes_on(monkeypatch):
    from tallyboard.plugin import registry

    def boom():
        raise RuntimeError("no registry")

    monkeypatch.setattr(registry, "get_registry", boom)
    handlers_mod._plugins_pending = True
    seen = []
    register_event_handler(seen.append)
    with pytest.warns(RuntimeWarning, match="no registry"):
        log_event(Event("e", TS, {}))
    assert len(seen) == 1


def test_real_registry_handlers_are_attached():
    """A plugin registering through the real hook reaches log_event."""
    from tallyboard import hookimpl
    from tallyboard.plugin import registry

    seen = []

    class Plugin:
        @hookimpl
        def register_event_handlers(self, register):
            register(seen.append)

    registry.add_plugin(Plugin(), "test-monitor-handlers")
    try:
        handlers_mod._plugins_pending = True
        ev = Event("e", TS, {})
        log_event(ev)
        assert seen == [ev]
    finally:
        registry.remove_plugin("test-monitor-handlers")


def test_exit_with_handlers_registered_is_clean():
    import subprocess
    import sys

    code = (
        "import tallyboard.monitor as m, datetime\n"
        "m.register_event_handler(print)\n"
        "m.log_event(m.Event('bye', datetime.datetime(2024, 1, 1), {}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "bye" in proc.stdout


def test_module_reexports():
    assert mon.log_event is log_event
