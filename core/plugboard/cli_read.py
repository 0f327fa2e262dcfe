"""``plugboard ls | export | plot | board``: look at a log dir from the shell.

Heavy libraries (pyarrow, matplotlib, tqdm, tensorboard) are imported only by the command
that needs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from .readers import Batch, RunReader

EXPORT_FORMATS = ("csv", "parquet", "jsonl")


class CliError(Exception):
    """A user error reported as one line on stderr with exit code 1."""


def _reader(logdir: str) -> RunReader:
    try:
        return RunReader(logdir)
    except (TypeError, ValueError) as e:
        raise CliError(str(e)) from None


def iter_file_batches(logdir: str) -> Iterator[tuple[str, Batch]]:
    """``(run, batch)`` one file at a time, so only one file's records are held at once."""
    for run, reader in _reader(logdir).discover():
        yield run, reader.read_new()


def summarize(logdir: str) -> list[dict[str, Any]]:
    """One dict per (run, kind, tag): count, first and last step, last wall time."""
    stats: dict[tuple[str, str, str], dict[str, Any]] = {}

    def add(run: str, kind: str, tag: str, step: int, wall: float) -> None:
        s = stats.get((run, kind, tag))
        if s is None:
            stats[(run, kind, tag)] = {
                "run": run,
                "kind": kind,
                "tag": tag,
                "count": 1,
                "min_step": step,
                "max_step": step,
                "last_wall_time": wall,
            }
            return
        s["count"] += 1
        s["min_step"] = min(s["min_step"], step)
        s["max_step"] = max(s["max_step"], step)
        s["last_wall_time"] = max(s["last_wall_time"], wall)

    for run, b in iter_file_batches(logdir):
        tags, steps, walls, _ = b.scalars()
        for tag, step, wall in zip(tags.tolist(), steps.tolist(), walls.tolist()):
            add(run, "scalar", tag, step, wall)
        for kind, rows in b.rows.items():
            for row in rows:
                add(run, kind, str(row["tag"]), int(row["step"]), float(row["wall_time"]))
    return [stats[k] for k in sorted(stats)]


def cmd_ls(logdir: str, as_json: bool) -> int:
    rows = summarize(logdir)
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no runs with readable records under {logdir}")
        return 0
    header = ("run", "kind", "tag", "count", "steps", "last update (UTC)")
    table = [
        (
            r["run"],
            r["kind"],
            r["tag"],
            str(r["count"]),
            f"{r['min_step']}..{r['max_step']}",
            time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["last_wall_time"])),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(len(header))]
    for row in [header, *table]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0


