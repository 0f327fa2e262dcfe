"""``tallyboard.convert``: every run of a log dir rewritten in another format, value by value.

Each file is read with the reader plugins (one file at a time) and each value is written again
through the target sink with the encoder the (kind, sink) pair registered, so what lands is what
that sink writes for the same value logged live. Scalars are the Batch's scalar columns (the
essential scalar kind); other kinds are rebuilt from their decoded rows by their
:attr:`Kind.from_row`. Values that cannot be written (no encoder for the target, no
``from_row``, an encoder that refuses the value) are counted per kind, never dropped silently;
so are the values the reader decoded to no kind (counted as ``undecoded <plugin name>``).

To a sink that writes TensorBoard's own summaries (``SinkSpec.tensorboard_summaries``: event
files), values a reader keeps as TensorBoard summaries (``Batch.summaries``: event files read
back) are written as the file holds them, never re-encoded: every value of a plugin, an
installed kind's or not; a scalar tag's first value carrying metadata is written as it was
(``Batch.scalar_heads``), so its description and display name stay.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tallyboard import paths
from tallyboard.plugin.readers import SCALAR_KIND as SCALAR
from tallyboard.plugin.readers import Batch, FileReader
from tallyboard.plugin.registry import Registry, get_registry
from tallyboard.plugin.sinks import Sink, SinkOptions, check_holds_values
from tallyboard.reading import undecoded
from tallyboard.reading.runs import RunReader

#: Queue options of the target sinks: batches of records, flushed when a run is done.
_MAX_QUEUE = 1000
_FLUSH_SECS = 120.0


@dataclass
class ConvertSummary:
    """What :func:`convert` did: values written and values not converted, per kind.

    ``not_converted[kind]`` counts the values of ``kind`` that were read but not written, and
    ``reasons[kind]`` says why (the first reason met for that kind).
    """

    src: str
    dst: str
    to: str
    runs: list[str] = field(default_factory=list)
    files: int = 0
    converted: dict[str, int] = field(default_factory=dict)
    not_converted: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Values written."""
        return sum(self.converted.values())

    def converted_line(self) -> str:
        """One line: how many values of which kinds went where."""
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.converted.items()))
        runs = len(self.runs)
        return (
            f"converted {self.total} values ({kinds or 'none'}) of {runs} "
            f"run{'s' if runs != 1 else ''} from {self.src} to {self.dst} as {self.to}"
        )

    def not_converted_line(self) -> str:
        """One line naming each kind with values not converted, its count and why; "" if none."""
        if not self.not_converted:
            return ""
        parts = [
            f"{kind} {n} ({self.reasons[kind]})" for kind, n in sorted(self.not_converted.items())
        ]
        return "not converted: " + "; ".join(parts)

    def _skip(self, kind: str, n: int, reason: str) -> None:
        if n:
            self.not_converted[kind] = self.not_converted.get(kind, 0) + n
            self.reasons.setdefault(kind, reason)


def _path(path: Any, arg: str) -> str:
    text = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(text, str) or not text:
        raise TypeError(f"{arg} must be a non-empty str or os.PathLike path, got {path!r}")
    return text


def _holds_files(root: str) -> bool:
    return any(files for _, _, files in os.walk(root))


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def _check_dst(src: str, dst: str, force: bool) -> str:
    """The real path of ``dst``, refused when it is a file, lies inside ``src``, or already
    holds files (unless ``force``)."""
    if paths.is_url(dst):
        raise ValueError(f"dst must be a local directory, got the URL {dst!r}")
    real = os.path.realpath(dst)
    if os.path.exists(real) and not os.path.isdir(real):
        raise ValueError(f"dst {dst!r} is not a directory")
    if not paths.is_url(src):
        real_src = os.path.realpath(src)
        if _inside(real, real_src):
            raise ValueError(
                f"dst {dst!r} lies inside src {src!r}: a later read of src would read it too"
            )
    if not force and os.path.isdir(real) and _holds_files(real):
        raise FileExistsError(
            f"dst {dst!r} already holds files; use force=True to add the converted "
            "runs beside them (no existing file is overwritten)"
        )
    return real


