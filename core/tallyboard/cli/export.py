"""``tallyboard export``: the runs' values of one kind, one file at a time, into one file written
by the sink that exports to its format (or, with ``--dataset``, into a growing Parquet dataset).

Core names no format: the installed sinks that declare :attr:`tallyboard.SinkSpec.export`
(:class:`tallyboard.plugin.tables.TableExport`) are the targets, chosen by the output's suffix
or ``--format``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from tallyboard.cli.common import CliError, Progress, closest, refuse_overwriting_input, run_reader
from tallyboard.cli.export_rows import (
    SCALAR_COLUMNS,
    SCALAR_TYPES,
    RowFeed,
    TagFilter,
    kind_rows,
    scalar_records,
)
from tallyboard.cli.notes import note_skipped
from tallyboard.plugin.readers import SCALAR_KIND as SCALAR
from tallyboard.plugin.readers import Batch
from tallyboard.plugin.sinks import SinkSpec
from tallyboard.plugin.tables import TableExport, TableOptions, binary_cell


def export_targets() -> dict[str, SinkSpec]:
    """Every format an installed sink exports to, and that sink (should two claim a format,
    the first by sink name), sorted by format."""
    from tallyboard.plugin.registry import get_registry

    sinks = get_registry().sinks
    targets: dict[str, SinkSpec] = {}
    for name in sorted(sinks):
        export = sinks[name].export
        for fmt in export.formats if export is not None else ():
            targets.setdefault(fmt, sinks[name])
    return dict(sorted(targets.items()))


def export_format(text: str) -> str:
    """``--format``'s value: a format an installed sink exports to (argparse's ``type=``)."""
    formats = export_targets()
    if text not in formats:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(map(repr, formats))})"
        )
    return text


def _target(out: str, fmt: str | None) -> TableExport:
    """The export of the sink that writes ``fmt``, or the format ``out``'s suffix names."""
    targets = export_targets()
    names = [f".{f}" for f in targets]
    listed = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)
    if fmt is None:
        fmt = os.path.splitext(out)[1].lstrip(".").lower()
        if fmt not in targets:
            raise CliError(f"cannot tell the format from {out!r}: use a {listed} name or --format")
    elif fmt not in targets:
        raise CliError(f"--format {fmt}: no installed sink exports it; formats: {listed}")
    export = targets[fmt].export
    assert export is not None
    return export


def _keeps_all() -> str | None:
    """A format whose rows keep every field (no fixed columns), to name in a note."""
    return next(
        (f for f, s in export_targets().items() if s.export and not s.export.fixed_columns), None
    )


def cmd_export(
    logdir: str,
    out: str,
    fmt: str | None,
    runs: Sequence[str] | None,
    tags: Sequence[str] | None,
    force: bool,
    kind: str = SCALAR,
    formats: Sequence[str] | None = None,
) -> int:
    """Write the values of ``kind`` under ``logdir`` to the file ``out`` (see the module)."""
    from tallyboard.plugin.registry import get_registry

    export = _target(out, fmt)
    try:
        kind_spec = get_registry().kind(kind)
    except ValueError as e:
        raise CliError(f"--kind: {e}") from None
    if os.path.exists(out) and not force:
        raise CliError(f"{out} exists; pass --force to overwrite it")
    runs_read = run_reader(logdir, formats, kind, runs)
    files = runs_read.discover()
    if not files:
        raise CliError(_no_runs(logdir, formats, kind, runs))
    refuse_overwriting_input(out, runs_read, files)
    note_skipped(runs_read)
    tag_filter = TagFilter(tags)
    tmp = out + ".partial"
    progress = Progress(len(files))
    rows_written = 0
    scalar = kind == SCALAR
    options = TableOptions(kind, SCALAR_COLUMNS, SCALAR_TYPES) if scalar else TableOptions(kind)
    try:
        with open(tmp, "wb") as fh:
            writer = export.open(fh, options)
            feed = None if scalar else RowFeed(writer, export, _keeps_all())
            for run, reader in files:
                batch = reader.read_new()
                progress.update()
                if feed is None:
                    records = scalar_records(run, batch, tag_filter)
                    if records:
                        _write(writer.write, SCALAR_COLUMNS, records)
                    rows_written += len(records)
                else:
                    rows = kind_rows(run, batch, kind_spec, tag_filter)
                    if rows:
                        _write(feed.write, rows)
                    rows_written += len(rows)
            if not rows_written:
                raise CliError(_nothing_selected(logdir, kind, tag_filter, files))
            writer.close()
        os.replace(tmp, out)
    finally:
        progress.close()
        if os.path.exists(tmp):
            os.remove(tmp)
    noun = "scalars" if scalar else f"{kind} rows"
    print(f"wrote {rows_written} {noun} to {out}", file=sys.stderr)
    return 0


