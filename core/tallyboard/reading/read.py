"""``tallyboard.read``: a log dir (local path or fsspec URL) as a tidy table.

pandas and pyarrow are optional (``pip install tallyboard[read]``) and imported only here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tallyboard.extras import require
from tallyboard.plugin.readers import Batch
from tallyboard.plugin.registry import get_registry
from tallyboard.reading import undecoded
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
    run_reader = RunReader(logdir, formats, kind, runs=names_or_globs(runs, "runs"))
    files = run_reader.discover()
    bar = Progress(len(files), "read", show=progress)
    try:
        batches = [(r, b) for _, r, b in run_reader.iter_read(workers, bar, discover=False)]
    finally:
        bar.close()
    wanted_tag = matcher(tag_globs)
    missed = undecoded.collect(batches, None if tag_globs is None else wanted_tag)
    if missed:
        warn(
            f"tallyboard.read: {sum(missed.values())} values under {logdir!r} are of no kind "
            f"an installed plugin decodes, so no kind= gives them: {undecoded.describe(missed)}",
            ReadWarning,
        )
    return build_table(batches, kind, table, None if tag_globs is None else wanted_tag)


def build_table(
    batches: list[tuple[str, Batch]],
    kind: str = "scalar",
    table: str = "pandas",
    wanted_tag: Callable[[str], bool] | None = None,
) -> Any:
    """The table :func:`read` returns, of the values of ``kind`` in ``(run, batch)`` pairs
    (only the tags ``wanted_tag`` keeps, when given). The scalar columns are moved out of the
    batches into the table."""
    if kind == "scalar":
        return _scalar_table(batches, wanted_tag, table)
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


def _scalar_table(
    batches: list[tuple[str, Batch]], wanted_tag: Callable[[str], bool] | None, table: str
) -> Any:
    import numpy as np

    parts = []
    for run, b in batches:
        b.flush_lists()  # scalars decoded one by one come after the bulk ones
        columns, b.columns = b.columns, []  # the table owns them now: each is freed once copied
        for tag_names, codes, step, wall, value in columns:
            # tag codes per chunk: the few distinct tags, not a million strings, reach the table
            names = np.array(tag_names, dtype=object)
            cols = {"codes": codes, "step": step, "wall_time": wall, "value": value}
            if wanted_tag is not None:
                keep = np.array([wanted_tag(str(t)) for t in tag_names], bool)[codes]
                cols = {key: col[keep] for key, col in cols.items()}
            parts.append((run, names, cols))
        del columns
    all_tags = sorted({str(t) for _, names, _ in parts for t in names})
    all_runs = sorted({run for run, _, _ in parts})
    tag_index = {t: i for i, t in enumerate(all_tags)}
    run_index = {r: i for i, r in enumerate(all_runs)}
    # the smallest code type, as pandas would pick it: no second copy of the code columns
    run_t = np.min_scalar_type(-max(len(all_runs), 1))
    tag_t = np.min_scalar_type(-max(len(all_tags), 1))
    sizes = [len(c["step"]) for _, _, c in parts]
    bounds = np.cumsum([0, *sizes])

    def column(dtype: Any, piece: Any) -> Any:
        """One output column filled part by part; each part's source array is dropped once
        copied, so the peak is the parts plus one column, not the parts plus the table."""
        out = np.empty(int(bounds[-1]), dtype)
        for i, part in enumerate(parts):
            out[bounds[i] : bounds[i + 1]] = piece(part)
        return out

    run_codes = column(run_t, lambda p: run_index[p[0]])
    tag_codes = column(
        tag_t,
        lambda p: np.array([tag_index[str(t)] for t in p[1]], tag_t)[p[2].pop("codes")],
    )
    step = column(np.int64, lambda p: p[2].pop("step"))
    wall = column(np.float64, lambda p: p[2].pop("wall_time"))
    value = column(np.float64, lambda p: p[2].pop("value"))
    if table == "arrow":
        import pyarrow as pa

        return pa.table(
            {
                "run": pa.DictionaryArray.from_arrays(run_codes, pa.array(all_runs, pa.string())),
                "tag": pa.DictionaryArray.from_arrays(tag_codes, pa.array(all_tags, pa.string())),
                "step": step,
                "wall_time": wall,
                "value": value,
            }
        )
    import pandas as pd

    return pd.DataFrame(
        {
            "run": pd.Categorical.from_codes(run_codes, categories=all_runs),
            "tag": pd.Categorical.from_codes(tag_codes, categories=all_tags),
            "step": step,
            "wall_time": wall,
            "value": value,
        },
        copy=False,  # the columns are fresh: no second copy of the table
    )
