"""A local Ray runtime for the tests that need one: on 127.0.0.1, with no usage report, and
started a second time when the first start timed out (Ray gives its raylet a fixed 30 s to
register, which a loaded 2-core CI host has missed once)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

STARTUP_TIMEOUT = "timed out during startup"  # the words of Ray's own exception


def _stop_leftovers() -> None:
    """Stop the Ray processes a failed start left behind (its Node object never reached the
    caller, so ray.shutdown cannot see them)."""
    import psutil
    import ray

    home = os.path.dirname(ray.__file__)  # the raylet, GCS server and workers all run from here
    leftovers = []
    for child in psutil.Process().children(recursive=True):
        try:
            if any(home in part for part in child.cmdline()):
                child.kill()
                leftovers.append(child)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    psutil.wait_procs(leftovers, timeout=10)


@contextmanager
def ray_runtime(**options: Any) -> Iterator[None]:
    """``ray.init(**options)`` for the block's length, then ``ray.shutdown()``."""
    import ray

    options = {"include_dashboard": False, "_node_ip_address": "127.0.0.1", **options}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        try:
            ray.init(**options)
        except Exception as first:  # Ray raises a bare Exception for it
            if STARTUP_TIMEOUT not in str(first):
                raise
            warnings.warn(f"Ray's first start failed, starting it again: {first}", stacklevel=3)
            ray.shutdown()
            _stop_leftovers()
            ray.init(**options)
        try:
            yield
        finally:
            ray.shutdown()
