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

import contextlib
import json
import os
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tallyboard.plugin.readers import SCALAR_KIND as SCALAR
from tallyboard.plugin.readers import Batch, Batches, FileReader
from tallyboard.reading.runs import RunReader
from tallyboard.reading.select import matcher, names_or_globs
from tallyboard.reading.shares import Plan
from tallyboard.warn import ReadWarning

STATE = "_tallyboard_state.json"
_PART = re.compile(r"\.?part-(\d+)-\d+\.parquet(\.partial)?$")


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


def _scalar_pieces(
    runs: list[str], group: Batches, wanted_tag: Callable[[str], bool] | None
) -> list[Any]:
    """The scalars of a group of files as arrow tables with a ``run`` column (dictionary
    encoded) and ``tag, step, wall_time, value``: the group's shared columns at once, and the
    scalars a file holds on its own after them."""
    import numpy as np
    import pyarrow as pa

    pieces = []

    def piece(
        names: list[str],
        codes: Any,
        step: Any,
        wall: Any,
        value: Any,
        run_codes: Any,
        run_names: list[str],
    ) -> None:
        if wanted_tag is not None and len(codes):
            keep_tag = np.array([wanted_tag(str(n)) for n in names], bool)
            if not keep_tag.all():
                keep = keep_tag[codes]
                codes, step, wall, value = codes[keep], step[keep], wall[keep], value[keep]
                run_codes = run_codes[keep]
        if not len(codes):
            return
        pieces.append(
            pa.table(
                {
                    "run": pa.DictionaryArray.from_arrays(
                        pa.array(run_codes, pa.int32()), pa.array(run_names, pa.string())
                    ),
                    "tag": pa.DictionaryArray.from_arrays(
                        pa.array(codes, pa.int32()), pa.array(names, pa.string())
                    ),
                    "step": pa.array(step, pa.int64()),
                    "wall_time": pa.array(wall, pa.float64()),
                    "value": pa.array(value, pa.float64()),
                }
            )
        )

    names_of = {run: i for i, run in enumerate(dict.fromkeys(runs))}
    run_names = list(names_of)
    file_runs = np.array([names_of[run] for run in runs], np.int32)
    own = [b is not None and (b.tags or b.columns) for b in group.batches]
    if group.shared() and not any(own):
        piece(
            group.names,
            group.codes,
            group.step,
            group.wall_time,
            group.value,
            np.repeat(file_runs, group.counts),
            run_names,
        )
        return pieces
    for k, run in enumerate(runs):
        b = group.batch(k)
        b.flush_lists()
        for names, codes, step, wall, value in b.columns:
            piece(
                list(names),
                np.asarray(codes),
                step,
                wall,
                value,
                np.full(len(codes), names_of[run], np.int32),
                run_names,
            )
    return pieces


