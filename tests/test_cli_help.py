"""Every option of every ``tallyboard`` subcommand has a help line that says its default.

The subcommands are found from the parser itself, so a command added later is checked too. An
option's help says its default when it has one: the CLI's formatter appends ``(default: X)``
unless the help already says it; an option whose default is None must say in words what
happens without it (``keep only these runs (default: every run)``); flags and required options
need no default.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from tallyboard.cli import build_parser


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _says_default(action: argparse.Action, help_text: str) -> bool:
    if "default" not in help_text:
        return False
    default = action.default
    if isinstance(default, (str, int, float)):
        shown = {str(default), f"{default:g}"} if isinstance(default, (int, float)) else {default}
        return any(s in help_text for s in shown)
    return True


def problems(parser: argparse.ArgumentParser) -> list[str]:
    """What is missing from ``parser``'s help: options without help, defaults not said."""
    formatter = parser._get_formatter()
    # one of a required group (export's -o or --dataset) is required: it has no default to say
    chosen = [a for g in parser._mutually_exclusive_groups if g.required for a in g._group_actions]
    out = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        name = "/".join(action.option_strings) or action.dest
        text = formatter._expand_help(action) if action.help else ""
        if not text.strip():
            out.append(f"{name}: no help")
            continue
        required = action.required or action in chosen
        needs_default = action.option_strings and not required and action.nargs != 0
        if needs_default and not _says_default(action, text):
            out.append(f"{name}: help does not say its default ({action.default!r}): {text!r}")
    return out


def test_every_option_of_every_subcommand_has_help_with_its_default():
    parser = build_parser()
    assert not problems(parser)
    found = {name: problems(sub) for name, sub in subcommands(parser).items()}
    assert {"plugins", "ls", "export", "plot", "convert", "board", "serve", "sync"} <= set(found)
    missing = {name: p for name, p in found.items() if p}
    assert not missing, missing


def test_the_formatter_appends_a_default_the_help_does_not_say():
    sub = subcommands(build_parser())
    help_text = sub["plot"].format_help()
    assert "(default: 0.0, no smoothing)" in " ".join(help_text.split())
    parser = sub["plugins"].__class__(prog="x")
    parser.add_argument("--port", type=int, default=6006, help="the port")
    parser.add_argument("--host", default="127.0.0.1", help="the host (default 127.0.0.1)")
    parser.add_argument("--quiet", action="store_true", help="say less")
    text = " ".join(parser.format_help().split())
    assert "the port (default: 6006)" in text
    assert "the host (default 127.0.0.1) " in text + " "  # said once, not twice
    assert "say less (default" not in text
    assert not problems(parser)


def test_the_checks_find_an_option_without_help_or_default():
    parser = subcommands(build_parser())["plugins"].__class__(prog="x")
    parser.add_argument("logdir")
    parser.add_argument("--runs", nargs="+", help="keep only these runs")
    parser.add_argument("--depth", type=int, default=3, help="how deep (default: shallow)")
    assert problems(parser) == [
        "logdir: no help",
        "--runs: help does not say its default (None): 'keep only these runs'",
        "--depth: help does not say its default (3): 'how deep (default: shallow)'",
    ]


def test_subcommand_help_shows_defaults_from_the_console():
    out = subprocess.run(
        [sys.executable, "-m", "tallyboard", "export", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "--runs RUN keep this run: a name (its path under the log dir) or a glob" in text
    assert "repeat the option for more (default: every run)" in text
    assert "logdir log directory: a local path or an fsspec URL" in text
