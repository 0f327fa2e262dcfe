"""What a :class:`~tallyboard.faces.summary_writer.SummaryWriter` is made with, in one object.

The constructor's arguments, and what a sub-run writer (``writer.child(run)``) inherits from its
parent, travel as one frozen :class:`WriterOptions` rather than a long list of positions.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from tallyboard import paths
from tallyboard.plugin.sinks import SinkEntry, SinkTarget
from tallyboard.ranks import reduce as distributed


def default_log_dir(comment: str = "") -> str:
    """torch's default: ``runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname><comment>``.

    ``comment`` ends one folder name inside ``runs/``: a separator, ``..`` or control character
    in it is refused with ValueError, so no comment can place the run elsewhere.
    """
    if "/" in comment or "\\" in comment:
        raise ValueError(
            f"comment {comment!r} must not contain a path separator: it ends the run's folder name"
        )
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    name = paths.safe_relpath(f"{stamp}_{socket.gethostname()}{comment}", "comment")
    return os.path.join("runs", name)


@dataclass(frozen=True)
class WriterOptions:
    """A writer's arguments as given (checked when the writer is made, not here).

    Attributes:
        log_dir: The run's directory, or None for :func:`default_log_dir`.
        comment: Appended to the default ``log_dir``'s name.
        purge_step: The step to restart the run from, or None.
        max_queue: Records that may wait before the background thread writes them.
        flush_secs: The longest an accepted record stays unwritten, in seconds.
        filename_suffix: Appended to the event file's name.
        sinks: The ``sinks=`` entries, or None for the default.
        sink_errors: ``"raise"``, ``"warn"`` or None (chosen by the number of sinks).
        ranks: Who writes in a distributed job, or None.
        reduce: How scalars are reduced across ranks, or None.
        sync_timeout: Seconds a rank waits for the others at ``sync()``.
        write_to_disk: False checks every call and writes nothing.
        targets: A sub-run's sinks, taken from its parent (None: parse ``sinks``).
        plan: A sub-run's rank plan, taken from its parent (None: plan from ``ranks``).
    """

    log_dir: str | os.PathLike[str] | None = None
    comment: str = ""
    purge_step: int | None = None
    max_queue: int = 10
    flush_secs: float = 120
    filename_suffix: str = ""
    sinks: Sequence[SinkEntry] | None = None
    sink_errors: str | None = None
    ranks: str | None = None
    reduce: str | dict[str, str] | None = None
    sync_timeout: float = distributed.DEFAULT_SYNC_TIMEOUT
    write_to_disk: bool = True
    targets: tuple[SinkTarget, ...] | None = None
    plan: distributed.RankPlan | None = None
