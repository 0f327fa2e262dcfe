"""The run record: which MLflow run a log dir feeds, how it ended and what it could not send.

The sink keeps it in ``<log dir>/.tallyboard-mlflow.json`` (one entry per tracking URI) when the
log dir exists (another sink writes files there), so a
writer that opens the log dir again, in this process or another, continues the same run, and
``tallyboard sync`` later sends what an outage kept back to that run, with the params as they
were given and the status the run ended with.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

FILE = ".tallyboard-mlflow.json"
_lock = threading.Lock()


def _path(log_dir: str) -> str | None:
    """The record's path, or None where the log dir is a URL (no local record there)."""
    if "://" in log_dir:
        return None
    return os.path.join(log_dir, FILE)


def load(log_dir: str, tracking_uri: str) -> dict[str, Any]:
    """The entry for ``tracking_uri`` (``{}`` when none or unreadable)."""
    path = _path(log_dir)
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f).get(tracking_uri, {})
    except (OSError, ValueError, AttributeError):
        return {}
    return entry if isinstance(entry, dict) else {}


def update(log_dir: str, tracking_uri: str, **fields: Any) -> None:
    """Merge ``fields`` into the entry for ``tracking_uri`` (written whole, then renamed).

    Nothing is written where the log dir does not exist: a writer whose only sink is MLflow
    keeps no local files (so nothing to send later) and gets no folder."""
    path = _path(log_dir)
    if path is None or not os.path.isdir(log_dir):
        return
    with _lock:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if not isinstance(data, dict):
                data = {}
        except (OSError, ValueError):
            data = {}
        entry = data.setdefault(tracking_uri, {})
        for key, value in fields.items():
            if key == "params" and isinstance(entry.get("params"), dict):
                entry["params"].update(value)
            else:
                entry[key] = value
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
