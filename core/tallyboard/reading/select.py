"""What a read of a log dir takes: runs by name or glob, formats by name, and per run folder
the one format read among those a writer puts side by side (:class:`FormatChoice`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase

from tallyboard.plugin.readers import SCALAR_KIND, ReaderSpec


def names_or_globs(arg: str | Iterable[str] | None, what: str) -> tuple[str, ...] | None:
    """``arg`` (None, a name or glob, or an iterable of them) as a tuple; checked."""
    if arg is None:
        return None
    if isinstance(arg, str):
        return (arg,)
    if isinstance(arg, Iterable):
        items = tuple(arg)
        if all(isinstance(a, str) for a in items):
            return items
    raise TypeError(f"{what} must be None, a str or an iterable of str, got {arg!r}")


def matcher(patterns: tuple[str, ...] | None) -> Callable[[str], bool]:
    """Whether a name is one of ``patterns`` or matches one as a glob (``*``, ``?``, ``[ab]``)."""
    if patterns is None:
        return lambda name: True
    exact = set(patterns)
    globs = [p for p in patterns if any(c in p for c in "*?[")]
    return lambda name: name in exact or any(fnmatchcase(name, g) for g in globs)


def format_names(
    formats: str | Iterable[str] | None, readers: dict[str, ReaderSpec]
) -> set[str] | None:
    """``formats`` (None: every format) as a set of names of ``readers``; checked."""
    if formats is None:
        return None
    names = {formats} if isinstance(formats, str) else formats
    if not isinstance(names, Iterable) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"formats must be None, a str or an iterable of str, got {formats!r}")
    unknown = sorted(set(names) - set(readers))
    if unknown:
        raise ValueError(
            f"formats: unknown format(s) {unknown}; readable formats: {sorted(readers)}"
        )
    return set(names)


class FormatChoice:
    """Which reader reads a file, and which of the competing formats (those with a
    ``priority``: a writer puts them side by side, holding the same values) a run folder is
    read in: chosen once per folder, so re-reads stay whole.

    ``formats`` (names, checked against ``readers``) keeps only those formats; with none
    asked, a folder holding several competing formats is read in the one of lowest priority
    that has a decoder for ``kind`` (any, for None or the scalar kind), the others noted in
    :attr:`skipped`."""

    def __init__(
        self,
        readers: dict[str, ReaderSpec],
        decoders: dict[tuple[str, str], Callable[..., object]],
        formats: str | Iterable[str] | None,
        kind: str | None,
    ) -> None:
        self.readers, self.decoders, self.kind = readers, decoders, kind
        #: the formats asked for (None: every format, one competing format per folder).
        self.formats = format_names(formats, readers)
        self.chosen: dict[str, str] = {}  # run folder -> the competing format read there
        #: run folder -> competing formats found there but not read (same values again).
        self.skipped: dict[str, set[str]] = {}

    def reader_for(self, basename: str) -> ReaderSpec | None:
        """The reader spec whose ``matches`` takes the file name ``basename`` (None: none)."""
        for spec in self.readers.values():
            if spec.matches(basename):
                return spec
        return None

    def choose(self, parent: str, present: set[str]) -> str | None:
        """The competing format read in ``parent``, of the competing formats ``present``
        there: kept once chosen, so re-reads stay whole."""
        chosen = self.chosen.get(parent)
        if chosen is None and len(present) == 1:  # one format here: no choice to make
            (chosen,) = present
            self.chosen[parent] = chosen
            return chosen
        if chosen is None and present:
            able = {
                f
                for f in present
                if (f, self.kind) in self.decoders or self.kind in (None, SCALAR_KIND)
            }
            chosen = min(able or present, key=lambda f: (self.readers[f].priority, f))
            self.chosen[parent] = chosen
        if chosen is not None and present - {chosen}:
            self.skipped.setdefault(parent, set()).update(present - {chosen})
        return chosen

    def forget(self, parent: str) -> None:
        """Let the next listing choose again for ``parent`` (its files are gone or replaced)."""
        self.chosen.pop(parent, None)
        self.skipped.pop(parent, None)

    def clear(self) -> None:
        """Forget every choice made."""
        self.chosen.clear()
        self.skipped.clear()
