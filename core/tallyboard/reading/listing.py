"""What a log dir holds, per run, kind and tag: count, step range and last wall time (what
``tallyboard ls`` shows), summed up where the files are read so only the sums travel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tallyboard.plugin.readers import SCALAR_KIND as SCALAR
from tallyboard.plugin.readers import Batches
from tallyboard.reading import undecoded
from tallyboard.reading.fetch import is_local
from tallyboard.reading.pool import cores, in_shares
from tallyboard.reading.runs import RunReader
from tallyboard.reading.tree import Share, deal

#: A row of the listing: ``(run, kind, tag, count, min_step, max_step, last_wall_time,
#: plugin)``; steps and wall time None for undecoded values, plugin None but for those.
Row = tuple[Any, ...]


def list_tree(logdir: str, formats: Sequence[str] | None = None) -> tuple[list[Row], RunReader]:
    """One :data:`Row` per (run, kind, tag), sorted by the first three; and the reader that read
    them (what it skipped is in ``reader.skipped``).

    The files are read as :func:`tallyboard.read` reads them (by the pool when there is much
    to read; every tag and step listed comes from a record whose CRC was checked), in a
    listing's light read: in a run laid out like the run before it (a sweep's runs), whose
    scalar records hold the tags and steps of records already checked, the records' own data
    CRCs are not checked (``read`` checks every one, and warns). Each group of files is summed
    up per file and tag (:func:`summarize_group`) by the process that read it, and the sums of
    all groups merged at once at the end: never one Python step per value. A wide local tree
    (a sweep: a level of at least :data:`SHARE_FOLDERS` folders) is dealt into one share per
    core, each listed and read by a process of its own (:func:`~tallyboard.reading.pool.in_shares`),
    so that listing thousands of folders is not one process's work. Raises
    ``TypeError``/``ValueError`` for a ``logdir`` or ``formats`` that cannot be read.
    """
    import numpy as np

    reader = RunReader(logdir, formats, keep=False)
    shares = _dealt(reader)
    if shares is None:
        parts_of = [_summed(reader, None)]
    else:
        parts_of = in_shares(
            lambda k: _summed(RunReader(logdir, formats, keep=False), shares[k]), len(shares)
        )
        reader.skipped = {p: s for _, skipped in parts_of for p, s in skipped.items()}
    run_ids: dict[str, int] = {}
    tag_ids: dict[str, int] = {}
    parts: list[tuple[Any, ...]] = []  # per group: run id, tag id, count, lo, hi, last
    other: dict[tuple[str, str, str], list[Any]] = {}  # rows of other kinds, undecoded values
    for groups, _ in parts_of:
        for runs, (scalars, rest) in groups:
            file_runs = np.array([run_ids.setdefault(r, len(run_ids)) for r in runs], np.int64)
            for files, names, codes, n, lo, hi, last in scalars:
                name_ids = np.array([tag_ids.setdefault(t, len(tag_ids)) for t in names], np.int64)
                parts.append((file_runs[files], name_ids[codes], n, lo, hi, last))
            for (k, kind, tag), sums in rest.items():
                _merge(other, (runs[k], kind, tag), sums)
    out: list[Row] = [(*key, *value) for key, value in other.items()]
    if parts:
        cols: list[Any] = [np.concatenate(c) for c in zip(*parts)]
        del parts
        run_rank, tag_rank = _ranks(run_ids), _ranks(tag_ids)  # ids in name order
        key = run_rank[cols[0]] * max(len(tag_ids), 1) + tag_rank[cols[1]]
        order = np.argsort(key, kind="stable")
        key = key[order]
        first = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
        sums = [
            np.add.reduceat(cols[2][order], first),
            np.minimum.reduceat(cols[3][order], first),
            np.maximum.reduceat(cols[4][order], first),
            np.fmax.reduceat(cols[5][order], first),
        ]
        run_names, tag_names = list(run_ids), list(tag_ids)
        out.extend(
            zip(
                [run_names[i] for i in cols[0][order][first].tolist()],
                [SCALAR] * len(first),
                [tag_names[i] for i in cols[1][order][first].tolist()],
                *(col.tolist() for col in sums),
                [None] * len(first),
            )
        )
    if other:  # the scalars are in order already: rows of other kinds go in between
        out.sort(key=lambda row: row[:3])
    return out, reader


def _ranks(ids: dict[str, int]) -> Any:
    """Each id's place among the names of ``ids`` in sorted order (an int64 array by id)."""
    import numpy as np

    names = list(ids)
    ranks = np.empty(len(names), np.int64)
    ranks[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    return ranks


#: the fewest run folders (at one level of the tree) worth listing and reading in shares, one per
#: core: below, one process lists the tree (and a pool reads its files if they are big).
SHARE_FOLDERS = 1024


def _dealt(reader: RunReader) -> list[Share] | None:
    """The shares a tree is listed and read in, one per core (see
    :func:`tallyboard.reading.tree.deal`); None: read in one (a small tree, a store, one core)."""
    n = cores()
    if not is_local(reader.fs) or n < 2:
        return None
    return deal(reader.root, n, SHARE_FOLDERS)


def _summed(
    reader: RunReader, share: Share | None
) -> tuple[list[tuple[list[str], Any]], dict[str, set[str]]]:
    """``(runs, sums)`` per group of files of ``share`` of the tree (None: all of it), read by
    ``reader`` (with a pool when it is all), and the formats it skipped per run folder."""
    if share is not None:
        reader.only(share)
    workers = None if share is None else 1
    groups = [
        (runs, sums)
        for _, runs, sums in reader.iter_groups(workers, None, light=True, reduce=summarize_group)
    ]
    return groups, reader.skipped


def summarize_group(
    group: Batches,
) -> tuple[list[tuple[Any, ...]], dict[tuple[Any, ...], list[Any]]]:
    """The sums of one group of files read together: scalars as ``(file, names, code, count,
    first step, last step, last wall time)`` arrays over the (file, tag) pairs present (file:
    its index in the group; code: into ``names``), and the other kinds' rows and the
    undecoded values as ``(file, kind, tag) -> [count, first step, last step, last wall time,
    plugin]``."""
    import numpy as np

    scalars: list[tuple[Any, ...]] = []
    other: dict[tuple[Any, ...], list[Any]] = {}
    if group.shared():
        got = _sum_columns(group.counts, len(group.names), group.codes, group.step, group.wall_time)
        if got is not None:
            scalars.append((got[0], group.names, *got[1:]))
    for k, b in enumerate(group.batches):
        if b is None:
            continue
        b.flush_lists()
        for names, codes, step, wall, _ in b.columns:
            got = _sum_columns([len(codes)], len(names), codes, step, wall)
            if got is not None:
                scalars.append((np.full(len(got[0]), k), names, *got[1:]))
        for kind, rows in b.rows.items():
            for row in rows:
                step_, wall_ = int(row["step"]), float(row["wall_time"])
                _merge(other, (k, kind, str(row["tag"])), [1, step_, step_, wall_, None])
        for (plugin, tag), n in b.undecoded.items():
            _merge(other, (k, undecoded.KIND, tag), [n, None, None, None, plugin])
    return scalars, other


def _merge(into: dict[Any, list[Any]], key: Any, sums: list[Any]) -> None:
    """Add ``sums`` (``[count, first step, last step, last wall time, plugin]``, steps and wall
    time None for undecoded values) to those of ``key``."""
    s = into.get(key)
    if s is None:
        into[key] = list(sums)
        return
    s[0] += sums[0]
    if sums[1] is not None:
        s[1], s[2], s[3] = min(s[1], sums[1]), max(s[2], sums[2]), max(s[3], sums[3])


def _sum_columns(
    counts: Any, n_tags: int, codes: Any, step: Any, wall: Any
) -> tuple[Any, ...] | None:
    """Per file and tag of scalar columns (the rows of file ``k`` are the next ``counts[k]``):
    ``(file, tag code, count, first step, last step, last wall time)`` arrays over the pairs
    present, or None when there are no rows."""
    import numpy as np

    counts = np.asarray(counts, np.int64)
    files = len(counts)
    if not len(codes):
        return None
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    size = files * n_tags
    key = np.repeat(np.arange(files), counts) * n_tags + np.asarray(codes, np.int64)
    n = np.bincount(key, minlength=size)
    lo = np.zeros(size, np.int64)
    hi = np.zeros(size, np.int64)
    last = np.full(size, -np.inf)
    if n_tags <= 8:  # per tag: the file's rows of that tag, reduced per file
        for code in range(n_tags):
            has = n[code::n_tags] > 0
            if not has.any():
                continue
            sel = np.flatnonzero(codes == code)
            at = np.searchsorted(sel, starts[has])  # each file's first row of this tag
            keys = np.flatnonzero(has) * n_tags + code
            s, w = step[sel], wall[sel]
            lo[keys] = np.minimum.reduceat(s, at)
            hi[keys] = np.maximum.reduceat(s, at)
            last[keys] = np.fmax.reduceat(w, at)
    else:
        lo[:] = np.iinfo(np.int64).max
        hi[:] = np.iinfo(np.int64).min
        np.minimum.at(lo, key, step)
        np.maximum.at(hi, key, step)
        np.fmax.at(last, key, wall)
    present = np.flatnonzero(n)
    file_of, code_of = np.divmod(present, n_tags)
    return file_of, code_of, n[present], lo[present], hi[present], last[present]
