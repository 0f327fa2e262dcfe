"""A Sphinx directive that renders the ``tallyboard`` command's help, so the CLI reference page is
generated from the same argparse help the command prints (written once, in the code).

``.. tallyboard-cli::`` (in MyST: a ```` ```{tallyboard-cli} ```` fence) renders ``tallyboard
--help`` and then, as a section each, ``tallyboard <command> --help`` for every command its parser
has, so a new command appears here without editing the page.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def cli_help(args: list[str]) -> str:
    """What ``tallyboard ARGS --help`` prints, at a fixed width so the page does not depend on
    the terminal that built it."""
    from tallyboard.cli import main

    out = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main([*args, "--help"])
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue()


def commands() -> list[str]:
    """The subcommands of the command's own parser, in the order ``--help`` lists them."""
    import argparse

    from tallyboard.cli import build_parser

    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    raise ValueError("the tallyboard parser has no subcommands")


class TallyboardCli(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        main_help = cli_help([])
        out: list[nodes.Node] = [nodes.literal_block(main_help, main_help, language="text")]
        for command in commands():
            text = cli_help([command])
            section_id = nodes.make_id(f"tallyboard-{command}")
            section = nodes.section(ids=[section_id], names=[section_id])
            section += nodes.title(text=f"tallyboard {command}")
            section += nodes.literal_block(text, text, language="text")
            out.append(section)
        return out


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("tallyboard-cli", TallyboardCli)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
