"""The ``parquet`` sink: ``tallyboard export -o out.parquet`` writes the rows read as one
Parquet file (pyarrow, imported when an export opens its file: see :mod:`tallyboard_parquet.table`).

It is an export target only. A Parquet file is readable once its footer is written, at the end,
so a writer's values, which must be on disk at every ``flush()``, go to another sink (tfevents,
csv, jsonl) and are exported from there: ``sinks=["parquet"]`` is refused when the sink opens,
with a ``ValueError`` that says so.
"""

from __future__ import annotations

from typing import Any

from tallyboard import SinkOptions, SinkSpec, hookimpl

SINK = "parquet"


def refuse_writer(options: SinkOptions) -> Any:
    """A writer's ``sinks=["parquet"]``: refused (see the module), nothing written."""
    raise ValueError(
        f"sink {SINK!r} writes the files of `tallyboard export` only, not a writer's values "
        f"(log dir {options.log_dir!r}): log with another sink (tfevents, csv, jsonl) and run "
        "`tallyboard export LOGDIR -o out.parquet`"
    )


@hookimpl
def register_sinks(register: Any) -> None:
    from .table import EXPORT

    register(
        SinkSpec(
            name=SINK,
            open=refuse_writer,
            description="exports as Parquet (tallyboard export -o out.parquet)",
            export=EXPORT,
        )
    )
