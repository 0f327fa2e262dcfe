"""``tallyboard ls``: runs, tags per kind, counts, step range and last update of a log dir."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from tallyboard.cli.common import CliError
from tallyboard.cli.notes import note_skipped
from tallyboard.reading import undecoded
from tallyboard.reading.listing import list_tree


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
    note_skipped(reader)
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
