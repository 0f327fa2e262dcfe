"""``tallyboard.read``: a log dir (local path or fsspec URL) as a tidy table.

pandas and pyarrow are optional (``pip install tallyboard[read]``) and imported only here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from tallyboard.extras import require
from tallyboard.plugin.kinds import PAYLOAD_KEY
from tallyboard.plugin.readers import SCALAR_KIND, Batch, Batches
from tallyboard.plugin.registry import get_registry
from tallyboard.reading import undecoded
from tallyboard.reading.columns import ScalarParts, gather_metadata, with_metadata
from tallyboard.reading.progress import Progress
from tallyboard.reading.runs import RunReader
from tallyboard.reading.select import matcher, names_or_globs
from tallyboard.warn import ReadWarning, warn, warn_once

FORMATS = ("pandas", "arrow")


def read(
    logdir: str | os.PathLike[str],
    runs: str | Iterable[str] | None = None,
    tags: str | Iterable[str] | None = None,
    kind: str = "scalar",
    table: str = "pandas",
    formats: str | Iterable[str] | None = None,
    workers: int | None = None,
    progress: bool | None = None,
) -> Any:
    """Every value of ``kind`` under ``logdir`` as one table, nothing downsampled.

    Reads what any writer left there: TensorBoard event files (from tallyboard, torch,
    tensorboardX, TensorFlow, Keras), MindSpore summary and lineage files, and what the csv and
    jsonl sinks write, from a local path or any fsspec URL (``s3://``, ``gs://``, ...). Each
    directory holding such files is a run, named by its path relative to ``logdir`` (``"."`` for
    ``logdir`` itself). Scalars come as columns ``run, tag, step, wall_time, value`` (``run``
    and ``tag`` categorical), other kinds as ``run, tag, step, wall_time`` plus their fields:
    ``histogram`` (min, max, num, sum, sum_squares, bucket_limit, bucket), ``text`` (value),
    ``image`` (width, height, colorspace, data: the encoded bytes, for
    ``PIL.Image.open(io.BytesIO(row.data))``), ``audio`` (sample_rate, num_channels, length,
    content_type, data), ``tensor`` (dtype, shape, value: a NumPy array), ``hparams`` (one row
    per run: ``run``, its hyper-parameters, then the last value of each of its scalar tags), and
    those of any installed plugin's kind. A run directory holding the same values in several
    formats (``sinks=["tfevents", "csv"]``) is read in one of them, event files first, so
    nothing is counted twice.

    Every record's checksum is verified; a half-written last record is left for the next read,
    and a corrupt record is reported (a warning with the file and offset) and skipped. Values no
    installed kind decodes (a third-party plugin's) are never dropped silently: one
    ``ReadWarning`` names each run, plugin and tag with its count. Local files are decoded by a
    process per core when there is enough to read; remote files are fetched many at once.

    Args:
        logdir: A local directory or an fsspec URL, a non-empty str or an ``os.PathLike``.
        runs: Keep only these runs: a name or a list of names (paths relative to ``logdir``,
            ``"."`` for itself); a name with ``*``, ``?`` or ``[...]`` is a glob
            (``"lr=0.1/*"``). Runs left out are never opened nor fetched. Default ``None``: all.
        tags: Keep only these tags, names or globs as for ``runs``. Default ``None``: all.
        kind: The kind to read: ``"scalar"``, ``"histogram"``, ``"image"``, ``"audio"``,
            ``"text"``, ``"tensor"``, ``"hparams"``, ``"pr_curve"``, ``"mesh"``, ...
            (``tallyboard plugins`` lists them). Default ``"scalar"``.
        table: ``"pandas"`` (a DataFrame) or ``"arrow"`` (a pyarrow Table). Default
            ``"pandas"``.
        formats: Read only these formats (``"tfevents"``, ``"mindspore"``, ``"csv"``,
            ``"jsonl"``, ...), a name or a list. Default ``None``: each run in one format it
            holds, event files first.
        workers: Processes decoding local files, an int >= 1 (1 reads in this process). Default
            ``None``: this machine's cores when the files are big enough to pay for it.
        progress: Draw a progress bar on stderr. Default ``None``: when stderr is a terminal and
            the read takes over a second.

    Returns:
        A ``pandas.DataFrame``, or a ``pyarrow.Table`` with ``table="arrow"``; empty (with the
        columns ``run, tag, step, wall_time``) when nothing matches.

    Raises:
        tallyboard.extras.MissingExtra: pandas (or pyarrow) is not installed; the message gives
        ``pip install "tallyboard[read]"``.
        TypeError: ``logdir`` is not a non-empty str or os.PathLike; ``kind`` is not a str; ``runs``, ``tags``
            or ``formats`` is not a str or an iterable of str; ``progress`` not a bool.
        ValueError: ``logdir`` is not a directory; an unknown ``table`` or format; ``workers`` <
            1; ``kind`` is one no installed plugin knows and no file holds (a JSONL line may
            hold any kind: it is read back as its JSON value).
        OSError: A remote store refused or timed out (the message names the URL).

    Example:
        >>> from tallyboard import SummaryWriter, read
        >>> for seed in range(2):
        ...     with SummaryWriter(f"runs/read/seed{seed}") as writer:
        ...         for step in range(3):
        ...             writer.add_scalar("loss", 1.0 / (step + 1) + seed, step)
        >>> df = read("runs/read", tags="loss")
        >>> df.groupby("run", observed=True)["value"].min().to_dict()
        {'seed0': 0.3333333432674408, 'seed1': 1.3333333730697632}
    """
    if table not in FORMATS:
        raise ValueError(f"table must be one of {FORMATS}, got {table!r}")
    require("pyarrow" if table == "arrow" else "pandas", "read", "tallyboard.read")
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, got {type(kind).__name__}")
    known = known_kind(kind)
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be None or a bool, got {progress!r}")
    tag_globs = names_or_globs(tags, "tags")
    wanted_tag = None if tag_globs is None else matcher(tag_globs)
    run_reader = RunReader(logdir, formats, kind, runs=names_or_globs(runs, "runs"), keep=False)
    run_reader.refresh()
    if not run_reader.paths():
        _warn_no_runs(logdir, runs, formats)
    files = len(run_reader.paths())
    bar = Progress(files, "read", show=progress)
    out = read_listed(run_reader, kind, table, wanted_tag, workers, bar, logdir)
    if not len(out):
        if not known:  # a JSONL line may hold a kind no plugin registers: refused only if none
            check_kind(kind)
        if files:
            _warn_none_of_kind(logdir, kind, tags, formats)
    return out


def read_listed(
    run_reader: RunReader,
    kind: str = "scalar",
    table: str = "pandas",
    wanted_tag: Callable[[str], bool] | None = None,
    workers: int | None = None,
    bar: Progress | None = None,
    logdir: str | os.PathLike[str] | None = None,
) -> Any:
    """The table :func:`read` returns, of the files ``run_reader`` has listed (or taken: an
    engine's share of a tree, see :meth:`RunReader.take`); ``bar`` is closed at the end;
    ``logdir`` is the log dir as warnings name it (default: the reader's URL)."""
    if logdir is None:
        logdir = run_reader.fs.unstrip_protocol(run_reader.root)
    scalars = ScalarParts(wanted_tag) if kind == SCALAR_KIND else None
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
        if bar is not None:
            bar.close()
    run_reader.reset()  # the listing, dropped before the table is built
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


def _kinds() -> list[str]:
    reg = get_registry()  # a kind a decoder alone teaches the readers counts too
    return sorted(set(reg.kinds) | {k for _, k in reg.decoders})


def known_kind(kind: str) -> bool:
    """Whether an installed plugin registers or decodes ``kind``."""
    return kind in _kinds()


def check_kind(kind: str) -> None:
    """Refuse a kind no installed plugin registers, naming those that are (the closest first)."""
    import difflib

    known = _kinds()
    if kind in known:
        return
    near = difflib.get_close_matches(kind.lower(), known, 3, 0.6)
    raise ValueError(
        f"unknown kind {kind!r}"
        + (f" (did you mean {' or '.join(repr(k) for k in near)}?)" if near else "")
        + f"; the kinds installed plugins give: {', '.join(known)}"
    )


def _warn_none_of_kind(logdir: Any, kind: str, tags: Any, formats: Any) -> None:
    """Say which kinds the runs do hold when they hold no value of ``kind`` (a MindSpore
    network's graph is ``anf_graph``, not TensorBoard's ``graph``; ``tallyboard ls`` lists them):
    once per log dir, kind and what they hold, so a loop reading a live run is not flooded."""
    from tallyboard.reading.listing import list_tree

    rows, _ = list_tree(os.fspath(logdir), names_or_globs(formats, "formats"))
    tag_counts: dict[str, int] = {}
    for row in rows:
        tag_counts[row[1]] = tag_counts.get(row[1], 0) + 1
    if not tag_counts:  # nothing whole yet (a file still being written): nothing mistaken
        return
    held = ", ".join(f"{k} ({n} tag{'s' if n > 1 else ''})" for k, n in sorted(tag_counts.items()))
    warn_once(
        ("no values of kind", os.fspath(logdir), kind, repr(tags), held),
        f"tallyboard.read: no {kind!r} values under {os.fspath(logdir)!r}"
        + (f" with tags={tags!r}" if tags is not None else "")
        + f"; the runs there hold: {held}",
        ReadWarning,
    )


def _warn_no_runs(logdir: Any, runs: Any, formats: Any) -> None:
    """Say that ``logdir`` holds no run to read (a mistyped path reads as an empty table)."""
    which = "".join(
        f" {name}={value!r}" for name, value in (("runs", runs), ("formats", formats)) if value
    )
    warn(
        f"tallyboard.read: no runs under {os.fspath(logdir)!r}"
        + (f" match{which}" if which else "")
        + ": no folder there holds files of a format tallyboard reads"
        f" ({', '.join(sorted(get_registry().readers))}); `tallyboard ls` lists what is there",
        ReadWarning,
    )


def _fields(run: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row of the table: ``run`` and the row's fields, without the payload it carries."""
    return {"run": run, **{k: v for k, v in row.items() if k != PAYLOAD_KEY}}


def build_table(
    batches: list[tuple[str, Batch]],
    kind: str = "scalar",
    table: str = "pandas",
    wanted_tag: Callable[[str], bool] | None = None,
) -> Any:
    """The table :func:`read` returns, of the values of ``kind`` in ``(run, batch)`` pairs
    (only the tags ``wanted_tag`` keeps, when given)."""
    if kind == SCALAR_KIND:
        scalars = ScalarParts(wanted_tag)
        for run, batch in batches:
            batch.flush_lists()
            scalars.add([run], Batches([batch]))
        return scalars.table(table)
    rows = [
        {"run": run, **row} if PAYLOAD_KEY not in row else _fields(run, row)
        for run, batch in batches
        for row in batch.rows.get(kind, ())
        if wanted_tag is None or wanted_tag(row["tag"])
    ]
    shape = getattr(get_registry().kinds.get(kind), "read_table", None)
    if shape is not None:
        rows = shape(rows, batches)
    names: dict[tuple[str, str], tuple[str, str]] = {}
    for run, batch in batches:
        gather_metadata(names, run, batch, wanted_tag)
    shown = {row.get("tag") for row in rows}
    if table == "arrow":
        import pyarrow as pa

        return with_metadata(pa.Table.from_pylist(rows), names, shown)
    import pandas as pd

    frame = pd.DataFrame(rows, columns=None if rows else ["run", "tag", "step", "wall_time"])
    return with_metadata(frame, names, shown)
