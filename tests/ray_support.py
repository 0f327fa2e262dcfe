"""A local Ray runtime for the tests that need one: on 127.0.0.1, with no usage report, and
started a second time when the first start timed out. Ray gives its raylet a fixed 30 s to
register and its GCS server 30 s by default to write its port file; a loaded 2-core CI host has
missed each once. The GCS server's wait is lengthened here; the raylet's cannot be."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

# the words of Ray's own exceptions: the raylet's registration, the GCS server's port file
STARTUP_TIMEOUTS = ("timed out during startup", "Timed out waiting for file")
GCS_PORT_WAIT_S = "120"  # Ray's default is 30 s (120 s for a RocksDB store)


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


def _start(ray: Any, options: dict[str, Any]) -> None:
    """``ray.init``; a failed start leaves none of its processes running."""
    try:
        ray.init(**options)
    except BaseException:
        ray.shutdown()
        _stop_leftovers()
        raise


@contextmanager
def ray_runtime(**options: Any) -> Iterator[None]:
    """``ray.init(**options)`` for the block's length, then ``ray.shutdown()``."""
    import ray

    options = {"include_dashboard": False, "_node_ip_address": "127.0.0.1", **options}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        mp.setenv("RAY_gcs_server_port_wait_time_s", GCS_PORT_WAIT_S)
        try:
            _start(ray, options)
        except Exception as first:  # Ray raises a bare Exception or a RuntimeError
            if not any(words in str(first) for words in STARTUP_TIMEOUTS):
                raise
            warnings.warn(f"Ray's first start failed, starting it again: {first}", stacklevel=3)
            _start(ray, options)
        try:
            yield
        finally:
            ray.shutdown()