class _Target:
    """The open sinks of the converted runs, one per run, each opened on its first value."""

    def __init__(self, reg: Registry, to: str, dst: str, src: str | None) -> None:
        self.spec = reg.sink(to)
        self.to, self.dst, self.src = to, dst, src
        self.sinks: dict[str, Sink] = {}

    def sink(self, run: str) -> Sink:
        sink = self.sinks.get(run)
        if sink is None:
            out = self.dst if run == "." else paths.join(self.dst, paths.safe_relpath(run, "run"))
            real = os.path.realpath(out)  # through any symlink already in dst (force=True)
            if not _inside(real, self.dst) or (self.src is not None and _inside(real, self.src)):
                raise ValueError(f"run {run!r} would be written outside dst or into src: {real}")
            os.makedirs(real, exist_ok=True)
            options = SinkOptions(
                log_dir=real,
                max_queue=_MAX_QUEUE,
                flush_secs=_FLUSH_SECS,
                extra={"sink": self.to, "writer_log_dir": real},
                settings=self.spec.make_settings(),  # the sink's defaults
                run=run,
            )
            sink = self.sinks[run] = self.spec.open(options)
        return sink

    def close(self, run: str) -> None:
        sink = self.sinks.pop(run, None)
        if sink is not None:
            sink.close()

    def close_all(self) -> None:
        errors = []
        for run in list(self.sinks):
            try:
                self.close(run)
            except Exception as exc:  # close the others, then report the first failure
                errors.append(exc)
        if errors:
            raise errors[0]


Encoder = Callable[[str, Any, float, Any], Any]


def _encoder(reg: Registry, kind: str, to: str) -> tuple[Encoder | None, str]:
    """The (kind, sink) encoder, or None and why the values of ``kind`` cannot be written."""
    k = reg.kinds.get(kind)
    if k is None:
        return None, f"no installed kind {kind!r}"
    encode = reg.encoders.get((kind, to))
    if encode is None:
        encode_any = reg.encoders.get(("*", to))
        if encode_any is None:
            return None, f"the {to} format cannot hold {kind}"
        encode = functools.partial(encode_any, kind)
    if k.log is not None:
        return None, f"kind {kind!r} is logged as files beside the run"
    return encode, ""


def _write_batch(
    reg: Registry,
    target: _Target,
    run: str,
    batch: Batch,
    encoders: dict[str, tuple[Encoder | None, str]],
    summary: ConvertSummary,
) -> None:
    def encoder(kind: str) -> tuple[Encoder | None, str]:
        if kind not in encoders:
            encoders[kind] = _encoder(reg, kind, target.to)
        return encoders[kind]

    for (plugin, tag), n in sorted(batch.undecoded.items()):
        summary._skip(
            f"{undecoded.KIND} {plugin}",
            n,
            f"no installed kind decodes plugin {plugin!r} (first tag {tag!r} in run {run!r})",
        )
    for kind, plugin, event in batch.summaries:  # only when the target writes summaries
        target.sink(run).write(event)
        name = kind or plugin
        summary.converted[name] = summary.converted.get(name, 0) + 1
    tags, steps, walls, values = batch.scalars()
    if len(tags):
        encode, reason = encoder(SCALAR)
        if encode is None:
            summary._skip(SCALAR, len(tags), reason)
        else:
            write, convert = target.sink(run).write, reg.kinds[SCALAR].convert
            heads = dict(batch.scalar_heads)
            done = 0
            for tag, step, wall, value in zip(
                tags.tolist(), steps.tolist(), walls.tolist(), values.tolist()
            ):
                head = heads.pop(tag, None) if heads else None
                if head is not None:  # the tag's first value, with its metadata, as it was
                    write(head)
                    done += 1
                    continue
                try:
                    data = encode(tag, step, wall, convert(value))
                except Exception as exc:  # this value cannot be written: count it, go on
                    summary._skip(SCALAR, 1, f"{tag!r} at step {step} refused: {exc!r}")
                    continue
                write(data)
                done += 1
            if done:
                summary.converted[SCALAR] = summary.converted.get(SCALAR, 0) + done
    for kind, rows in batch.rows.items():
        encode, reason = encoder(kind)
        k = reg.kinds.get(kind)
        if encode is None or k is None or not k.rebuildable:
            reason = reason or f"kind {kind!r} cannot be rebuilt from what was read (no from_row)"
            summary._skip(kind, len(rows), reason)
            continue
        done = 0
        joined = target.spec.tensorboard_summaries  # one summary: a tag's values of a step
        for group, built in k.rebuild_rows(rows, join=joined):
            row = group[0]
            where = f"{row.get('tag')!r} at step {row.get('step')}"
            try:
                if isinstance(built, Exception):
                    raise built
                step, wall = int(row["step"]), float(row["wall_time"])
                data = [encode(tag, step, wall, value) for tag, value in built]
            except Exception as exc:  # this value cannot be written: count it, go on
                summary._skip(
                    kind, len(group), f"{where} not rebuilt or refused by {target.to}: {exc!r}"
                )
                continue
            for item in data:
                target.sink(run).write(item)
            done += len(group)
        if done:
            summary.converted[kind] = summary.converted.get(kind, 0) + done


