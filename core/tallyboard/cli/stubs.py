"""``tallyboard stubs``: write the typing stub of the installed plugins' writer methods."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    """Register the ``stubs`` subcommand."""
    p = sub.add_parser(
        "stubs",
        help="let type checkers and editors see every plugin's add_* methods",
        description=(
            "Write _tallyboard_methods/__init__.pyi, the typing stub that names the add_* "
            "method each installed plugin gives SummaryWriter (help() and dir() see them "
            "without it). Run it again after installing or removing a plugin."
        ),
    )
    p.add_argument(
        "--output",
        metavar="FOLDER",
        help="the folder to write _tallyboard_methods/ in; put it on MYPYPATH if it is not "
        "where tallyboard is installed (default: the folder that holds the tallyboard package)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the stub is missing or differs from the installed plugins",
    )


def run(args: argparse.Namespace) -> int:
    """Write (or check) the stub; print where it is."""
    from tallyboard.faces import stubs
    from tallyboard.plugin.registry import get_registry

    folder = args.output or stubs.default_folder()
    path = stubs.stub_path(folder)
    if args.check:
        current = path.is_file() and path.read_text() == stubs.stub_text(get_registry())
        print(f"{path}: {'current' if current else 'missing or out of date'}")
        return 0 if current else 1
    try:
        stubs.write_stub(get_registry(), folder)
    except OSError as exc:
        print(f"tallyboard stubs: cannot write {path}: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {path} ({len(get_registry().methods)} methods)")
    return 0
