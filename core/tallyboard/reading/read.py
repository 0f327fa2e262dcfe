"""``tallyboard.read``: a log dir (local path or fsspec URL) as a tidy table.

pandas and pyarrow are optional (``pip install tallyboard[read]``) and imported only here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tallyboard.extras import require
from tallyboard.plugin.readers import Batch
from tallyboard.plugin.registry import get_registry
from tallyboard.reading import undecoded
from tallyboard.reading.runs import RunReader
from tallyboard.warn import ReadWarning, warn

FORMATS = ("pandas", "arrow")


def _names(arg: Any, what: str) -> set[str] | None:
    if arg is None:
        return None
    if isinstance(arg, str):
        return {arg}
    if isinstance(arg, Iterable) and all(isinstance(a, str) for a in arg):
        return set(arg)
    raise TypeError(f"{what} must be None, a str or an iterable of str, got {arg!r}")


def read(
    logdir: str,
    runs: str | Iterable[str] | None = None,
    tags: str | Iterable[str] | None = None,
    kind: str = "scalar",
    table: str = "pandas",
    formats: str | Iterable[str] | None = None,
) -> Any:
    """Every value of ``kind`` under ``logdir`` as one table, nothing downsampled.

    Scalars come as columns ``run, tag, step, wall_time, value``; other kinds as
    ``run, tag, step, wall_time`` plus the fields their decoder gives. ``runs`` and ``tags``
    keep only the named runs (paths relative to ``logdir``, ``"."`` for itself) and tags.
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

    Values no installed kind decodes (a third-party plugin's summaries, say) are never dropped
    silently: one ``ReadWarning`` names each run, plugin name and tag with its count.
    """
    if table not in FORMATS:
        raise ValueError(f"table must be one of {FORMATS}, got {table!r}")
    require("pyarrow" if table == "arrow" else "pandas", "read", "tallyboard.read")
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, got {type(kind).__name__}")
    run_set, tag_set = _names(runs, "runs"), _names(tags, "tags")
    batches = [
        (r, b)
        for r, b in RunReader(logdir, formats, kind).read()
        if run_set is None or r in run_set
    ]
    missed = undecoded.collect(batches, tag_set)
    if missed:
        warn(
            f"tallyboard.read: {sum(missed.values())} values under {logdir!r} are of no kind "
            f"an installed plugin decodes, so no kind= gives them: {undecoded.describe(missed)}",
            ReadWarning,
        )
    if kind == "scalar":
        return _scalar_table(batches, tag_set, table)
    rows = [
        {"run": run, **row}
        for run, batch in batches
        for row in batch.rows.get(kind, ())
        if tag_set is None or row["tag"] in tag_set
    ]
    shape = getattr(get_registry().kinds.get(kind), "read_table", None)
    if shape is not None:
        rows = shape(rows, batches)
    if table == "arrow":
        import pyarrow as pa

        return pa.Table.from_pylist(rows)
    import pandas as pd

    return pd.DataFrame(rows, columns=None if rows else ["run", "tag", "step", "wall_time"])


def _scalar_table(batches: list[tuple[str, Batch]], tag_set: set[str] | None, table: str) -> Any:
    import numpy as np

    parts = []
    for run, b in batches:
        b.flush_lists()  # scalars decoded one by one come after the bulk ones
        columns, b.columns = b.columns, []  # the table owns them now: each is freed once copied
        for tag_names, codes, step, wall, value in columns:
            # tag codes per chunk: the few distinct tags, not a million strings, reach the table
            names = np.array(tag_names, dtype=object)
            cols = {"codes": codes, "step": step, "wall_time": wall, "value": value}
            if tag_set is not None:
                keep = np.isin(names, list(tag_set))[codes]
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
