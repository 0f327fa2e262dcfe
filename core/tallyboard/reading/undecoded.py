"""Values a reader met but no installed kind decodes: counted per run, plugin name and tag.

A reader counts such values in ``Batch.undecoded`` (a third-party plugin's summaries, a form no
kind reads) instead of dropping them; ``read`` warns naming them, ``ls`` lists them and
``convert`` reports them as not converted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tallyboard.plugin.readers import Batch

#: The ``kind`` under which ``ls`` lists undecoded values.
KIND = "undecoded"
#: Entries named in one message; the rest are summed up.
_NAMED = 12


def collect(
    batches: Iterable[tuple[str, Batch]], wanted: Callable[[str], bool] | None = None
) -> dict[tuple[str, str, str], int]:
    """``{(run, plugin name, tag): count}`` over ``(run, batch)`` pairs (only the tags
    ``wanted`` keeps, if given)."""
    out: dict[tuple[str, str, str], int] = {}
    for run, batch in batches:
        for (plugin, tag), n in batch.undecoded.items():
            if wanted is None or wanted(tag):
                key = (run, plugin, tag)
                out[key] = out.get(key, 0) + n
    return out


def describe(counts: dict[tuple[str, str, str], int]) -> str:
    """One line naming each (run, plugin, tag) and its count, the first few of many."""
    items = sorted(counts.items())
    parts = [f"{run}: {tag!r} (plugin {plugin!r}) x{n}" for (run, plugin, tag), n in items[:_NAMED]]
    if len(items) > _NAMED:
        rest = sum(n for _, n in items[_NAMED:])
        parts.append(f"and {rest} more in {len(items) - _NAMED} other tags")
    return "; ".join(parts)
