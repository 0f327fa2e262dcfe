"""``python -m tallyboard plugins|ls|export|plot|convert|board|serve|sync`` (also the ``tallyboard`` console script)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import warnings
from typing import Any

from tallyboard.extras import MissingExtra


def _plugins(as_json: bool) -> int:
    from tallyboard.plugin.registry import get_registry

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = get_registry()
    rows = [
        {
            "name": p.name,
            "distribution": p.distribution,
            "version": p.version,
            "status": p.status,
            "kinds": p.kinds,
            "sinks": p.sinks,
            "exports": _exports(reg, p.sinks),
            "encoders": [f"{k}->{s}" for k, s in p.encoders],
            "readers": p.readers,
            "decoders": [f"{f}->{k}" for f, k in p.decoders],
            "error": p.error,
        }
        for p in reg.plugins
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            dist = f"{r['distribution']} {r['version']}".strip()
            print(f"{r['name']}  ({dist})  [{r['status']}]")
            if r["kinds"]:
                print(f"    kinds: {', '.join(r['kinds'])}")
            if r["sinks"]:
                print(f"    sinks: {', '.join(r['sinks'])}")
            if r["exports"]:
                print(f"    exports (tallyboard export): {', '.join(r['exports'])}")
            if r["encoders"]:
                print(f"    encoders: {', '.join(r['encoders'])}")
            if r["readers"]:
                print(f"    readers: {', '.join(r['readers'])}")
            if r["decoders"]:
                print(f"    decoders: {', '.join(r['decoders'])}")
            if r["error"]:
                print(f"    error: {r['error']}")
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    return 0


def _exports(reg: Any, sinks: list[str]) -> list[str]:
    """The formats ``tallyboard export`` writes through these sinks."""
    return [
        fmt
        for name in sinks
        if (spec := reg.sinks.get(name)) is not None and spec.export is not None
        for fmt in spec.export.formats
    ]


class HelpFormatter(argparse.HelpFormatter):
    """Help lines that end with the option's default, unless the help already says it.

    Nothing is added for a flag (``store_true``), a required option or one whose default is
    None: such a help line says in words what happens without the option.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        default = action.default
        if (
            text
            and action.option_strings
            and not action.required
            and "default" not in text
            and default is not None
            and default is not argparse.SUPPRESS
            and not isinstance(default, bool)
            and action.nargs != 0
        ):
            text += " (default: %(default)s)"
        return text


class ArgumentParser(argparse.ArgumentParser):
    """The CLI's parser: every command and subcommand formats its help with :class:`HelpFormatter`
    (``add_subparsers`` makes subcommand parsers of this class too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    """The ``tallyboard`` command's parser, with every subcommand."""
    from tallyboard import __version__

    parser = ArgumentParser(prog="tallyboard", description="tallyboard command line")
    parser.add_argument("--version", action="version", version=f"tallyboard {__version__}")
    sub = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="COMMAND",
        help="one of the commands below; tallyboard COMMAND --help lists its options",
    )
    p = sub.add_parser("plugins", help="list installed plugins and what each contributes")
    p.add_argument("--json", action="store_true", help="print JSON for scripts instead of text")
    from tallyboard.cli import read as cli_read

    cli_read.add_parsers(sub)
    from tallyboard.cli import board as cli_board

    cli_board.add_parsers(sub)
    from tallyboard.cli import sync as cli_sync

    cli_sync.add_parser(sub)
    from tallyboard.cli import stubs as cli_stubs

    cli_stubs.add_parser(sub)
    return parser


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    from tallyboard.cli import board as cli_board
    from tallyboard.cli import read as cli_read
    from tallyboard.cli import sync as cli_sync

    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "board":  # only board passes options on (to TensorBoard)
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command in ("board", "serve"):
        return cli_board.dispatch(args, extra)
    if args.command == "plugins":
        return _plugins(args.json)
    if args.command == "sync":
        return cli_sync.run(args)
    if args.command == "stubs":
        from tallyboard.cli import stubs as cli_stubs

        return cli_stubs.run(args)
    return cli_read.dispatch(args)


def main(argv: list[str] | None = None) -> int:
    """The ``tallyboard`` command: a closed pipe ends it quietly, a missing extra in one line."""
    try:
        status = _run(argv)
        sys.stdout.flush()  # a reader that went away (``| head``) is found here, not at exit
        return status
    except BrokenPipeError:
        # Nothing more can reach the reader; stop writing there and exit as a killed writer would.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + int(getattr(signal, "SIGPIPE", 13))
    except MissingExtra as exc:
        print(f"tallyboard: {exc}", file=sys.stderr)
        return 1
