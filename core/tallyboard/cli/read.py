"""``tallyboard ls | export | plot | convert``: look at a log dir from the shell.

Heavy libraries (pyarrow, matplotlib, tqdm, tensorboard) are imported only by the command
that needs them.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from tallyboard.extras import require
from tallyboard.plugin.kinds import PAYLOAD_KEY
from tallyboard.plugin.readers import Batch
from tallyboard.reading import undecoded
from tallyboard.reading.listing import SCALAR, list_tree
from tallyboard.reading.runs import RunReader, matcher, names_or_globs

EXPORT_FORMATS = ("csv", "parquet", "jsonl")


class CliError(Exception):
    """A user error reported as one line on stderr with exit code 1."""


def _reader(
    logdir: str,
    formats: Sequence[str] | None = None,
    kind: str | None = None,
    runs: Sequence[str] | None = None,
) -> RunReader:
    try:
        return RunReader(logdir, formats, kind, runs=runs)
    except (TypeError, ValueError) as e:
        raise CliError(str(e)) from None


#: what a run's read files say in their first bytes when tallyboard wrote them (its event files
#: name their writer): the other formats beside them are then the mirror asked of it.
_OWN_MARK = b"tallyboard"
_noted: set[str] = set()  # the notes said in this command


def _note_skipped(reader: RunReader) -> None:
    """Say, once per command, which runs hold their values in another format too that was not
    read: only where that can surprise, not where tallyboard wrote both side by side (a
    ``SummaryRecord(..., tensorboard=True)`` or ``sinks=["tfevents", "csv"]`` run)."""
    by_names: dict[tuple[str, ...], list[str]] = {}
    for parent, names in sorted(reader.skipped.items()):
        if not _mirror_we_wrote(reader, parent, names):
            by_names.setdefault(tuple(sorted(names)), []).append(reader.run_of(parent))
    for formats, runs in by_names.items():
        shown = ", ".join(repr(r) for r in runs[:3]) + (
            f" and {len(runs) - 3} more" if len(runs) > 3 else ""
        )
        line = (
            f"note: run{'s' if len(runs) > 1 else ''} {shown} also hold{'' if len(runs) > 1 else 's'}"
            f" {', '.join(formats)} files with the same values; not read (--from {' --from '.join(formats)}"
            " reads them)"
        )
        if line not in _noted:
            _noted.add(line)
            print(line, file=sys.stderr)


def _mirror_we_wrote(reader: RunReader, parent: str, skipped: set[str]) -> bool:
    """Whether the files read in the run folder ``parent`` (those of a competing format not in
    ``skipped``) were each written by tallyboard. Local folders only: a remote store is not
    asked again for this."""
    from fsspec.implementations.local import LocalFileSystem

    from tallyboard.plugin.registry import get_registry

    if not isinstance(reader.fs, LocalFileSystem):
        return False
    read_here = [
        spec
        for spec in get_registry().readers.values()
        if spec.priority is not None and spec.name not in skipped
    ]
    try:
        names = os.listdir(parent)
    except OSError:
        return False
    files = [os.path.join(parent, n) for n in names if any(s.matches(n) for s in read_here)]
    return bool(files) and all(_OWN_MARK in _head(path) for path in files)


def _head(path: str) -> bytes:
    """The first bytes of the regular file ``path`` (b"" for anything else), never waiting in
    ``open`` (a FIFO put there)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    try:
        return os.read(fd, 256) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)


def _refuse_overwriting_input(out: str, reader: RunReader, files: list[tuple[str, Any]]) -> None:
    """Refuse an output that exists inside the log dir being read, or is one of its files
    (through a link too): ``--force`` would destroy what is read. A new file there is fine."""
    from fsspec.implementations.local import LocalFileSystem

    if not os.path.lexists(out) or not isinstance(reader.fs, LocalFileSystem):
        return
    real, root = os.path.realpath(out), os.path.realpath(reader.root)
    inside = os.path.commonpath([real, root]) == root
    read = (getattr(r, "path", None) for _, r in files)
    if inside or any(isinstance(p, str) and _same_file(out, p) for p in read):
        raise CliError(
            f"-o {out}: refusing to overwrite a file inside the log dir being read ({reader.root});"
            " write the output elsewhere or to a new file"
        )


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def iter_file_batches(
    logdir: str, formats: Sequence[str] | None = None, runs: Sequence[str] | None = None
) -> Iterator[tuple[str, Batch]]:
    """``(run, batch)`` one file at a time, so only one file's records are held at once (of
    the runs ``runs`` names or globs match, when given)."""
    reader = _reader(logdir, formats, None, runs)
    for run, file_reader in reader.discover():
        yield run, file_reader.read_new()
    _note_skipped(reader)


