"""``tallyboard sync LOGDIR --to SINK``: send a log dir's runs to another sink, only what is new."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    """Register the ``sync`` subcommand."""
    p = sub.add_parser(
        "sync",
        help="send local runs to another sink (mlflow+http://..., csv+s3://...), only what is new",
        description=(
            "Replay every run under LOGDIR into SINK, as wandb sync does: values already sent "
            "(remembered in LOGDIR/.tallyboard-sync.json) are not sent again, so it can be run "
            "again after an outage, or from a machine with network, at any time."
        ),
    )
    p.add_argument("logdir", help="local log directory whose runs are sent")
    p.add_argument(
        "--to",
        required=True,
        metavar="SINK",
        help="where the runs go: a sinks= entry such as mlflow+http://host:5000 or "
        "csv+s3://bucket/runs",
    )
    p.add_argument(
        "--format",
        action="append",
        dest="formats",
        metavar="FORMAT",
        help="read only this format (tfevents, mindspore, csv, jsonl, ...); repeat it for "
        "several (default: each run in one format it holds, event files first)",
    )
    p.add_argument(
        "-s",
        "--setting",
        action="append",
        dest="settings",
        default=[],
        metavar="NAME=VALUE",
        help="a setting of the sink, as given beside it in sinks=: -s deadline=60 (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``sync``; exit status 0, or 1 when the target failed (run it again to go on)."""
    from tallyboard.reading.sync import SyncError, sync

    try:
        settings = dict(_setting(text) for text in args.settings)
        to = (args.to, settings) if settings else args.to
        summary = sync(args.logdir, to, formats=args.formats)
    except SyncError as exc:
        print(f"tallyboard sync: {exc}", file=sys.stderr)
        return 1
    except (TypeError, ValueError) as exc:
        print(f"tallyboard sync: {exc}", file=sys.stderr)
        return 2
    print(summary.line())
    if summary.not_sent:
        print(summary.not_sent_line(), file=sys.stderr)
    return 0


def _setting(text: str) -> tuple[str, str]:
    """``"deadline=60"`` -> ``("deadline", "60")``; the sink's settings convert the text."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"--setting {text!r} must be NAME=VALUE, such as deadline=60")
    return name.strip(), value