class _Progress:
    """tqdm when importable, else a one-line counter; silent unless stderr is a TTY."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.bar = total, 0, None
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
            print(f"\rexport: {self.done}/{self.total} files", end="", file=sys.stderr)

    def close(self) -> None:
        if self.on:
            if self.bar is not None:
                self.bar.close()
            else:
                print(file=sys.stderr)


def _scalar_columns(run: str, b: Batch, tags: set[str] | None) -> dict[str, list[Any]]:
    tag, step, wall, value = b.scalars()
    if tags is not None:
        keep = [t in tags for t in tag.tolist()]
        tag, step, wall, value = tag[keep], step[keep], wall[keep], value[keep]
    return {
        "run": [run] * len(tag),
        "tag": tag.tolist(),
        "step": step.tolist(),
        "wall_time": wall.tolist(),
        "value": value.tolist(),
    }


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


def cmd_export(
    logdir: str,
    out: str,
    fmt: str | None,
    runs: Sequence[str] | None,
    tags: Sequence[str] | None,
    force: bool,
) -> int:
    if fmt is None:
        fmt = os.path.splitext(out)[1].lstrip(".").lower()
        if fmt not in EXPORT_FORMATS:
            raise CliError(
                f"cannot tell the format from {out!r}: use a .csv, .parquet or .jsonl name or --format"
            )
    if os.path.exists(out) and not force:
        raise CliError(f"{out} exists; pass --force to overwrite it")
    files = _reader(logdir).discover()
    run_set, tag_set = (set(runs) if runs else None), (set(tags) if tags else None)
    tmp = out + ".partial"
    progress = _Progress(len(files))
    rows_written = 0
    writer: Any = None
    schema: Any = None
    try:
        with open(tmp, "wb") as fh:
            if fmt == "csv":
                fh.write(b"run,tag,step,wall_time,value\n")
            for run, reader in files:
                batch = reader.read_new()
                progress.update()
                if run_set is not None and run not in run_set:
                    continue
                cols = _scalar_columns(run, batch, tag_set)
                n = len(cols["step"])
                if not n:
                    continue
                rows_written += n
                if fmt == "parquet":
                    import pyarrow as pa
                    import pyarrow.parquet as pq

                    if schema is None:
                        schema = _arrow_schema()
                        writer = pq.ParquetWriter(fh, schema)
                    writer.write_table(pa.table(cols, schema=schema))
                elif fmt == "csv":
                    import csv
                    import io

                    buf = io.StringIO()
                    csv.writer(buf, lineterminator="\n").writerows(
                        zip(*(cols[k] for k in ("run", "tag", "step", "wall_time", "value")))
                    )
                    fh.write(buf.getvalue().encode())
                else:
                    keys = list(cols)
                    fh.write(
                        "".join(
                            json.dumps(dict(zip(keys, vals))) + "\n"
                            for vals in zip(*(cols[k] for k in keys))
                        ).encode()
                    )
            if fmt == "parquet":
                if writer is None:
                    import pyarrow as pa
                    import pyarrow.parquet as pq

                    empty: dict[str, list[Any]] = {
                        "run": [],
                        "tag": [],
                        "step": [],
                        "wall_time": [],
                        "value": [],
                    }
                    schema = _arrow_schema()
                    pq.write_table(pa.table(empty, schema=schema), fh)
                else:
                    writer.close()
        os.replace(tmp, out)
    finally:
        progress.close()
        if os.path.exists(tmp):
            os.remove(tmp)
    print(f"wrote {rows_written} scalars to {out}", file=sys.stderr)
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
) -> int:
    import numpy as np

    if os.path.exists(out) and not force:
        raise CliError(f"{out} exists; pass --force to overwrite it")
    run_set = set(runs) if runs else None
    series: dict[str, dict[int, float]] = {}
    seen: set[str] = set()
    for run, b in iter_file_batches(logdir):
        if run_set is not None and run not in run_set:
            continue
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


def cmd_board(logdir: str, host: str, port: int) -> int:
    try:
        import tensorboard.main  # noqa: F401
    except ImportError:
        print(
            "plugboard board: TensorBoard is not installed; pip install tensorboard",
            file=sys.stderr,
        )
        return 1
    if not os.path.isdir(logdir) and "://" not in logdir:
        raise CliError(f"logdir {logdir!r} is not a directory")
    cmd = [sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--host", host]
    cmd += ["--port", str(port)]
    if os.name == "posix":
        os.execv(sys.executable, cmd)
    return subprocess.call(cmd)


def _smoothing(text: str) -> float:
    import argparse

    try:
        w = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not 0 <= w < 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return w


def add_parsers(sub: Any) -> None:
    """Add ``ls``, ``export``, ``plot`` and ``board`` to the ``plugboard`` subparsers."""
    p = sub.add_parser("ls", help="runs, tags per kind, counts, step range, last update")
    p.add_argument("logdir")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = sub.add_parser("export", help="scalars to csv, parquet or jsonl")
    p.add_argument("logdir")
    p.add_argument("-o", "--output", required=True, help="out.csv, out.parquet or out.jsonl")
    p.add_argument("--format", choices=EXPORT_FORMATS, help="default: from the output suffix")
    p.add_argument("--runs", nargs="+", help="keep only these runs")
    p.add_argument("--tags", nargs="+", help="keep only these tags")
    p.add_argument("--force", action="store_true", help="overwrite the output")
    p = sub.add_parser("plot", help="one scalar tag over runs as a PNG")
    p.add_argument("logdir")
    p.add_argument("--tag", required=True)
    p.add_argument("-o", "--output", required=True, help="image path (.png)")
    p.add_argument("--smooth", type=_smoothing, default=0.0, help="TensorBoard smoothing, [0, 1)")
    p.add_argument("--band", action="store_true", help="mean over runs with a min..max band")
    p.add_argument("--runs", nargs="+", help="keep only these runs")
    p.add_argument("--force", action="store_true", help="overwrite the output")
    p = sub.add_parser("board", help="start TensorBoard on the log dir")
    p.add_argument("logdir")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=6006)


def dispatch(args: Any) -> int:
    """Run the command ``args`` names; a :class:`CliError` becomes one line and exit code 1."""
    try:
        if args.command == "ls":
            return cmd_ls(args.logdir, args.json)
        if args.command == "export":
            return cmd_export(
                args.logdir, args.output, args.format, args.runs, args.tags, args.force
            )
        if args.command == "plot":
            return cmd_plot(
                args.logdir, args.tag, args.output, args.smooth, args.band, args.runs, args.force
            )
        if args.command == "board":
            return cmd_board(args.logdir, args.host, args.port)
    except CliError as e:
        print(f"plugboard {args.command}: {e}", file=sys.stderr)
        return 1
    return 2