class _PartWriter:
    """Arrow tables gathered and written as the dataset's part files, partitioned by run and
    kind, by pyarrow's dataset writer, under hidden names (``.part-...parquet.partial``, which
    dataset readers skip): :meth:`publish` then renames each into place, so a reader of the
    dataset never sees a half-written part."""

    #: rows gathered before they are written (memory stays bounded on any tree).
    flush_rows = 1 << 15

    def __init__(self, out: str, export: int, kind: str, share: int | None = None) -> None:
        self.out, self.export, self.kind = out, export, kind
        #: the share of the export this writer writes (an engine's task): in its parts' names,
        #: so that tasks writing side by side never name a part alike.
        self.share = share
        self.pending: list[Any] = []
        self.held = 0
        self.rows = 0
        self.calls = 0
        self.written: list[str] = []

    def add(self, tables: list[Any]) -> None:
        for table in tables:
            self.pending.append(table)
            self.held += table.num_rows
        if self.held >= self.flush_rows:
            self.flush()

    def add_table(self, run: str, table: Any) -> None:
        """Rows of a kind's decoder for ``run``: written apart (their own columns)."""
        import pyarrow as pa

        runs = pa.DictionaryArray.from_arrays(
            pa.array([0] * table.num_rows, pa.int32()), pa.array([run], pa.string())
        )
        self.flush()
        self.pending.append(table.add_column(0, "run", runs))
        self.held += table.num_rows
        self.flush()

    def flush(self) -> None:
        """Write the tables gathered: a part file per run (and per call)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.dataset as ds

        if not self.pending:
            return
        table = pa.concat_tables(self.pending, promote_options="permissive")
        self.pending, self.held = [], 0
        table = table.unify_dictionaries().combine_chunks()
        kind = pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(table.num_rows, np.int32)), pa.array([self.kind], pa.string())
        )
        table = table.append_column("kind", kind)
        text = pa.dictionary(pa.int32(), pa.string())
        ds.write_dataset(
            table,
            self.out,
            format="parquet",
            partitioning=ds.partitioning(pa.schema([("run", text), ("kind", text)]), flavor="hive"),
            basename_template=f".part-{self.export:06d}-{self._prefix()}{{i}}.parquet.partial",
            max_partitions=1 << 30,
            max_open_files=256,
            existing_data_behavior="overwrite_or_ignore",
            file_visitor=lambda written: self.written.append(written.path),
        )
        self.calls += 1
        self.rows += table.num_rows

    def _prefix(self) -> str:
        """What a part's name holds after the export: the share (if any) and the call."""
        share = "" if self.share is None else f"{self.share:06d}"
        return f"{share}{self.calls:04d}"

    def publish(self) -> int:
        """Give every part written its visible name; returns how many."""
        for path in self.written:
            folder, name = os.path.split(path)
            os.replace(path, os.path.join(folder, name[1 : -len(".partial")]))
        done, self.written = len(self.written), []
        return done

    def discard(self) -> None:
        """Remove the parts written and not published (an export that failed)."""
        for path in self.written:
            with contextlib.suppress(OSError):
                os.remove(path)
        self.written = []


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
    on: str | None = None,
) -> dict[str, int]:
    """Append what is new under ``logdir`` since the last export to the dataset ``out``.

    ``kind`` scalars become columns ``tag, step, wall_time, value``; another kind needs
    ``rows_of(run, batch)`` giving its rows as dicts of Parquet-ready cells (the ``run`` key, if
    any, is dropped: the partition holds it). ``runs`` and ``tags`` are names or globs. ``on``
    names an engine (``dask://HOST:PORT``, ``ray``, ...; see :mod:`tallyboard.reading.engines`)
    whose workers read the files and write the parts in shares of whole runs, side by side
    (``out`` must then be a directory every worker reaches); this process lists, keeps the
    state and publishes the parts once every share is written. Returns counts: ``rows``
    written, ``files`` read, ``parts`` written.
    """
    if not isinstance(out, str) or not out:
        raise TypeError(f"out must be a non-empty str directory, got {out!r}")
    if kind != SCALAR and rows_of is None:
        raise ValueError(f"exporting kind {kind!r} needs rows_of")
    if on is not None and not (isinstance(on, str) and on):
        raise TypeError(f"on must be None or an engine's name or URL, got {on!r}")
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
    saved_of: dict[str, dict[str, Any]] = {}  # path -> where the last export left its reader
    for _, reader in run_reader.discover():
        path = getattr(reader, "path", None)
        saved = done_before.get(path) if isinstance(path, str) else None
        if saved is None or not isinstance(path, str):
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
        _restore(reader, saved)
        saved_of[path] = saved
        run_reader.resume(path)
    export = state["exports"] + 1
    count = {"rows": 0, "files": len(run_reader.paths()), "parts": 0}
    files_state: dict[str, dict[str, Any]] = {}
    writer = _PartWriter(out, export, kind)
    try:
        if on is None:
            count["rows"] = _write_groups(
                run_reader, writer, wanted_tag, rows_of, files_state, workers, progress
            )
        else:
            count["rows"] = _write_on(
                on, run_reader, writer, tag_globs, rows_of, saved_of, files_state
            )
        count["parts"] = writer.publish()
    finally:
        writer.discard()
    done_before.update(files_state)
    state["exports"], state["logdir"] = export, source
    tmp = state_path + ".partial"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
    os.replace(tmp, state_path)
    return count


def _restore(reader: FileReader, saved: dict[str, Any]) -> None:
    """Give a fresh reader of a file the state the last export left (its offset, flags)."""
    for name, value in saved.items():
        setattr(reader, name, value)


