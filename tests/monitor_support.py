"""Shared by the monitor tests: an empty event-handler registry per test, and a deadlock guard.

``clean_registry`` is an autouse fixture: importing it into a test module applies it there.
"""

from __future__ import annotations

import threading

import pytest
from tallyboard.monitor import handlers as handlers_mod

TIMEOUT = 10


@pytest.fixture(autouse=True)
def clean_registry():
    """Each test starts with no handlers and no pending plugin handlers, and leaves none."""
    saved = (handlers_mod._entries, handlers_mod._plugins_pending)
    handlers_mod._publish(())
    handlers_mod._plugins_pending = False
    yield
    handlers_mod._publish(saved[0])
    handlers_mod._plugins_pending = saved[1]


def run_with_timeout(fn, timeout=TIMEOUT):
    """Run ``fn`` in a daemon thread; fail (instead of hanging) if it does not finish."""
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "deadlock: call did not return"
    if "error" in box:
        raise box["error"]
    return box.get("result")
