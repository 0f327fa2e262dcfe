"""``tallyboard.read``: a log dir (local path or fsspec URL) as a tidy table.

pandas and pyarrow are optional (``pip install tallyboard[read]``) and imported only here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tallyboard.extras import require
from tallyboard.plugin.readers import Batch, Batches
from tallyboard.plugin.registry import get_registry
from tallyboard.reading import undecoded
from tallyboard.reading.columns import ScalarParts
from tallyboard.reading.progress import Progress
from tallyboard.reading.runs import RunReader, matcher, names_or_globs
from tallyboard.warn import ReadWarning, warn

FORMATS = ("pandas", "arrow")


def read(
    logdir: str,
    runs: str | Iterable[str] | None = None,
    tags: str | Iterable[str] | None = None,
    kind: str = "scalar",
    table: str = "pandas",
    formats: str | Iterable[str] | None = None,
    workers: int | None = None,
    progress: bool | None = None,
) -> Any:
    """Every value of ``kind`` under ``logdir`` as one table, nothing downsampled.

    Scalars come as columns ``run, tag, step, wall_time, value``; other kinds as
    ``run, tag, step, wall_time`` plus the fields their decoder gives. ``runs`` and ``tags``
    keep only the named runs (paths relative to ``logdir``, ``"."`` for itself) and tags; a
    name with ``*``, ``?`` or ``[...]`` is a glob (``runs="lr=0.1/*"``). Runs left out are never
    opened nor fetched.
    ``table`` is ``"pandas"`` (a DataFrame) or ``"arrow"`` (a pyarrow Table).
    A run directory holding the same values in several formats (``sinks=["tfevents", "csv"]``)
    is read in one of them, event files first, so nothing is counted twice; ``formats`` names
    the formats to read instead (``"tfevents"``, ``"mindspore"``, ``"csv"``, ``"jsonl"``, ...).
    Built-in kinds: ``histogram`` (min, max, num, sum, sum_squares, bucket_limit, bucket),
    ``text`` (value), ``image`` (width, height, colorspace, data: the encoded bytes, e.g.
    ``PIL.Image.open(io.BytesIO(row.data))``), ``audio`` (sample_rate, num_channels, length,
    content_type, data), ``tensor`` (dtype, shape, value: a numpy array) and ``hparams`` (one
    row per run: ``run``, its hparams, then the last value of each scalar tag of that run). A
    kind's ``read_table`` (see :class:`tallyboard.Kind`) may reshape its rows so.
    ``workers`` processes decode local files (default: this machine's cores when the files
    are big enough to pay for it; 1 reads here); remote files are fetched many at once.
    ``progress`` draws a bar on stderr (default: when stderr is a terminal and the read takes
    over a second).

    Values no installed kind decodes (a third-party plugin's summaries, say) are never dropped
    silently: one ``ReadWarning`` names each run, plugin name and tag with its count.
    """
    if table not in FORMATS:
        raise ValueError(f"table must be one of {FORMATS}, got {table!r}")
    require("pyarrow" if table == "arrow" else "pandas", "read", "tallyboard.read")
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, got {type(kind).__name__}")
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be None or a bool, got {progress!r}")
    tag_globs = names_or_globs(tags, "tags")
    wanted_tag = None if tag_globs is None else matcher(tag_globs)
    run_reader = RunReader(logdir, formats, kind, runs=names_or_globs(runs, "runs"), keep=False)
    run_reader.refresh()
    bar = Progress(len(run_reader.paths()), "read", show=progress)
    scalars = ScalarParts(wanted_tag) if kind == "scalar" else None
    batches: list[tuple[str, Batch]] = []  # the files' batches (scalars: only their own)
    try:
        for _, group_runs, group in run_reader.iter_groups(workers, bar, discover=False):
            if scalars is not None:
                scalars.add(group_runs, group)
                batches.extend(
                    (run, b)
                    for run, b in zip(group_runs, group.batches)
                    if b is not None and b.undecoded
                )
            else:
                batches.extend(zip(group_runs, group.split()))
            del group
    finally:
        bar.close()
    missed = undecoded.collect(batches, wanted_tag)
    if missed:
        warn(
            f"tallyboard.read: {sum(missed.values())} values under {logdir!r} are of no kind "
            f"an installed plugin decodes, so no kind= gives them: {undecoded.describe(missed)}",
            ReadWarning,
        )
    if scalars is not None:
        return scalars.table(table)
    return build_table(batches, kind, table, wanted_tag)


def build_table(
    batches: list[tuple[str, Batch]],
    kind: str = "scalar",
    table: str = "pandas",
    wanted_tag: Callable[[str], bool] | None = None,
) -> Any:
    """The table :func:`read` returns, of the values of ``kind`` in ``(run, batch)`` pairs
    (only the tags ``wanted_tag`` keeps, when given)."""
    if kind == "scalar":
        scalars = ScalarParts(wanted_tag)
        for run, batch in batches:
            batch.flush_lists()
            scalars.add([run], Batches([batch]))
        return scalars.table(table)
    rows = [
        {"run": run, **row}
        for run, batch in batches
        for row in batch.rows.get(kind, ())
        if wanted_tag is None or wanted_tag(row["tag"])
    ]
    shape = getattr(get_registry().kinds.get(kind), "read_table", None)
    if shape is not None:
        rows = shape(rows, batches)
    if table == "arrow":
        import pyarrow as pa

        return pa.Table.from_pylist(rows)
    import pandas as pd

    return pd.DataFrame(rows, columns=None if rows else ["run", "tag", "step", "wall_time"])