def _write_groups(
    run_reader: RunReader,
    writer: _PartWriter,
    wanted_tag: Callable[[str], bool] | None,
    rows_of: Callable[[str, Batch], list[dict[str, Any]]] | None,
    files_state: dict[str, dict[str, Any]],
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Read what is new of ``run_reader``'s files and write it with ``writer`` (flushed, not
    published); each file's reader state goes into ``files_state``. Returns the rows written."""
    import pyarrow as pa

    for paths, group_runs, group in run_reader.iter_groups(workers, progress, discover=False):
        if writer.kind == SCALAR:
            writer.add(_scalar_pieces(group_runs, group, wanted_tag))
        else:
            assert rows_of is not None
            for run, batch in zip(group_runs, group.split()):
                rows = [
                    {key: v for key, v in row.items() if key != "run"}
                    for row in rows_of(run, batch)
                    if wanted_tag is None or wanted_tag(row["tag"])
                ]
                if rows:
                    writer.add_table(run, pa.Table.from_pylist(rows))
        del group
        for path in paths:
            files_state[path] = _plain_state(run_reader.opened(path))
    writer.flush()
    return writer.rows


@dataclass(frozen=True)
class ShareExport:
    """One engine task of an export: the files of a share of runs (with where the last export
    left each), what to keep of them, and where the parts go."""

    plan: Plan
    saved: dict[str, dict[str, Any]]
    out: str
    export: int
    share: int
    rows_of: Callable[[str, Batch], list[dict[str, Any]]] | None = None


def export_share(
    task: ShareExport,
) -> tuple[list[str], int, dict[str, dict[str, Any]], list[tuple[str, type[Warning]]]]:
    """On a worker: read the share of ``task`` from where the last export left each file and
    write its parts, hidden, under ``task.out``. Returns the parts written, the rows, each
    file's reader state, and the warnings raised (raised again by the caller). Written again
    alike when an engine runs it again (a worker lost): the parts have the same names."""
    from tallyboard.reading.pool import _recording

    plan = task.plan

    def run() -> tuple[list[str], int, dict[str, dict[str, Any]]]:
        reader = RunReader(
            plan.logdir,
            plan.formats,
            plan.kind,
            deadline=plan.deadline,
            storage_options=plan.storage_options,
        )
        reader.take(plan.shares[0])
        for path, saved in task.saved.items():
            _restore(reader.opened(path), saved)
            reader.resume(path)
        writer = _PartWriter(task.out, task.export, plan.kind, task.share)
        wanted_tag = None if plan.tags is None else matcher(plan.tags)
        files_state: dict[str, dict[str, Any]] = {}
        rows = _write_groups(reader, writer, wanted_tag, task.rows_of, files_state, 1)
        return writer.written, rows, files_state

    (written, rows, files_state), caught = _recording(run)
    return written, rows, files_state, caught


def _write_on(
    on: str,
    run_reader: RunReader,
    writer: _PartWriter,
    tags: tuple[str, ...] | None,
    rows_of: Callable[[str, Batch], list[dict[str, Any]]] | None,
    saved_of: dict[str, dict[str, Any]],
    files_state: dict[str, dict[str, Any]],
) -> int:
    """Have the engine ``on`` read ``run_reader``'s new data in shares of whole runs and write
    each share's parts (handed to ``writer`` to publish or discard); each file's reader state
    goes into ``files_state``. Returns the rows written."""
    from tallyboard.reading.engines import connect
    from tallyboard.reading.pool import _warn_again
    from tallyboard.reading.shares import deal, worker_options

    listed = {f[0]: f for f in run_reader.listed()}
    files = [listed[path] for path in run_reader.to_read()]
    rows = 0
    with connect(on) as engine:
        plan = Plan(
            run_reader.fs.unstrip_protocol(run_reader.root),
            run_reader.kind or SCALAR,
            tags,
            None if run_reader.formats is None else tuple(sorted(run_reader.formats)),
            worker_options(run_reader),
            deal(files, at_least=2 * engine.cores),
            run_reader.deadline,
        )
        tasks = [
            ShareExport(
                plan.part(k),
                {f[0]: saved_of[f[0]] for f in plan.shares[k] if f[0] in saved_of},
                os.path.abspath(writer.out),
                writer.export,
                k,
                rows_of,
            )
            for k in range(len(plan))
        ]
        for written, n, states, caught in engine.map(export_share, tasks):
            writer.written.extend(written)
            rows += n
            files_state.update(states)
            _warn_again(caught)
    return rows