def summarize(logdir: str, formats: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One dict per (run, kind, tag): count, first and last step, last wall time.

    Values no installed kind decodes are listed too, as kind ``undecoded`` with their ``plugin``
    name (steps and wall time None: only their count is kept)."""
    return [
        dict(zip(_LISTED, row[:7]), **({"plugin": row[7]} if row[1] == undecoded.KIND else {}))
        for row in _listing(logdir, formats)
    ]


_LISTED = ("run", "kind", "tag", "count", "min_step", "max_step", "last_wall_time")


def _listing(logdir: str, formats: Sequence[str] | None) -> list[tuple[Any, ...]]:
    """The rows of :func:`tallyboard.reading.listing.list_tree`, what was skipped noted."""
    try:
        rows, reader = list_tree(logdir, formats)
    except (TypeError, ValueError) as e:
        raise CliError(str(e)) from None
    _note_skipped(reader)
    return rows


def cmd_ls(logdir: str, as_json: bool, formats: Sequence[str] | None = None) -> int:
    if as_json:
        print(json.dumps(summarize(logdir, formats), indent=2))
        return 0
    rows = _listing(logdir, formats)
    if not rows:
        print(f"no runs with readable records under {logdir}")
        return 0
    header = ("run", "kind", "tag", "count", "steps", "last update (UTC)")
    widths = _widths(header, rows)
    write = sys.stdout.write
    write(_lines([header], widths))
    for start in range(0, len(rows), 10_000):  # never the whole table as strings at once
        write(_lines(_cells(rows[start : start + 10_000]), widths))
    _note_repeated_steps(rows)
    return 0


def _note_repeated_steps(rows: Sequence[tuple[Any, ...]]) -> None:
    """Say that ``count`` is records, not points, where a tag holds more records than its step
    range has steps (a step written twice: MindSpore's collector records at epoch ends so)."""
    over = [r for r in rows if r[4] is not None and r[3] > r[5] - r[4] + 1]
    if over:
        run, _, tag, count, lo, hi = over[0][:6]
        print(
            f"note: count is records: {len(over)} tag{'s hold' if len(over) > 1 else ' holds'} more "
            f"records than steps (e.g. {run} {tag}: {count} records over steps {lo}..{hi}), a "
            "step written more than once; TensorBoard draws one point per step",
            file=sys.stderr,
        )


def _cells(rows: Sequence[tuple[Any, ...]]) -> Iterator[tuple[str, ...]]:
    """The cells ``ls`` shows of each row of :func:`_listing` (a last update as
    ``YYYY-MM-DD HH:MM:SS`` UTC, or ``-``). Each distinct count, step range and second is
    formatted once: a sweep's runs repeat them."""
    import numpy as np

    if not rows:
        return iter(())
    run, kind, tag, count, lo, hi, last, plugin = zip(*rows)
    walls = np.array([np.nan if w is None else w for w in last], np.float64)
    shown = np.isfinite(walls) & (np.abs(walls) < 1e15)
    seconds, which = np.unique(np.floor(walls[shown]).astype(np.int64), return_inverse=True)
    stamps = np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s").tolist()
    stamps = [t.replace("T", " ") for t in stamps]
    at = iter(which.reshape(-1).tolist())
    return zip(
        run,
        [k if k != undecoded.KIND else f"undecoded ({p})" for k, p in zip(kind, plugin)],
        tag,
        _each_once(count, str),
        _each_once(zip(lo, hi), _step_range),
        [stamps[next(at)] if ok else "-" for ok in shown.tolist()],
    )


def _each_once(values: Iterable[Any], fmt: Callable[[Any], str]) -> list[str]:
    """``fmt(v)`` for every value, each distinct value formatted once."""
    done: dict[Any, str] = {}
    return [done[v] if v in done else done.setdefault(v, fmt(v)) for v in values]


def _step_range(lo_hi: tuple[Any, Any]) -> str:
    lo, hi = lo_hi
    return "-" if lo is None else f"{lo}..{hi}"


def _widths(header: tuple[str, ...], rows: Sequence[tuple[Any, ...]]) -> list[int]:
    """The width of each column of the ``ls`` table but the last, found without formatting
    every cell."""
    widths = [len(h) for h in header]
    if not rows:
        return widths
    undecoded_kind = undecoded.KIND
    widths[0] = max(widths[0], max(len(r[0]) for r in rows))
    kinds = {(r[1], r[7]) for r in rows}
    widths[1] = max(
        widths[1],
        *(len(k) if k != undecoded_kind else len(f"undecoded ({p})") for k, p in kinds),
    )
    widths[2] = max(widths[2], max(len(r[2]) for r in rows))
    widths[3] = max(widths[3], len(str(max(r[3] for r in rows))))
    widths[4] = max(
        widths[4],
        max(1 if r[4] is None else len(str(r[4])) + len(str(r[5])) + 2 for r in rows),
    )
    return widths  # the last column is not padded: its width is not needed


def _lines(cells: Iterable[tuple[str, ...]], widths: list[int]) -> str:
    """Rows of cells as the table's lines, each ending in a newline (the last cell, never
    empty, is not padded)."""
    line = "  ".join([*(f"%-{w}s" for w in widths[:-1]), "%s\n"])
    return "".join(map(line.__mod__, cells))


class _Progress:
    """tqdm when importable, else a one-line counter; silent unless stderr is a TTY."""

    def __init__(self, total: int, what: str = "export") -> None:
        self.total, self.done, self.bar, self.what = total, 0, None, what
        self.on = sys.stderr.isatty()
        if self.on:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="file", file=sys.stderr)
            except ImportError:
                self.bar = None

    def update(self) -> None:
        self.done += 1
        if not self.on:
            return
        if self.bar is not None:
            self.bar.update(1)
        else:
            print(f"\r{self.what}: {self.done}/{self.total} files", end="", file=sys.stderr)

    def close(self) -> None:
        if self.on:
            if self.bar is not None:
                self.bar.close()
            else:
                print(file=sys.stderr)


SCALAR_COLUMNS = ("run", "tag", "step", "wall_time", "value")
ROW_COLUMNS = ("run", "tag", "step", "wall_time")


class TagFilter:
    """The tags ``--tags`` keeps (names or globs, matched as :func:`tallyboard.read` matches
    them), each tag's answer kept; and every tag it was asked about, to say what exists when
    it kept none."""

    def __init__(self, tags: Sequence[str] | None) -> None:
        self.asked = names_or_globs(tags, "tags") if tags else None
        self._match = matcher(self.asked)
        self.seen: dict[str, bool] = {}

    def __call__(self, tag: str) -> bool:
        keep = self.seen.get(tag)
        if keep is None:
            keep = self.seen[tag] = self.asked is None or self._match(tag)
        return keep

    def keep(self, tags: Iterable[str]) -> list[bool]:
        seen, match = self.seen, self
        return [seen[t] if t in seen else match(t) for t in tags]


def _scalar_records(run: str, b: Batch, tags: TagFilter) -> list[tuple[Any, ...]]:
    tag, step, wall, value = b.scalars()
    keep = tags.keep(tag.tolist())
    if not all(keep):
        tag, step, wall, value = tag[keep], step[keep], wall[keep], value[keep]
    return list(zip([run] * len(tag), tag.tolist(), step.tolist(), wall.tolist(), value.tolist()))


def _kind_rows(
    run: str, b: Batch, kind: Any, tags: TagFilter | None = None
) -> list[dict[str, Any]]:
    """The decoded rows of ``kind`` in one file, shaped by the kind's ``read_table`` (applied to
    this file's rows and batch: memory stays one file's worth)."""
    rows = [  # the fields of each row, not the payload a decoder gave (Kind.to_row's row)
        {"run": run, **{k: v for k, v in row.items() if k != PAYLOAD_KEY}}
        for row in b.rows.get(kind.name, ())
        if tags is None or tags(row["tag"])
    ]
    if kind.read_table is not None and rows:
        rows = kind.read_table(rows, [(run, b)])
    return rows


def _json_default(value: Any) -> Any:
    import numpy as np

    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"cannot export a {type(value).__name__} value")


