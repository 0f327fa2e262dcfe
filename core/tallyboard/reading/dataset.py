"""A log dir as a Parquet dataset that grows: each export appends only what is new.

Layout (Hive partitioning, which pyarrow, DuckDB, Polars and Spark read)::

    DIR/run=<run>/kind=<kind>/part-<export>-<file>.parquet
    DIR/_tallyboard_state.json

Run names are percent-encoded in the path (``b/seed1`` is ``run=b%2Fseed1``), as pyarrow's
``partitioning="hive"`` decodes them. The state file (its ``_`` prefix keeps dataset readers off
it) remembers, per kind and source file, where the last export stopped: each reader's plain
attributes (its byte offset, and flags such as a CSV reader having seen its header), restored on
a fresh reader of the same file. An export writes its part files, then the state, replaced
atomically; part files of an export the state does not list (one that crashed midway) are
removed first, so a row is never written twice.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote

from tallyboard.plugin.readers import Batch, FileReader
from tallyboard.reading.runs import RunReader, matcher, names_or_globs
from tallyboard.warn import ReadWarning

STATE = "_tallyboard_state.json"
SCALAR = "scalar"
_PART = re.compile(r"part-(\d+)-\d+\.parquet$")


def _plain_state(reader: FileReader) -> dict[str, Any]:
    """A reader's attributes that are plain values: where it stopped, and how."""
    return {
        k: v
        for k, v in vars(reader).items()
        if k != "path" and isinstance(v, (bool, int, float, str)) and not k.startswith("__")
    }


def _load_state(path: str) -> dict[str, Any]:
    if not os.path.exists(path):
        return {"version": 1, "exports": 0, "logdir": None, "files": {}}
    with open(path, encoding="utf-8") as fh:
        state: dict[str, Any] = json.load(fh)
    if state.get("version") != 1:
        raise ValueError(f"{path}: unknown state version {state.get('version')!r}")
    return state


def _remove_unlisted_parts(out: str, exports: int) -> None:
    """Drop part files of exports after the last one the state records (a crashed one)."""
    for parent, _, files in os.walk(out):
        for name in files:
            m = _PART.match(name)
            if m and int(m.group(1)) > exports:
                os.remove(os.path.join(parent, name))


def _scalar_table(batch: Batch, wanted_tag: Callable[[str], bool] | None) -> Any:
    import numpy as np
    import pyarrow as pa

    tag, step, wall, value = batch.scalars()
    if wanted_tag is not None and len(tag):
        keep = np.fromiter((wanted_tag(t) for t in tag.tolist()), bool, len(tag))
        tag, step, wall, value = tag[keep], step[keep], wall[keep], value[keep]
    return pa.table(
        {
            "tag": pa.array(tag.tolist(), pa.string()).dictionary_encode(),
            "step": pa.array(step, pa.int64()),
            "wall_time": pa.array(wall, pa.float64()),
            "value": pa.array(value, pa.float64()),
        }
    )


def export_dataset(
    logdir: str,
    out: str,
    kind: str = SCALAR,
    runs: str | Iterable[str] | None = None,
    tags: str | Iterable[str] | None = None,
    formats: str | Iterable[str] | None = None,
    rows_of: Callable[[str, Batch], list[dict[str, Any]]] | None = None,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Append what is new under ``logdir`` since the last export to the dataset ``out``.

    ``kind`` scalars become columns ``tag, step, wall_time, value``; another kind needs
    ``rows_of(run, batch)`` giving its rows as dicts of Parquet-ready cells (the ``run`` key, if
    any, is dropped: the partition holds it). ``runs`` and ``tags`` are names or globs. Returns
    counts: ``rows`` written, ``files`` read, ``parts`` written.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(out, str) or not out:
        raise TypeError(f"out must be a non-empty str directory, got {out!r}")
    if kind != SCALAR and rows_of is None:
        raise ValueError(f"exporting kind {kind!r} needs rows_of")
    tag_globs = names_or_globs(tags, "tags")
    wanted_tag = None if tag_globs is None else matcher(tag_globs)
    run_reader = RunReader(logdir, formats, kind, runs=names_or_globs(runs, "runs"))
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"dataset {out!r} exists and is not a directory")
    os.makedirs(out, exist_ok=True)
    state_path = os.path.join(out, STATE)
    state = _load_state(state_path)
    source = run_reader.fs.unstrip_protocol(run_reader.root)
    if state["logdir"] not in (None, source):
        raise ValueError(
            f"dataset {out!r} holds an export of {state['logdir']!r}, not of {source!r}"
        )
    _remove_unlisted_parts(out, state["exports"])
    done_before: dict[str, dict[str, Any]] = state["files"].setdefault(kind, {})
    for _, reader in run_reader.discover():
        path = getattr(reader, "path", None)
        saved = done_before.get(path) if isinstance(path, str) else None
        if saved is None:
            continue
        size = run_reader.size(path or "")
        if int(saved.get("offset", 0)) > size:
            warnings.warn(
                f"{path}: the file shrank since the last export (was read to "
                f"{saved['offset']}, now {size} bytes); nothing of it is appended",
                ReadWarning,
                stacklevel=2,
            )
            saved = {**saved, "dead": True}
        for name, value in saved.items():
            setattr(reader, name, value)
    export = state["exports"] + 1
    count = {"rows": 0, "files": 0, "parts": 0}
    files_state: dict[str, dict[str, Any]] = {}
    for k, (path, run, batch) in enumerate(run_reader.iter_read(workers, progress, discover=False)):
        count["files"] += 1
        if kind == SCALAR:
            table = _scalar_table(batch, wanted_tag)
        else:
            assert rows_of is not None
            rows = [
                {key: v for key, v in row.items() if key != "run"}
                for row in rows_of(run, batch)
                if wanted_tag is None or wanted_tag(row["tag"])
            ]
            table = pa.Table.from_pylist(rows) if rows else None
        del batch
        if table is not None and table.num_rows:
            folder = os.path.join(out, f"run={quote(run, safe='')}", f"kind={quote(kind, safe='')}")
            os.makedirs(folder, exist_ok=True)
            name = f"part-{export:06d}-{k:06d}.parquet"
            partial = os.path.join(folder, f".{name}.partial")  # hidden from dataset readers
            pq.write_table(table, partial)
            os.replace(partial, os.path.join(folder, name))
            count["rows"] += table.num_rows
            count["parts"] += 1
        files_state[path] = _plain_state(run_reader.opened(path))
    done_before.update(files_state)
    state["exports"], state["logdir"] = export, source
    tmp = state_path + ".partial"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
    os.replace(tmp, state_path)
    return count
