"""``tallyboard.read(kind="hparams")``: one row per run, its hparams and final metrics."""

from __future__ import annotations

from typing import Any


def per_run(rows: list[dict[str, Any]], batches: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """One row per run: its hparams, then the last value (highest step) of each scalar tag.

    A metric whose tag equals an hparam name is named ``metric:<tag>``.
    """
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.get("part", "session_start_info") == "session_start_info":
            out.setdefault(row["run"], {"run": row["run"]}).update(row["hparams"])
    for run, batch in batches:
        target = out.get(run)
        if target is None:
            continue
        tags, steps, _, values = batch.scalars()
        last: dict[str, tuple[int, float]] = {}
        for tag, step, value in zip(tags.tolist(), steps.tolist(), values.tolist()):
            if tag not in last or step >= last[tag][0]:
                last[tag] = (step, value)
        for tag, (_, value) in last.items():
            target["metric:" + tag if tag in target else tag] = value
    return list(out.values())
