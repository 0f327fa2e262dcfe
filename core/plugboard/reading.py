"""``plugboard.read``: a log dir (local path or fsspec URL) as a tidy table.

pandas and pyarrow are optional (``pip install plugboard[read]``) and imported only here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .readers import Batch, RunReader
from .registry import get_registry

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
) -> Any:
    """Every value of ``kind`` under ``logdir`` as one table, nothing downsampled.

    Scalars come as columns ``run, tag, step, wall_time, value``; other kinds as
    ``run, tag, step, wall_time`` plus the fields their decoder gives. ``runs`` and ``tags``
    keep only the named runs (paths relative to ``logdir``, ``"."`` for itself) and tags.
    ``table`` is ``"pandas"`` (a DataFrame) or ``"arrow"`` (a pyarrow Table).
    Built-in kinds: ``histogram`` (min, max, num, sum, sum_squares, bucket_limit, bucket),
    ``text`` (value), ``image`` (width, height, colorspace, data: the encoded bytes, e.g.
    ``PIL.Image.open(io.BytesIO(row.data))``), ``audio`` (sample_rate, num_channels, length,
    content_type, data), ``tensor`` (dtype, shape, value: a numpy array) and ``hparams`` (one
    row per run: ``run``, its hparams, then the last value of each scalar tag of that run). A
    kind's ``read_table`` (see :class:`plugboard.Kind`) may reshape its rows so.
    """
    if table not in FORMATS:
        raise ValueError(f"table must be one of {FORMATS}, got {table!r}")
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, got {type(kind).__name__}")
    run_set, tag_set = _names(runs, "runs"), _names(tags, "tags")
    batches = [(r, b) for r, b in RunReader(logdir).read() if run_set is None or r in run_set]
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
        for tag_names, codes, step, wall, value in b.columns:
            # tag codes per chunk: the few distinct tags, not a million strings, reach the table
            names = np.array(tag_names, dtype=object)
            cols = {
                "tag_names": names,
                "codes": codes,
                "step": step,
                "wall_time": wall,
                "value": value,
            }
            if tag_set is not None:
                keep = np.isin(names, list(tag_set))[codes]
                for key in ("codes", "step", "wall_time", "value"):
                    cols[key] = cols[key][keep]
            parts.append((run, cols))
    all_tags = sorted({str(t) for _, c in parts for t in c["tag_names"]})
    all_runs = sorted({run for run, _ in parts})
    tag_index = {t: i for i, t in enumerate(all_tags)}
    run_index = {r: i for i, r in enumerate(all_runs)}
    # the smallest code type, as pandas would pick it: no second copy of the code columns
    run_t = np.min_scalar_type(-max(len(all_runs), 1))
    tag_t = np.min_scalar_type(-max(len(all_tags), 1))
    remap = [np.array([tag_index[str(t)] for t in c["tag_names"]], tag_t) for _, c in parts]
    run_codes = np.concatenate(
        [np.full(len(c["step"]), run_index[r], run_t) for r, c in parts] or [np.zeros(0, run_t)]
    )
    tag_codes = np.concatenate(
        [m[c.pop("codes")] for m, (_, c) in zip(remap, parts)] or [np.zeros(0, tag_t)]
    )

    def cat(key: str, dtype: Any) -> Any:
        return np.concatenate([c.pop(key) for _, c in parts] or [np.zeros(0, dtype)])

    step, wall, value = (
        cat("step", np.int64),
        cat("wall_time", np.float64),
        cat("value", np.float64),
    )
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