def _write(write: Any, *args: Any) -> None:
    """``write(*args)``; rows the format cannot hold (its ``ValueError``) are a
    :class:`CliError`."""
    try:
        write(*args)
    except ValueError as e:
        raise CliError(str(e)) from None


def _no_runs(
    logdir: str, formats: Sequence[str] | None, kind: str, runs: Sequence[str] | None
) -> str:
    """What to say when no file of a run ``--runs`` asked for is there: the runs that are."""
    if not runs:
        return (
            f"no runs under {logdir}: no folder there holds files tallyboard reads; nothing written"
        )
    every = run_reader(logdir, formats, kind)
    every.refresh()
    there = sorted({run for _, run in every.paths()})
    return (
        f"--runs {' '.join(runs)} matches no run under {logdir}; runs there: "
        f"{closest(runs, there)}; nothing written"
    )


def _nothing_selected(logdir: str, kind: str, tags: TagFilter, files: list[Any]) -> str:
    """What to say when the runs read hold no value of ``kind`` that ``--tags`` keeps."""
    n_runs = len({run for run, _ in files})
    where = f"in the {n_runs} run{'s' if n_runs > 1 else ''} read under {logdir}"
    if not tags.seen:
        return f"no {kind} values {where}; nothing written (--kind picks another kind)"
    return (
        f"--tags {' '.join(tags.asked or ())} matches none of the {len(tags.seen)} {kind} tags "
        f"{where}; closest: {closest(tags.asked or (), list(tags.seen))}; nothing written"
    )


def cmd_export_dataset(
    logdir: str,
    out: str,
    runs: Sequence[str] | None,
    tags: Sequence[str] | None,
    kind: str = SCALAR,
    formats: Sequence[str] | None = None,
    on: str | None = None,
) -> int:
    """Append what is new under ``logdir`` to the Parquet dataset ``out`` (written by the
    workers of the engine ``on`` names, when given)."""
    from tallyboard.plugin.registry import get_registry
    from tallyboard.reading.dataset import export_dataset
    from tallyboard.reading.progress import Progress as DatasetProgress

    try:
        kind_spec = get_registry().kind(kind)
    except ValueError as e:
        raise CliError(f"--kind: {e}") from None

    def rows_of(run: str, batch: Batch) -> list[dict[str, Any]]:
        return [
            {k: binary_cell(v) for k, v in row.items()}
            for row in kind_rows(run, batch, kind_spec, None)
        ]

    bar = DatasetProgress(None, "export")
    try:
        count = export_dataset(
            logdir,
            out,
            kind,
            runs,
            tags,
            formats,
            None if kind == SCALAR else rows_of,
            progress=bar,
            on=on,
        )
    except (TypeError, ValueError) as e:
        raise CliError(str(e)) from None
    finally:
        bar.close()
    noun = "scalars" if kind == SCALAR else f"{kind} rows"
    print(
        f"appended {count['rows']} {noun} from {count['files']} files to {out}"
        f" ({count['parts']} part files)",
        file=sys.stderr,
    )
    return 0
