"""``tallyboard.sync``: replay a log dir's runs into another sink, sending only what is new.

Like ``wandb sync``: training writes local files (no network needed); ``sync`` sends them to a
sink elsewhere (``"mlflow+http://host:5000"``, ``"csv+s3://bucket/metrics"``, any ``sinks=``
entry) and can be run again at any time. ``<logdir>/.tallyboard-sync.json`` remembers, per
target and per file, how many values of each kind were sent and confirmed (the sink's
``flush()`` returned), written after every :data:`COMMIT_EVERY` values. So a second call sends
only what was appended since, and a call cut short (the server went away) goes on from its
last confirmed flush: at most the values since then are sent twice (MLflow keeps one copy of
a metric sent twice). Values are sent with the encoder the (kind, sink) pair registered, as
``tallyboard convert`` writes them; values that cannot be (no encoder, no ``from_row``) are
counted per kind with the reason, never dropped silently.

The sink is opened per run with ``extra["writer_log_dir"]`` the run's local directory (so it
names and finds the run as the live sink did), ``SinkOptions.run`` the run's name as
``tallyboard.read`` gives it (``"."`` for the log dir itself) and ``SinkOptions.confirm`` (also
``extra["confirm"]``) True: a sink that could keep values queued must raise from ``flush()``
instead when they are not delivered.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tallyboard import paths
from tallyboard.plugin.readers import Batch
from tallyboard.plugin.registry import Registry, get_registry
from tallyboard.plugin.sinks import Sink, SinkEntry, SinkTarget, check_holds_values, parse_sink
from tallyboard.reading.convert import SCALAR, Encoder, _encoder
from tallyboard.reading.runs import RunReader

#: The state file inside the log dir.
STATE_FILE = ".tallyboard-sync.json"
#: Values sent between two confirmed flushes (and state file writes).
COMMIT_EVERY = 1000
_MAX_QUEUE = 1000
_FLUSH_SECS = 120.0
_VERSION = 1


class SyncError(OSError):
    """The target failed mid-sync; what was confirmed before is remembered (run again to go on)."""


@dataclass
class SyncSummary:
    """What :func:`sync` did: values sent per kind, values already sent before, values not sent."""

    logdir: str
    to: str
    runs: list[str] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)
    already: int = 0
    not_sent: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Values sent by this call."""
        return sum(self.sent.values())

    def line(self) -> str:
        """One line: what was sent where, and what had been sent before."""
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.sent.items()))
        runs = len(self.runs)
        return (
            f"sent {self.total} new values ({kinds or 'none'}) of {runs} "
            f"run{'s' if runs != 1 else ''} from {self.logdir} to {self.to}; "
            f"{self.already} sent before"
        )

    def not_sent_line(self) -> str:
        """One line naming each kind with values that cannot be sent, and why; "" if none."""
        parts = [f"{k} {n} ({self.reasons[k]})" for k, n in sorted(self.not_sent.items())]
        return "not sent: " + "; ".join(parts) if parts else ""

    def _skip(self, kind: str, n: int, reason: str) -> None:
        if n:
            self.not_sent[kind] = self.not_sent.get(kind, 0) + n
            self.reasons.setdefault(kind, reason)


def parse_target(reg: Registry, to: Any) -> SinkTarget:
    """The target of ``to``, a ``sinks=`` entry: ``"csv+s3://bucket/x"``, ``"mlflow"``, or
    ``("mlflow+http://host:5000", {"deadline": 60})`` (see
    :func:`tallyboard.plugin.sinks.parse_sink`)."""
    if not (isinstance(to, str) and to) and not isinstance(to, (tuple, list)):
        raise TypeError(
            f"to must be a non-empty str naming a sink or sink URL, or (that str, "
            f"{{setting: value}}), got {to!r}"
        )
    target = parse_sink(reg, to, arg="to")
    check_holds_values(reg, target.spec.name)
    return target


class _State:
    """``{"version": 1, "targets": {to: {file: {kind: values sent}}}}`` in the log dir."""

    def __init__(self, root: str, to: str) -> None:
        self.path = os.path.join(root, STATE_FILE)
        self.data: dict[str, Any] = {"version": _VERSION, "targets": {}}
        if os.path.exists(self.path):
            try:
                with open(self.path, encoding="utf-8") as f:
                    loaded = json.load(f)
            except (OSError, ValueError) as exc:
                raise ValueError(
                    f"{self.path} is not a sync state file ({exc}); move it away to send "
                    "everything again"
                ) from None
            if not isinstance(loaded, dict) or loaded.get("version") != _VERSION:
                raise ValueError(f"{self.path} holds no sync state of version {_VERSION}")
            self.data = loaded
        self.files: dict[str, dict[str, int]] = self.data["targets"].setdefault(to, {})

    def save(self) -> None:
        tmp = f"{self.path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)


