"""torch's file-writer face of a writer, and tensorboardX's JSON export of ``add_scalars``.

Code written against torch's writer internals (``writer.file_writer``,
``writer._get_file_writer().add_summary(...)``) and tensorboardX's ``export_scalars_to_json``
keeps working: :class:`FileWriter` hands protobufs to the writer's sinks.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any


class FileWriter:
    """torch's ``FileWriter`` over a :class:`SummaryWriter`: what ``writer.file_writer`` gives.

    Code written for torch's writer internals (Lightning's ``TensorBoardLogger`` calls
    ``writer._get_file_writer().add_summary(summary, step)``) keeps working: ``add_event`` and
    ``add_summary`` take TensorBoard protobufs and are the writer's methods of the same names;
    ``flush``, ``close`` and ``get_logdir`` are the writer's too.

    Args:
        writer: The writer whose sinks receive the protobufs.

    Example:
        >>> from tensorboard.compat.proto.summary_pb2 import Summary
        >>> from tallyboard import SummaryWriter
        >>> with SummaryWriter("runs/file_writer") as writer:
        ...     summary = Summary(value=[Summary.Value(tag="loss", simple_value=0.5)])
        ...     writer.file_writer.add_summary(summary, 1)
    """

    __slots__ = ("writer",)

    def __init__(self, writer: Any) -> None:  # a SummaryWriter
        self.writer = writer

    def add_event(self, event: Any, step: Any = None, walltime: Any = None) -> None:
        """Write a TensorBoard ``Event`` as is: :meth:`SummaryWriter.add_event`."""
        self.writer.add_event(event, step, walltime)

    def add_summary(self, summary: Any, global_step: Any = None, walltime: Any = None) -> None:
        """Write a TensorBoard ``Summary`` in its own event: :meth:`SummaryWriter.add_summary`."""
        self.writer.add_summary(summary, global_step, walltime)

    def get_logdir(self) -> str:
        """The run's directory as a str (torch's FileWriter gives a str)."""
        return self.writer._dir

    def flush(self) -> None:
        """:meth:`SummaryWriter.flush`."""
        self.writer.flush()

    def close(self) -> None:
        """:meth:`SummaryWriter.close`."""
        self.writer.close()


class FileWriterFace:
    """A writer's torch and tensorboardX extras: :meth:`get_logdir`, :attr:`file_writer`,
    ``_get_file_writer()`` and :meth:`export_scalars_to_json`."""

    if TYPE_CHECKING:  # set by the writer (SummaryWriter._setup)
        log_dir: Any
        scalar_dict: dict[str, list[list[Any]]]
        _file_writer: FileWriter | None

        def _open(self) -> None: ...

    def get_logdir(self) -> Any:
        """The run's directory, as given to the constructor (a ``Path`` stays a ``Path``).

        Returns:
            ``log_dir`` as given, or the default ``runs/...`` name the writer chose; with
            ``ranks="each"``, the rank's sub-run ``<log_dir>/rank_<k>``.

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/logdir") as writer:
            ...     print(writer.get_logdir())
            runs/logdir
        """
        return self.log_dir

    def _get_file_writer(self) -> FileWriter:
        """torch's internal file-writer face, for code that writes protobufs through it.

        Lightning's ``TensorBoardLogger`` calls ``_get_file_writer().add_summary(summary, step)``;
        the returned :class:`FileWriter` hands such protobufs to this writer's sinks.
        """
        if self._file_writer is None:
            self._open()
            self._file_writer = FileWriter(self)
        return self._file_writer

    @property
    def file_writer(self) -> FileWriter | None:
        """torch's public attribute: the run's :class:`FileWriter`, None once closed.

        An ``add_*`` call or ``_get_file_writer()`` after :meth:`close` opens a new one.
        """
        return self._file_writer

    def export_scalars_to_json(self, path: str | os.PathLike[str]) -> None:
        """Write every value :meth:`add_scalars` logged since the last export to ``path``, as JSON.

        tensorboardX's method, with its format: ``{"<log_dir>/<main_tag>/<key>": [[wall_time, step,
        value], ...]}``. The values were kept in memory since they were logged; once written they
        are forgotten (they stay in the event files), so memory does not grow between exports.

        Args:
            path: The JSON file to write (str or ``os.PathLike``), replaced if it exists.

        Raises:
            TypeError: ``path`` is not a str or path.
            OSError: The file cannot be written.

        Example:
            >>> from tallyboard import SummaryWriter
            >>> with SummaryWriter("runs/export") as writer:
            ...     writer.add_scalars("acc", {"train": 0.9, "val": 0.8}, 0)
            ...     writer.export_scalars_to_json("runs/export/scalars.json")
        """
        import json

        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.scalar_dict, fh)
        self.scalar_dict = {}
