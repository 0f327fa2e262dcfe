"""``tallyboard board``: TensorBoard's frontend over tallyboard's readers (a gRPC data provider).

TensorBoard can take its data from another process through its data-provider service
(``tensorboard --grpc_data_provider HOST:PORT``). This package is such a provider over any log
dir the installed reader plugins read (event files, MindSpore summaries, CSV, JSONL,
third-party formats; a local path or any fsspec URL): :func:`serve` starts one. The modules:

- :mod:`~tallyboard.board.reservoir`: per series downsampling that keeps the last point;
- :mod:`~tallyboard.board.store`: the series served, read without locks;
- :mod:`~tallyboard.board.ingest`: reader batches into TensorBoard's series (no format named);
- :mod:`~tallyboard.board.loader`: passes over the log dir, only what is new;
- :mod:`~tallyboard.board.follow`: a local log dir's changes, so a pass starts at once;
- :mod:`~tallyboard.board.service`: the RPCs;
- :mod:`~tallyboard.board.server`: the running server.

grpcio and tensorboard are imported only when a server starts (``pip install tallyboard[board]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tallyboard.board.server import BoardServer, serve

__all__ = ["BoardServer", "serve"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tallyboard.board import server

        return getattr(server, name)
    raise AttributeError(f"module 'tallyboard.board' has no attribute {name!r}")