def convert(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    to: str,
    *,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
    formats: str | Iterable[str] | None = None,
) -> ConvertSummary:
    """Rewrite every run under ``src`` as ``to`` files under ``dst``, value by value.

    A run (a directory of ``src`` holding readable files, ``"."`` for ``src`` itself) becomes
    ``dst/<run>`` with the same tags, steps and wall times, for every kind the ``to`` sink can
    write: MindSpore summaries to TensorBoard event files (``to="tfevents"``, so TensorBoard
    shows a MindSpore run) or back (``to="mindspore"``: scalars, images, tensors, histograms),
    or into any installed sink. What the target cannot hold is counted per kind with the reason,
    never dropped silently. One source file is in memory at a time.

    Args:
        src: The log dir to read, a local path or fsspec URL (str or ``os.PathLike``).
        dst: A local directory outside ``src``, created if missing; it must hold no file unless
            ``force``.
        to: The target: an installed sink's name, such as ``"tfevents"`` or ``"mindspore"``.
        force: Write into a ``dst`` that holds files (keyword only): new files go beside the old
            ones, and no file is ever overwritten. Default ``False``.
        progress: Called as ``progress(files_done, files_in_all)`` after each source file
            (keyword only). Default ``None``.
        formats: The source formats to read, a name or a list (keyword only). Default ``None``:
            each run in one format it holds, event files first, as :func:`read` does.

    Returns:
        A :class:`ConvertSummary`: the runs, files and values written per kind, and per kind the
        values not converted and why (``converted_line()`` and ``not_converted_line()`` put them
        in one line each).

    Raises:
        TypeError: ``src`` or ``dst`` is not a non-empty path; ``to`` is not a str; ``force``
            not a bool; ``progress`` not callable.
        ValueError: ``to`` names no installed sink (the message lists them); ``dst`` is a URL, a
            file, or inside ``src``; ``src`` is not a directory; an unknown format.
        FileExistsError: ``dst`` holds files and ``force`` is False.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryRecord, convert
        >>> with SummaryRecord("runs/ms/seed0") as record:  # MindSpore summary files
        ...     for step in range(1, 4):
        ...         record.add_value("scalar", "loss", np.float32(1.0 / step))
        ...         _ = record.record(step)  # True: recorded
        >>> summary = convert("runs/ms", "runs/ms-tb", to="tfevents")
        >>> summary.converted["scalar"]
        3
    """
    src_text, dst_text = _path(src, "src"), _path(dst, "dst")
    if not isinstance(to, str):
        raise TypeError(f"to must be a str naming a sink (such as 'tfevents'), got {to!r}")
    if not isinstance(force, bool):
        raise TypeError(f"force must be a bool, got {type(force).__name__}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be None or callable, got {type(progress).__name__}")
    reg = get_registry()
    if to not in reg.sinks:
        known = ", ".join(sorted(reg.sinks)) or "none"
        raise ValueError(f"to={to!r} names no installed sink; choose one of: {known}")
    check_holds_values(reg, to)
    try:  # a sink writing TensorBoard's summaries takes those read back as they are
        copy = "exact" if reg.sinks[to].tensorboard_summaries else False
        reader = RunReader(src_text, formats, summaries=copy)
    except ValueError as exc:
        raise ValueError(f"src: {exc}" if "formats" not in str(exc) else str(exc)) from None
    real_dst = _check_dst(src_text, dst_text, force)
    files: list[tuple[str, FileReader]] = reader.discover()
    left: dict[str, int] = {}
    for run, _ in files:
        left[run] = left.get(run, 0) + 1
    summary = ConvertSummary(src_text, dst_text, to, runs=sorted(left))
    real_src = None if paths.is_url(src_text) else os.path.realpath(src_text)
    target = _Target(reg, to, real_dst, real_src)
    encoders: dict[str, tuple[Encoder | None, str]] = {}
    try:
        for run, file_reader in files:
            _write_batch(reg, target, run, file_reader.read_new(), encoders, summary)
            summary.files += 1
            left[run] -= 1
            if not left[run]:
                target.close(run)
            if progress is not None:
                progress(summary.files, len(files))
    finally:
        target.close_all()
    return summary