def _npy(array: Any) -> bytes:
    import io

    import numpy as np

    out = io.BytesIO()
    np.save(out, array, allow_pickle=False)
    return out.getvalue()


def export_cell(value: Any, fmt: str) -> Any:
    """One decoded field as a cell of ``fmt``.

    bytes (encoded images and audio): base64 text in csv and jsonl, binary in parquet. NumPy
    arrays (tensors): nested lists in jsonl, their JSON text in csv, ``.npy`` bytes in parquet
    (``numpy.load(io.BytesIO(cell))`` gives the array back, dtype and shape included). Lists
    and dicts: JSON text in csv, lists in parquet (dicts as JSON text), as they are in jsonl.
    """
    import numpy as np

    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value) if fmt == "parquet" else base64.b64encode(value).decode("ascii")
    if isinstance(value, np.ndarray):
        if fmt == "parquet":
            return _npy(value)
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (list, tuple, dict)) and (
        fmt == "csv" or (fmt == "parquet" and isinstance(value, dict))
    ):
        return json.dumps(value, default=_json_default)
    return value


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("run", pa.string()),
            ("tag", pa.string()),
            ("step", pa.int64()),
            ("wall_time", pa.float64()),
            ("value", pa.float64()),
        ]
    )


class _Out:
    """Writes chunks of records to one csv, jsonl or parquet file; the first chunk fixes the
    columns of csv and parquet (a later column is left out, with one warning)."""

    def __init__(self, fh: Any, fmt: str, columns: Sequence[str] | None, schema: Any) -> None:
        self.fh, self.fmt = fh, fmt
        self.columns: list[str] | None = list(columns) if columns is not None else None
        self.schema = schema
        self.pq_writer: Any = None
        self.dropped: set[str] = set()

    def _header(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        if self.fmt == "csv":
            self._csv([self.columns])

    def _csv(self, records: Any) -> None:
        import csv
        import io

        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(records)
        self.fh.write(buf.getvalue().encode())

    def write_records(self, records: list[tuple[Any, ...]]) -> None:
        """Records in the order of the columns given at construction (scalars)."""
        assert self.columns is not None
        if self.fmt == "csv":
            self._csv(records)
        elif self.fmt == "jsonl":
            keys = self.columns
            self.fh.write("".join(json.dumps(dict(zip(keys, r))) + "\n" for r in records).encode())
        else:
            self._parquet({k: list(col) for k, col in zip(self.columns, zip(*records))})

    def write_rows(self, rows: list[dict[str, Any]]) -> None:
        """Decoded rows (dicts), their fields turned into cells of this format."""
        fmt = self.fmt
        if fmt == "jsonl":
            self.fh.write(
                "".join(
                    json.dumps(
                        {k: export_cell(v, fmt) for k, v in row.items()}, default=_json_default
                    )
                    + "\n"
                    for row in rows
                ).encode()
            )
            return
        if self.columns is None:
            self._header(list(rows[0]))
        assert self.columns is not None
        extra = {k for row in rows for k in row} - set(self.columns) - self.dropped
        if extra:
            self.dropped |= extra
            print(
                f"tallyboard export: columns {sorted(extra)} appear after the first file and "
                "are left out (export as jsonl to keep every field)",
                file=sys.stderr,
            )
        cells = [[export_cell(row.get(k), fmt) for k in self.columns] for row in rows]
        if fmt == "csv":
            self._csv(cells)
        else:
            self._parquet({k: [c[i] for c in cells] for i, k in enumerate(self.columns)})

    def _parquet(self, table_columns: dict[str, list[Any]]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pa.table(table_columns, schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise CliError(
                f"a column changes type between files ({exc}); export as jsonl or csv instead"
            ) from None
        if self.pq_writer is None:
            self.schema = table.schema
            self.pq_writer = pq.ParquetWriter(self.fh, self.schema)
        self.pq_writer.write_table(table)

    def close(self) -> None:
        if self.fmt == "csv" and self.columns is None:
            self._header(ROW_COLUMNS)
        if self.fmt != "parquet":
            return
        if self.pq_writer is None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            schema = self.schema or pa.schema(
                [("run", pa.string()), ("tag", pa.string()), ("step", pa.int64())]
                + [("wall_time", pa.float64())]
            )
            pq.write_table(schema.empty_table(), self.fh)
        else:
            self.pq_writer.close()


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
    from tallyboard.plugin.registry import get_registry

    if fmt is None:
        fmt = os.path.splitext(out)[1].lstrip(".").lower()
        if fmt not in EXPORT_FORMATS:
            raise CliError(
                f"cannot tell the format from {out!r}: use a .csv, .parquet or .jsonl name or --format"
            )
    if fmt == "parquet":
        require("pyarrow", "read", "tallyboard export --format parquet")
    try:
        kind_spec = get_registry().kind(kind)
    except ValueError as e:
        raise CliError(f"--kind: {e}") from None
    if os.path.exists(out) and not force:
        raise CliError(f"{out} exists; pass --force to overwrite it")
    run_reader = _reader(logdir, formats, kind, runs)
    files = run_reader.discover()
    if not files:
        raise CliError(_no_runs(logdir, formats, kind, runs))
    _refuse_overwriting_input(out, run_reader, files)
    _note_skipped(run_reader)
    tag_filter = TagFilter(tags)
    tmp = out + ".partial"
    progress = _Progress(len(files))
    rows_written = 0
    scalar = kind == SCALAR
    try:
        with open(tmp, "wb") as fh:
            writer = _Out(
                fh,
                fmt,
                SCALAR_COLUMNS if scalar else None,
                _arrow_schema() if scalar and fmt == "parquet" else None,
            )
            if scalar and fmt == "csv":
                writer._header(SCALAR_COLUMNS)
            for run, reader in files:
                batch = reader.read_new()
                progress.update()
                if scalar:
                    records = _scalar_records(run, batch, tag_filter)
                    if records:
                        writer.write_records(records)
                    rows_written += len(records)
                else:
                    rows = _kind_rows(run, batch, kind_spec, tag_filter)
                    if rows:
                        writer.write_rows(rows)
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


def _no_runs(
    logdir: str, formats: Sequence[str] | None, kind: str, runs: Sequence[str] | None
) -> str:
    """What to say when no file of a run ``--runs`` asked for is there: the runs that are."""
    if not runs:
        return (
            f"no runs under {logdir}: no folder there holds files tallyboard reads; nothing written"
        )
    every = _reader(logdir, formats, kind)
    every.refresh()
    there = sorted({run for _, run in every.paths()})
    return (
        f"--runs {' '.join(runs)} matches no run under {logdir}; runs there: "
        f"{_closest(runs, there)}; nothing written"
    )


def _nothing_selected(logdir: str, kind: str, tags: TagFilter, files: list[Any]) -> str:
    """What to say when the runs read hold no value of ``kind`` that ``--tags`` keeps."""
    n_runs = len({run for run, _ in files})
    where = f"in the {n_runs} run{'s' if n_runs > 1 else ''} read under {logdir}"
    if not tags.seen:
        return f"no {kind} values {where}; nothing written (--kind picks another kind)"
    return (
        f"--tags {' '.join(tags.asked or ())} matches none of the {len(tags.seen)} {kind} tags "
        f"{where}; closest: {_closest(tags.asked or (), list(tags.seen))}; nothing written"
    )


def _closest(asked: Sequence[str], names: Sequence[str], n: int = 5) -> str:
    """Up to ``n`` of ``names``, those closest to what was asked first."""
    import difflib

    ranked: list[str] = []
    for want in asked:
        for name in difflib.get_close_matches(want.replace("*", ""), names, n, 0.0):
            if name not in ranked:
                ranked.append(name)
    shown = ranked[:n] or sorted(names)[:n]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" (and {more} more)" if more > 0 else "") if shown else "none"


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
    from tallyboard.reading.progress import Progress

    try:
        kind_spec = get_registry().kind(kind)
    except ValueError as e:
        raise CliError(f"--kind: {e}") from None

    def rows_of(run: str, batch: Batch) -> list[dict[str, Any]]:
        return [
            {k: export_cell(v, "parquet") for k, v in row.items()}
            for row in _kind_rows(run, batch, kind_spec, None)
        ]

    bar = Progress(None, "export")
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


def cmd_convert(
    src: str, dst: str, to: str, force: bool, formats: Sequence[str] | None = None
) -> int:
    from tallyboard.reading.convert import convert

    bar: list[_Progress] = []

    def progress(done: int, total: int) -> None:
        if not bar:
            bar.append(_Progress(total, "convert"))
        bar[0].update()

    try:
        summary = convert(src, dst, to, force=force, progress=progress, formats=formats)
    except FileExistsError:
        raise CliError(
            f"{dst} already holds files; pass --force to add the converted runs beside them "
            "(no existing file is overwritten)"
        ) from None
    except (TypeError, ValueError) as e:
        raise CliError(str(e)) from None
    finally:
        if bar:
            bar[0].close()
    if not summary.files:
        print(
            f"tallyboard convert: no readable files under {src}; nothing written", file=sys.stderr
        )
        return 0
    print(f"tallyboard convert: {summary.converted_line()}", file=sys.stderr)
    line = summary.not_converted_line()
    if line:
        print(f"tallyboard convert: {line}", file=sys.stderr)
    return 0


def smooth(values: Sequence[float], weight: float) -> list[float]:
    """TensorBoard's debiased exponential moving average (``weight`` in [0, 1), 0 is no smoothing).

    ``last = last * w + (1 - w) * v``, divided by ``1 - w ** n`` after ``n`` finite values so the
    start is not pulled toward zero; non-finite values pass through unchanged.
    """
    if not 0 <= weight < 1:
        raise ValueError(f"weight must be in [0, 1), got {weight!r}")
    last, n, out = 0.0, 0, []
    for v in values:
        if v != v or v in (float("inf"), float("-inf")):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        n += 1
        out.append(last / (1 - weight**n) if weight else last)
    return out


def cmd_plot(
    logdir: str,
    tag: str,
    out: str,
    weight: float,
    band: bool,
    runs: Sequence[str] | None,
    force: bool,
    formats: Sequence[str] | None = None,
) -> int:
    import numpy as np

    require("matplotlib", "figures", "tallyboard plot")
    if os.path.exists(out) and not force:
        raise CliError(f"{out} exists; pass --force to overwrite it")
    if os.path.lexists(out):
        probe = _reader(logdir, formats)
        _refuse_overwriting_input(out, probe, probe.discover())
    series: dict[str, dict[int, float]] = {}
    seen: set[str] = set()
    for run, b in iter_file_batches(logdir, formats, runs):
        tags, steps, _, values = b.scalars()
        seen.update(tags.tolist())
        for t, step, v in zip(tags.tolist(), steps.tolist(), values.tolist()):
            if t == tag:
                series.setdefault(run, {})[int(step)] = float(v)
    if not series:
        have = ", ".join(sorted(seen)) or "none"
        raise CliError(f"no scalar tag {tag!r} in the selected runs; tags there: {have}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    if band:
        steps = sorted(set().union(*(set(s) for s in series.values())))
        grid = np.full((len(series), len(steps)), np.nan)
        col = {s: i for i, s in enumerate(steps)}
        for r, s in enumerate(series.values()):
            for st, v in s.items():
                grid[r, col[st]] = v
        grid = np.array([smooth(list(row), weight) for row in grid])
        with np.errstate(all="ignore"):
            lo, hi = np.nanmin(grid, axis=0), np.nanmax(grid, axis=0)
            mean = np.nanmean(grid, axis=0)
        ax.fill_between(steps, lo, hi, alpha=0.3, label=f"min..max over {len(series)} runs")
        ax.plot(steps, mean, label="mean")
    else:
        for run in sorted(series):
            pts = sorted(series[run].items())
            ax.plot([p[0] for p in pts], smooth([p[1] for p in pts], weight), label=run)
    ax.set_xlabel("step")
    ax.set_ylabel(tag)
    ax.set_title(tag + (f" (smoothing {weight})" if weight else ""))
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _smoothing(text: str) -> float:
    import argparse

    try:
        w = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not 0 <= w < 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return w


LOGDIR_HELP = "log directory: a local path or an fsspec URL (s3://bucket/runs)"
RUNS_HELP = (
    "keep this run: a name (its path under the log dir) or a glob such as 'lr=0.1/*', matched"
    " as tallyboard.read(runs=...) matches; repeat the option for more (default: every run)"
)
TAGS_HELP = (
    "keep this tag: a name or a glob such as 'loss/*', matched as tallyboard.read(tags=...)"
    " matches; repeat the option for more (default: every tag)"
)


def _add_from(parser: Any) -> None:
    parser.add_argument(
        "--from",
        dest="formats",
        action="append",
        metavar="FORMAT",
        help="read only this format (tfevents, mindspore, csv, jsonl, ...); repeat the option for "
        "more; by default a run holding the same values in several formats is read in one, event "
        "files first",
    )


def add_parsers(sub: Any) -> None:
    """Add ``ls``, ``export``, ``plot`` and ``convert`` to the ``tallyboard`` subparsers."""
    p = sub.add_parser("ls", help="runs, tags per kind, counts, step range, last update")
    p.add_argument("logdir", help=LOGDIR_HELP)
    p.add_argument("--json", action="store_true", help="print JSON for scripts instead of text")
    _add_from(p)
    p = sub.add_parser("export", help="scalars (or another kind) to csv, parquet or jsonl")
    p.add_argument("logdir", help=LOGDIR_HELP)
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument(
        "-o",
        "--output",
        help="the file to write: out.csv, out.parquet or out.jsonl (this or --dataset); none "
        "is made when no value is selected (an error naming what exists)",
    )
    out.add_argument(
        "--dataset",
        metavar="DIR",
        help="a Parquet dataset partitioned by run and kind; a later export appends only what "
        "is new",
    )
    p.add_argument(
        "--on",
        metavar="ENGINE",
        help="with --dataset: read and write on a cluster's workers, in shares of runs: "
        "dask://HOST:PORT, ray://HOST:PORT, or dask / ray for one on this machine (default: "
        "read and written by this machine's processes)",
    )
    p.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        help="the output's format (default: from the output's suffix)",
    )
    # One value per --runs/--tags (repeated for more): a list option taking every word after it
    # would take the log dir too (`export --runs demo runs -o x.csv`).
    p.add_argument("--runs", action="append", metavar="RUN", help=RUNS_HELP)
    p.add_argument("--tags", action="append", metavar="TAG", help=TAGS_HELP)
    p.add_argument(
        "--kind",
        default=SCALAR,
        help="the kind to export (default scalar): histogram, image, text, audio, tensor, ...; "
        "bytes are base64 in csv/jsonl and binary in parquet, arrays nested lists in jsonl and "
        ".npy bytes in parquet",
    )
    _add_from(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p = sub.add_parser("plot", help="one scalar tag over runs as a PNG")
    p.add_argument("logdir", help=LOGDIR_HELP)
    p.add_argument("--tag", required=True, help="the scalar tag to plot")
    p.add_argument("-o", "--output", required=True, help="image path (.png)")
    p.add_argument(
        "--smooth",
        type=_smoothing,
        default=0.0,
        metavar="WEIGHT",
        help="TensorBoard's smoothing weight, in [0, 1) (default: 0.0, no smoothing)",
    )
    p.add_argument(
        "--band", action="store_true", help="draw the mean over runs with a min..max band"
    )
    p.add_argument("--runs", action="append", metavar="RUN", help=RUNS_HELP)
    _add_from(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p = sub.add_parser("convert", help="rewrite every run in another format (tfevents, mindspore)")
    p.add_argument("src", help="log dir (path or fsspec URL) whose runs are read")
    p.add_argument("dst", help="local directory the converted runs go to (dst/<run>)")
    p.add_argument("--to", required=True, help="target format: a sink name, tfevents or mindspore")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a dst that holds files (none is ever overwritten)",
    )
    _add_from(p)


def dispatch(args: Any) -> int:
    """Run the command ``args`` names; a :class:`CliError` becomes one line and exit code 1."""
    _noted.clear()
    try:
        if args.command == "ls":
            return cmd_ls(args.logdir, args.json, args.formats)
        if args.command == "export" and args.dataset is not None:
            return cmd_export_dataset(
                args.logdir, args.dataset, args.runs, args.tags, args.kind, args.formats, args.on
            )
        if args.command == "export" and args.on is not None:
            raise CliError("--on works with --dataset only")
        if args.command == "export":
            return cmd_export(
                args.logdir,
                args.output,
                args.format,
                args.runs,
                args.tags,
                args.force,
                args.kind,
                args.formats,
            )
        if args.command == "plot":
            return cmd_plot(
                args.logdir,
                args.tag,
                args.output,
                args.smooth,
                args.band,
                args.runs,
                args.force,
                args.formats,
            )
        if args.command == "convert":
            return cmd_convert(args.src, args.dst, args.to, args.force, args.formats)
    except CliError as e:
        print(f"tallyboard {args.command}: {e}", file=sys.stderr)
        return 1
    return 2
