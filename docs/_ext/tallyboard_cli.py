"""A Sphinx directive that renders the ``tallyboard`` command's help, so the CLI reference page is
generated from the same argparse help the command prints (written once, in the code).

``.. tallyboard-cli::`` (in MyST: a ```` ```{tallyboard-cli} ```` fence) renders ``tallyboard
--help`` and then, as a section each, ``tallyboard <command> --help`` for every command the main
help lists, so a new command appears here without editing the page.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
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


def commands(main_help: str) -> list[str]:
    """The commands in the usage line's ``{a,b,c}``."""
    match = re.search(r"\{([\w,-]+)\}", main_help)
    if not match:
        raise ValueError(f"no command list in tallyboard --help:\n{main_help}")
    return match.group(1).split(",")


class TallyboardCli(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        main_help = cli_help([])
        out: list[nodes.Node] = [nodes.literal_block(main_help, main_help, language="text")]
        for command in commands(main_help):
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
