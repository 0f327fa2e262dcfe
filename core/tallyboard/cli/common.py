"""What the reading commands (``ls``, ``export``, ``plot``, ``convert``) share: the one-line
error, the run reader and its notes, the progress bar, the closest names, the option helps."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from tallyboard.cli.notes import note_skipped
from tallyboard.plugin.readers import Batch
from tallyboard.reading.runs import RunReader


class CliError(Exception):
    """A user error reported as one line on stderr with exit code 1."""


def run_reader(
    logdir: str,
    formats: Sequence[str] | None = None,
    kind: str | None = None,
    runs: Sequence[str] | None = None,
) -> RunReader:
    """The reader of ``logdir``'s runs; a bad argument is a :class:`CliError`."""
    try:
        return RunReader(logdir, formats, kind, runs=runs)
    except (TypeError, ValueError) as e:
        raise CliError(str(e)) from None


def iter_file_batches(
    logdir: str, formats: Sequence[str] | None = None, runs: Sequence[str] | None = None
) -> Iterator[tuple[str, Batch]]:
    """``(run, batch)`` one file at a time, so only one file's records are held at once (of
    the runs ``runs`` names or globs match, when given)."""
    reader = run_reader(logdir, formats, None, runs)
    for run, file_reader in reader.discover():
        yield run, file_reader.read_new()
    note_skipped(reader)


def refuse_overwriting_input(out: str, reader: RunReader, files: list[tuple[str, Any]]) -> None:
    """Refuse an output that exists inside the log dir being read, or is one of its files
    (through a link too): ``--force`` would destroy what is read. A new file there is fine."""
    from fsspec.implementations.local import LocalFileSystem

    if not os.path.lexists(out) or not isinstance(reader.fs, LocalFileSystem):
        return
    real, root = os.path.realpath(out), os.path.realpath(reader.root)
    inside = os.path.commonpath([real, root]) == root
    read = (getattr(r, "path", None) for _, r in files)
    if inside or any(isinstance(p, str) and _same_file(out, p) for p in read):
        raise CliError(
            f"-o {out}: refusing to overwrite a file inside the log dir being read ({reader.root});"
            " write the output elsewhere or to a new file"
        )


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def closest(asked: Sequence[str], names: Sequence[str], n: int = 5) -> str:
    """Up to ``n`` of ``names``, those closest to what was asked first."""
    import difflib

    ranked: list[str] = []
    for want in asked:
        for name in difflib.get_close_matches(want.replace("*", ""), names, n, 0.0):
            if name not in ranked:
                ranked.append(name)
    shown = ranked[:n] or sorted(names)[:n]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" (and {more} more)" if more > 0 else "") if shown else "none"


class Progress:
    """tqdm when importable, else a one-line counter; silent unless stderr is a TTY."""

    def __init__(self, total: int, what: str = "export") -> None:
        self.total, self.done, self.bar, self.what = total, 0, None, what
        self.on = sys.stderr.isatty()
        if self.on:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="file", file=sys.stderr)
            except ImportError:
                self.bar = None

    def update(self) -> None:
        self.done += 1
        if not self.on:
            return
        if self.bar is not None:
            self.bar.update(1)
        else:
            print(f"\r{self.what}: {self.done}/{self.total} files", end="", file=sys.stderr)

    def close(self) -> None:
        if self.on:
            if self.bar is not None:
                self.bar.close()
            else:
                print(file=sys.stderr)


LOGDIR_HELP = "log directory: a local path or an fsspec URL (s3://bucket/runs)"
RUNS_HELP = (
    "keep this run: a name (its path under the log dir) or a glob such as 'lr=0.1/*', matched"
    " as tallyboard.read(runs=...) matches; repeat the option for more (default: every run)"
)
TAGS_HELP = (
    "keep this tag: a name or a glob such as 'loss/*', matched as tallyboard.read(tags=...)"
    " matches; repeat the option for more (default: every tag)"
)


def add_from(parser: Any) -> None:
    """Add ``--from FORMAT`` (repeatable) to a reading command's parser."""
    parser.add_argument(
        "--from",
        dest="formats",
        action="append",
        metavar="FORMAT",
        help="read only this format (tfevents, mindspore, csv, jsonl, ...); repeat the option for "
        "more; by default a run holding the same values in several formats is read in one, event "
        "files first",
    )
