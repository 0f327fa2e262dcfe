"""Scalars of many files gathered into one table: parts kept as columns, the table built once.

A read hands :class:`ScalarParts` the :class:`~tallyboard.plugin.readers.Batches` of each group of
files as they are read. A group whose scalars are all in its shared columns is kept as one part
(its tag codes mapped to the read's tags, the run of each file and its row count; no row-level
run column, no per-file array); a file that holds scalars of its own adds parts of its own, in
file order. :meth:`ScalarParts.table` then fills each column of the table part by part, dropping
each part's array once copied, so memory peaks at the parts plus one column, not the parts plus
the table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tallyboard.plugin.readers import Batch, Batches


class _Part:
    __slots__ = ("runs", "counts", "tags", "step", "wall", "value")

    def __init__(self, runs: Any, counts: Any, tags: Any, step: Any, wall: Any, value: Any):
        self.runs, self.counts = runs, counts  # run id of each file, and its rows
        self.tags, self.step, self.wall, self.value = tags, step, wall, value


class ScalarParts:
    """Scalar columns gathered from groups of files, in order, for one table.

    ``wanted_tag``, when given, keeps only the tags it says yes to. Runs and tags are the
    table's categories as :func:`tallyboard.read` gives them: every run and every tag with a
    scalar record in the files read (kept by the tag filter or not).
    """

    def __init__(self, wanted_tag: Callable[[str], bool] | None = None) -> None:
        self.wanted_tag = wanted_tag
        self.parts: list[_Part] = []
        self.run_ids: dict[str, int] = {}
        self.tag_ids: dict[str, int] = {}
        self._runs_with_scalars: set[int] = set()
        self.rows = 0
        #: (run, tag) -> (display name, description), as the files give them
        self.metadata: dict[tuple[str, str], tuple[str, str]] = {}

    def add(self, runs: list[str], batches: Batches) -> None:
        """The scalars of a group of files (``runs[k]`` the run of file ``k``)."""
        import numpy as np

        own = [b is not None and _has_scalars(b) for b in batches.batches]
        for run, b in zip(runs, batches.batches):
            if b is not None and b.metadata:
                gather_metadata(self.metadata, run, b, self.wanted_tag)
        if batches.shared() and not any(own):
            self._add_shared(runs, batches, 0, len(runs))
            return
        for k, run in enumerate(runs):
            if batches.shared() and batches.counts[k]:
                self._add_shared(runs, batches, k, k + 1)
            b = batches.batches[k]
            if b is not None and own[k]:
                b.flush_lists()
                for names, codes, step, wall, value in b.columns:
                    one = Batches(
                        [None],
                        list(names),
                        np.asarray(codes, np.int32),
                        step,
                        wall,
                        value,
                        np.array([len(codes)], np.int64),
                    )
                    self._add_shared([run], one, 0, 1)

    def _add_shared(self, runs: list[str], batches: Batches, first: int, stop: int) -> None:
        """Files ``first`` to ``stop`` of ``batches``: their rows of the shared columns."""
        import numpy as np

        counts = np.asarray(batches.counts[first:stop], np.int64)
        if first == 0 and stop == len(batches):
            a, b = 0, len(batches.codes)
        else:
            before = int(np.asarray(batches.counts[:first]).sum())
            a, b = before, before + int(counts.sum())
        run_ids = np.array(
            [self.run_ids.setdefault(run, len(self.run_ids)) for run in runs[first:stop]],
            np.int64,
        )
        self._runs_with_scalars.update(run_ids[counts > 0].tolist())
        remap = np.array(
            [self.tag_ids.setdefault(n, len(self.tag_ids)) for n in batches.names], np.int64
        )
        codes = batches.codes[a:b]
        step, wall, value = batches.step[a:b], batches.wall_time[a:b], batches.value[a:b]
        if self.wanted_tag is not None and len(codes):
            keep_tag = np.array([self.wanted_tag(str(n)) for n in batches.names], bool)
            if not keep_tag.all():
                keep = keep_tag[codes]
                kept = np.concatenate([[0], np.cumsum(keep)])
                ends = np.cumsum(counts)
                counts = kept[ends] - kept[ends - counts]
                codes, step, wall, value = codes[keep], step[keep], wall[keep], value[keep]
        tag_t = np.min_scalar_type(max(len(self.tag_ids) - 1, 0))
        self.parts.append(_Part(run_ids, counts, remap.astype(tag_t)[codes], step, wall, value))
        self.rows += len(codes)

    def table(self, table: str = "pandas") -> Any:
        """The table (``run, tag, step, wall_time, value``; a DataFrame or a pyarrow Table):
        the parts are emptied into it."""
        import numpy as np

        run_names = list(self.run_ids)
        all_runs = sorted(run_names[i] for i in self._runs_with_scalars)
        all_tags = sorted(self.tag_ids)
        run_code = np.full(len(run_names), -1, np.int64)
        for code, run in enumerate(all_runs):
            run_code[self.run_ids[run]] = code
        tag_code = np.empty(len(self.tag_ids), np.int64)
        for code, tag in enumerate(all_tags):
            tag_code[self.tag_ids[tag]] = code
        # the smallest code type, as pandas would pick it: no second copy of the code columns
        run_t = np.min_scalar_type(-max(len(all_runs), 1))
        tag_t = np.min_scalar_type(-max(len(all_tags), 1))
        parts = self.parts
        self.parts = []
        sizes = [len(p.tags) for p in parts]
        bounds = np.cumsum([0, *sizes])
        total = int(bounds[-1])

        def column(dtype: Any, fill: Callable[[_Part, Any], None]) -> Any:
            """One output column filled part by part (each part's array dropped once copied,
            so the peak is the parts plus one column, not the parts plus the table)."""
            out = np.empty(total, dtype)
            for i, part in enumerate(parts):
                fill(part, out[bounds[i] : bounds[i + 1]])
            return out

        def runs(p: _Part, out: Any) -> None:
            out[:] = np.repeat(run_code[p.runs].astype(run_t), p.counts)

        def tags(p: _Part, out: Any) -> None:
            out[:] = tag_code.astype(tag_t)[p.tags] if len(p.tags) else p.tags
            p.tags = None

        def steps(p: _Part, out: Any) -> None:
            out[:] = p.step
            p.step = None

        def walls(p: _Part, out: Any) -> None:
            out[:] = p.wall
            p.wall = None

        def values(p: _Part, out: Any) -> None:
            out[:] = p.value
            p.value = None

        run_col = column(run_t, runs)
        tag_col = column(tag_t, tags)
        step = column(np.int64, steps)
        wall = column(np.float64, walls)
        value = column(np.float64, values)
        if table == "arrow":
            import pyarrow as pa

            out = pa.table(
                {
                    "run": pa.DictionaryArray.from_arrays(run_col, pa.array(all_runs, pa.string())),
                    "tag": pa.DictionaryArray.from_arrays(tag_col, pa.array(all_tags, pa.string())),
                    "step": step,
                    "wall_time": wall,
                    "value": value,
                }
            )
            return with_metadata(out, self.metadata, all_tags)
        import pandas as pd

        frame = pd.DataFrame(
            {
                "run": pd.Categorical.from_codes(run_col, categories=all_runs),
                "tag": pd.Categorical.from_codes(tag_col, categories=all_tags),
                "step": step,
                "wall_time": wall,
                "value": value,
            },
            copy=False,  # the columns are fresh: no second copy of the table
        )
        return with_metadata(frame, self.metadata, all_tags)


def gather_metadata(
    into: dict[tuple[str, str], tuple[str, str]],
    run: str,
    batch: Batch,
    wanted_tag: Callable[[str], bool] | None = None,
) -> None:
    """Add the display names and descriptions ``batch`` holds (``Batch.metadata``) for ``run``:
    the first a tag got is kept."""
    for tag, names in batch.metadata.items():
        if wanted_tag is None or wanted_tag(tag):
            into.setdefault((run, tag), names)


def with_metadata(
    table: Any, metadata: dict[tuple[str, str], tuple[str, str]], tags: Any = None
) -> Any:
    """``table`` carrying the display names and descriptions of its runs' tags (only those the
    files gave; of ``tags`` when given): a DataFrame in ``attrs["metadata"]``, a pyarrow Table
    in its schema's metadata under ``b"tallyboard.metadata"`` (JSON); as a list of
    ``{"run", "tag", "display_name", "description"}``, sorted by run and tag."""
    wanted = None if tags is None else set(tags)
    items = [
        {"run": run, "tag": tag, "display_name": names[0], "description": names[1]}
        for (run, tag), names in sorted(metadata.items())
        if wanted is None or tag in wanted
    ]
    if not items:
        return table
    if hasattr(table, "attrs"):
        table.attrs["metadata"] = items
        return table
    import json

    schema_meta = dict(table.schema.metadata or {})
    schema_meta[b"tallyboard.metadata"] = json.dumps(items).encode()
    return table.replace_schema_metadata(schema_meta)


def _has_scalars(batch: Batch) -> bool:
    return bool(batch.tags) or bool(batch.columns)