def _local_dir(logdir: Any) -> str:
    text = os.fspath(logdir) if isinstance(logdir, os.PathLike) else logdir
    if not isinstance(text, str) or not text:
        raise TypeError(f"logdir must be a non-empty str or os.PathLike path, got {logdir!r}")
    if paths.is_url(text):
        raise ValueError(
            f"logdir must be a local directory (its state file lives there), not {text!r}"
        )
    if not os.path.isdir(text):
        raise ValueError(f"logdir {text!r} is not a directory")
    return os.path.abspath(text)


def _depth(run: str) -> tuple[int, str]:
    return (-1 if run == "." else run.count("/"), run)


class _Sinks:
    """The target's sinks, one per run, opened on a run's first value and closed at the end
    (children first), so a sink of a sub-run finds its parent's open sink."""

    def __init__(self, target: SinkTarget, root: str) -> None:
        self.target, self.root = target, root
        self.spec = target.spec
        self.open: dict[str, Sink] = {}

    def get(self, run: str) -> Sink:
        sink = self.open.get(run)
        if sink is None:
            run_dir = self.root if run == "." else os.path.join(self.root, run)
            # the run as read() names it under this log dir: "." for the log dir itself
            target = (
                self.target if run == "." else self.target.for_child(paths.safe_relpath(run, "run"))
            )
            options = target.options(
                run_dir, max_queue=_MAX_QUEUE, flush_secs=_FLUSH_SECS, confirm=True
            )
            sink = self.open[run] = self.spec.open(options)
        return sink

    def close_all(self) -> None:
        errors: list[Exception] = []
        for run in sorted(self.open, key=_depth, reverse=True):
            try:
                self.open.pop(run).close()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def abandon_all(self) -> None:
        """After a failure: drop what is queued without waiting (it was not confirmed)."""
        for run in sorted(self.open, key=_depth, reverse=True):
            sink = self.open.pop(run)
            drop = getattr(sink, "abandon", None)
            try:
                drop() if drop is not None else sink.close()
            except Exception:
                pass


