"""``tallyboard ls | export | plot | convert``: look at a log dir from the shell.

This module adds the commands to the parser and runs the one asked; each lives in its own
module: :mod:`~tallyboard.cli.listing` (``ls``), :mod:`~tallyboard.cli.export` (``export``,
through the sinks that export), :mod:`~tallyboard.cli.plot`, :mod:`~tallyboard.cli.convert`,
and what they share in :mod:`~tallyboard.cli.common`. Heavy libraries (pyarrow, matplotlib,
tqdm, tensorboard) are imported only by the command that needs them.
"""

from __future__ import annotations

import sys
from typing import Any

from tallyboard.cli.common import (
    LOGDIR_HELP,
    RUNS_HELP,
    TAGS_HELP,
    CliError,
    add_from,
    iter_file_batches,
)
from tallyboard.cli.convert import cmd_convert
from tallyboard.cli.export import cmd_export, cmd_export_dataset, export_format
from tallyboard.cli.listing import cmd_ls, summarize
from tallyboard.cli.notes import noted
from tallyboard.cli.plot import cmd_plot, smooth, smoothing_weight
from tallyboard.plugin.readers import SCALAR_KIND as SCALAR

__all__ = [
    "CliError",
    "add_parsers",
    "cmd_convert",
    "cmd_export",
    "cmd_export_dataset",
    "cmd_ls",
    "cmd_plot",
    "dispatch",
    "iter_file_batches",
    "smooth",
    "summarize",
]


def add_parsers(sub: Any) -> None:
    """Add ``ls``, ``export``, ``plot`` and ``convert`` to the ``tallyboard`` subparsers."""
    p = sub.add_parser("ls", help="runs, tags per kind, counts, step range, last update")
    p.add_argument("logdir", help=LOGDIR_HELP)
    p.add_argument("--json", action="store_true", help="print JSON for scripts instead of text")
    add_from(p)
    p = sub.add_parser("export", help="scalars (or another kind) to csv, parquet or jsonl")
    p.add_argument("logdir", help=LOGDIR_HELP)
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument(
        "-o",
        "--output",
        help="the file to write: out.csv, out.parquet or out.jsonl (this or --dataset); none "
        "is made when no value is selected (an error naming what exists)",
    )
    out.add_argument(
        "--dataset",
        metavar="DIR",
        help="a Parquet dataset partitioned by run and kind; a later export appends only what "
        "is new",
    )
    p.add_argument(
        "--on",
        metavar="ENGINE",
        help="with --dataset: read and write on a cluster's workers, in shares of runs: "
        "dask://HOST:PORT, ray://HOST:PORT, or dask / ray for one on this machine (default: "
        "read and written by this machine's processes)",
    )
    p.add_argument(
        "--format",
        type=export_format,
        metavar="FORMAT",
        help="the output's format, one an installed sink exports to (csv, parquet, jsonl, ...; "
        "default: from the output's suffix)",
    )
    # One value per --runs/--tags (repeated for more): a list option taking every word after it
    # would take the log dir too (`export --runs demo runs -o x.csv`).
    p.add_argument("--runs", action="append", metavar="RUN", help=RUNS_HELP)
    p.add_argument("--tags", action="append", metavar="TAG", help=TAGS_HELP)
    p.add_argument(
        "--kind",
        default=SCALAR,
        help="the kind to export (default scalar): histogram, image, text, audio, tensor, ...; "
        "bytes are base64 in csv/jsonl and binary in parquet, arrays nested lists in jsonl and "
        ".npy bytes in parquet",
    )
    add_from(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p = sub.add_parser("plot", help="one scalar tag over runs as a PNG")
    p.add_argument("logdir", help=LOGDIR_HELP)
    p.add_argument("--tag", required=True, help="the scalar tag to plot")
    p.add_argument("-o", "--output", required=True, help="image path (.png)")
    p.add_argument(
        "--smooth",
        type=smoothing_weight,
        default=0.0,
        metavar="WEIGHT",
        help="TensorBoard's smoothing weight, in [0, 1) (default: 0.0, no smoothing)",
    )
    p.add_argument(
        "--band", action="store_true", help="draw the mean over runs with a min..max band"
    )
    p.add_argument("--runs", action="append", metavar="RUN", help=RUNS_HELP)
    add_from(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p = sub.add_parser("convert", help="rewrite every run in another format (tfevents, mindspore)")
    p.add_argument("src", help="log dir (path or fsspec URL) whose runs are read")
    p.add_argument("dst", help="local directory the converted runs go to (dst/<run>)")
    p.add_argument("--to", required=True, help="target format: a sink name, tfevents or mindspore")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a dst that holds files (none is ever overwritten)",
    )
    add_from(p)


def dispatch(args: Any) -> int:
    """Run the command ``args`` names; a :class:`CliError` becomes one line and exit code 1."""
    noted.clear()
    try:
        if args.command == "ls":
            return cmd_ls(args.logdir, args.json, args.formats)
        if args.command == "export" and args.dataset is not None:
            return cmd_export_dataset(
                args.logdir, args.dataset, args.runs, args.tags, args.kind, args.formats, args.on
            )
        if args.command == "export" and args.on is not None:
            raise CliError("--on works with --dataset only")
        if args.command == "export":
            return cmd_export(
                args.logdir,
                args.output,
                args.format,
                args.runs,
                args.tags,
                args.force,
                args.kind,
                args.formats,
            )
        if args.command == "plot":
            return cmd_plot(
                args.logdir,
                args.tag,
                args.output,
                args.smooth,
                args.band,
                args.runs,
                args.force,
                args.formats,
            )
        if args.command == "convert":
            return cmd_convert(args.src, args.dst, args.to, args.force, args.formats)
    except CliError as e:
        print(f"tallyboard {args.command}: {e}", file=sys.stderr)
        return 1
    return 2
