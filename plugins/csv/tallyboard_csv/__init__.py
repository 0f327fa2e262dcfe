"""The ``csv`` sink: scalars of a run in one CSV file, ready for ``pandas.read_csv``.

The file is ``<log_dir>/scalars.csv`` (``scalars.1.csv`` ... when a writer re-opens after
``close()`` or another writer owns the name) with the columns ``wall_time,step,tag,value``;
``step`` is empty when none was given. Sub-runs (``add_scalars`` keys) are sub-directories with
their own file, as they are separate runs in TensorBoard. The sink teaches itself the built-in
``scalar`` kind; other kinds get the writer's once-only "cannot encode" warning.

The plugin reads its files back too (``tallyboard.read``, ``tallyboard ls``): see
:mod:`tallyboard_csv.reader`; and it is the target of ``tallyboard export -o out.csv`` (one
table of the rows read, ``run`` first): see :mod:`tallyboard_csv.table`.
"""

from __future__ import annotations

from typing import Any

from tallyboard import SinkOptions, SinkSpec, hookimpl

SINK = "csv"
FILE_STEM = "scalars"
COLUMNS = ("wall_time", "step", "tag", "value")
HEADER = ",".join(COLUMNS) + "\n"

_tags: dict[str, str] = {}


def _tag_field(tag: str) -> str:
    """The tag as a CSV field, quoted when it holds a comma, quote or line break (cached)."""
    field = _tags.get(tag)
    if field is None:
        field = tag
        if any(c in tag for c in ',"\r\n'):
            field = '"' + tag.replace('"', '""') + '"'
        if len(_tags) < 100_000:
            _tags[tag] = field
    return field


def encode_scalar(tag: str, step: int | None, wall_time: float, value: Any) -> str:
    """One CSV row; ``value`` is a float, or torch's ``new_style`` scalar (its ``.value``)."""
    if type(value) is not float:
        value = float(getattr(value, "value", value))
    return f"{wall_time!r},{'' if step is None else step},{_tag_field(tag)},{value!r}\n"


class CsvSink:
    """Rows appended in batches to ``scalars.csv`` (local path or fsspec URL)."""

    def __init__(self, options: SinkOptions) -> None:
        from tallyboard.records import storage

        self.path, handle = storage.create_unique(options.log_dir, FILE_STEM, ".csv")
        self._out = storage.BatchWriter(
            handle,
            header=HEADER.encode(),
            max_lines=options.max_queue,
            flush_secs=options.flush_secs,
        )
        self.write = self._out.write
        self.flush = self._out.flush
        self.close = self._out.close
        self.abandon = self._out.abandon

    def __repr__(self) -> str:
        return f"<CsvSink {self.path!r}>"


@hookimpl
def register_sinks(register: Any) -> None:
    from .table import EXPORT

    register(
        SinkSpec(
            name=SINK,
            open=CsvSink,
            schemes=("csv",),
            description="scalars as CSV (wall_time,step,tag,value)",
            export=EXPORT,  # tallyboard export -o out.csv: see .table
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    register("scalar", SINK, encode_scalar)


@hookimpl
def register_readers(register: Any) -> None:
    from tallyboard.plugin.readers import ReaderSpec

    from .reader import matches, open_reader

    register(
        ReaderSpec(
            name=SINK,
            matches=matches,
            open=open_reader,
            description="scalars.csv of the csv sink",
            priority=30,
        )
    )
