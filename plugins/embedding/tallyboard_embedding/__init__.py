"""The ``embedding`` kind: ``add_embedding`` writes the files of TensorBoard's PROJECTOR tab.

Embeddings are files beside the event files (``projector_config.pbtxt`` and
``<step>/<tag>/{tensors.tsv, metadata.tsv, sprite.png}``), not records, so they are written by
``add_embedding`` directly rather than through a sink. The plugin reads them back as well
(``tallyboard.read(logdir, kind="embedding")``): see :mod:`tallyboard_embedding.reader`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tallyboard import Kind, hookimpl

from .methods import Embedding, add_embedding, prepare

__all__ = ["Embedding", "add_embedding", "prepare"]


_ARGS = ("mat", "metadata", "label_img", "metadata_header")


def _convert(value: Any) -> Any:
    raise TypeError(
        "the 'embedding' kind writes projector files, not records: log it with "
        "writer.add_value('embedding', tag, value) or writer.add_embedding(mat, ...)"
    )


def log_embedding(
    writer: Any, tag: str, value: Any, global_step: Any = None, walltime: Any = None
) -> None:
    """``add_value("embedding", tag, value)``: ``value`` is the matrix, or a mapping with the keys
    mat, metadata, label_img and metadata_header (add_embedding's arguments)."""
    if isinstance(value, Mapping):
        unknown = set(value) - set(_ARGS)
        if unknown or "mat" not in value:
            raise ValueError(
                f"an embedding mapping needs 'mat' and may have {', '.join(_ARGS[1:])}; got keys {sorted(value)}"
            )
        add_embedding(writer, global_step=global_step, tag=tag, **value)
    else:
        add_embedding(writer, value, global_step=global_step, tag=tag)


@hookimpl
def register_kinds(register: Any) -> None:
    register(
        Kind(
            name="embedding",
            convert=_convert,
            methods={"add_embedding": add_embedding},
            log=log_embedding,
            description="projector files: vectors, labels, sprite",
        )
    )


@hookimpl
def register_readers(register: Any) -> None:
    from tallyboard.plugin.readers import ReaderSpec

    from .reader import FORMAT, matches, open_reader

    register(
        ReaderSpec(
            name=FORMAT,
            matches=matches,
            open=open_reader,
            description="TensorBoard projector files (projector_config.pbtxt and its TSVs)",
        )
    )