def sync(
    logdir: str | os.PathLike[str],
    to: SinkEntry,
    *,
    formats: str | Iterable[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SyncSummary:
    """Send every value of every run under ``logdir`` not sent to ``to`` before.

    Args:
        logdir: A local log directory (its state file lives there).
        to: A ``sinks=`` entry, as every face takes it: ``"mlflow+http://127.0.0.1:5000"``,
            ``"csv+s3://bucket/x"``, or with the sink's settings,
            ``("mlflow+http://127.0.0.1:5000", {"deadline": 60})``. What was sent is remembered
            per entry text: settings do not change it.
        formats: Read only these formats (reader names), all by default.
        progress: Called as ``progress(files_done, files_in_all)`` after each file.

    Returns:
        What was sent, per kind, and what could not be.

    Raises:
        SyncError: The target failed (an ``OSError``); what was confirmed before stays
            remembered, so calling again goes on from there.
        TypeError: An argument of the wrong type.
        ValueError: A log dir that is not a local directory, an unknown sink or a bad setting.

    Each run reaches the sink as ``SinkOptions.run``, named as ``tallyboard.read(logdir)``
    names it (``"."`` for ``logdir`` itself), with ``SinkOptions.confirm`` set.
    """
    root = _local_dir(logdir)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be None or callable, got {type(progress).__name__}")
    reg = get_registry()
    target = parse_target(reg, to)
    to = target.text  # the state and messages name the entry's text, never its settings
    state = _State(root, to)
    files = sorted(
        RunReader(root, formats).discover(),
        key=lambda rf: (_depth(rf[0]), str(getattr(rf[1], "path", ""))),
    )
    summary = SyncSummary(root, to, runs=sorted({run for run, _ in files}, key=_depth))
    sinks = _Sinks(target, root)
    encoders: dict[str, tuple[Encoder | None, str]] = {}
    try:
        for index, (run, reader) in enumerate(files):
            key = _file_key(root, run, reader, index)
            done = state.files.setdefault(key, {})
            _send_file(reg, sinks, run, reader.read_new(), done, encoders, summary, state)
            if progress is not None:
                progress(index + 1, len(files))
        sinks.close_all()
    except Exception as exc:
        sinks.abandon_all()
        state.save()
        raise SyncError(
            f"sync to {to} stopped: {type(exc).__name__}: {exc}; {summary.total} values were "
            f"sent and confirmed before (remembered in {state.path}): run it again to go on"
        ) from exc
    state.save()
    return summary


def _file_key(root: str, run: str, reader: Any, index: int) -> str:
    path = getattr(reader, "path", None)
    if isinstance(path, str):
        return os.path.relpath(path, root).replace(os.sep, "/")
    return f"{run}#{index}"  # a reader that names no file: its place in discovery order


def _send_file(
    reg: Registry,
    sinks: _Sinks,
    run: str,
    batch: Batch,
    done: dict[str, int],
    encoders: dict[str, tuple[Encoder | None, str]],
    summary: SyncSummary,
    state: _State,
) -> None:
    """Send the values of one file past the counts in ``done``, confirming every
    :data:`COMMIT_EVERY` values."""

    def encoder(kind: str) -> tuple[Encoder | None, str]:
        if kind not in encoders:
            encoders[kind] = _encoder(reg, kind, sinks.spec.name)
        return encoders[kind]

    # values passed since the last confirmed flush, per kind: [written, skipped]
    pending: dict[str, list[int]] = {}

    def commit() -> None:
        if not pending:
            return
        if any(written for written, _ in pending.values()):
            sinks.get(run).flush()
        for kind, (written, skipped) in pending.items():
            done[kind] = done.get(kind, 0) + written + skipped
            if written:
                summary.sent[kind] = summary.sent.get(kind, 0) + written
        pending.clear()
        state.save()

    def step(kind: str, written: bool, values: int = 1) -> None:
        counts = pending.setdefault(kind, [0, 0])
        counts[0 if written else 1] += values
        if counts[0] + counts[1] >= COMMIT_EVERY:
            commit()

    tags, steps, walls, values = batch.scalars()
    first = done.get(SCALAR, 0)
    summary.already += min(first, len(tags))
    if len(tags) > first:
        encode, reason = encoder(SCALAR)
        if encode is None:
            summary._skip(SCALAR, len(tags) - first, reason)
            done[SCALAR] = len(tags)
        else:
            convert = reg.kinds[SCALAR].convert
            for tag, stp, wall, value in zip(
                tags[first:].tolist(),
                steps[first:].tolist(),
                walls[first:].tolist(),
                values[first:].tolist(),
            ):
                try:
                    data = encode(tag, stp, wall, convert(value))
                except Exception as exc:  # this value cannot be sent: counted, passed
                    summary._skip(SCALAR, 1, f"{tag!r} at step {stp} refused: {exc!r}")
                    step(SCALAR, False)
                    continue
                sinks.get(run).write(data)
                step(SCALAR, True)
            commit()
    for kind, rows in batch.rows.items():
        first = done.get(kind, 0)
        summary.already += min(first, len(rows))
        if len(rows) <= first:
            continue
        encode, reason = encoder(kind)
        k = reg.kinds.get(kind)
        if encode is None or k is None or not k.rebuildable:
            summary._skip(kind, len(rows) - first, reason or f"kind {kind!r} has no from_row")
            done[kind] = len(rows)
            continue
        # the payloads a decoder gave, as they are, else what from_row rebuilds; a tag's values
        # of one step joined where the target holds them in one summary, as convert joins them
        joined = sinks.spec.tensorboard_summaries
        for group, built in k.rebuild_rows(rows[first:], join=joined):
            row = group[0]
            try:
                if isinstance(built, Exception):
                    raise built
                step_, wall = int(row["step"]), float(row["wall_time"])
                data = [encode(tag, step_, wall, value) for tag, value in built]
            except Exception as exc:
                where = f"{row.get('tag')!r} at step {row.get('step')}"
                summary._skip(kind, len(group), f"{where} not rebuilt or refused: {exc!r}")
                step(kind, False, len(group))
                continue
            for item in data:
                sinks.get(run).write(item)
            step(kind, True, len(group))  # confirmed as a whole: never sent again in part
        commit()
