"""The ``embedding`` kind: ``add_embedding`` writes the files of TensorBoard's PROJECTOR tab.

Embeddings are files beside the event files (``projector_config.pbtxt`` and
``<step>/<tag>/{tensors.tsv, metadata.tsv, sprite.png}``), not records, so they are written by
``add_embedding`` directly rather than through a sink.
"""

from __future__ import annotations

from typing import Any

from plugboard import Kind, hookimpl

from .methods import Embedding, add_embedding, prepare

__all__ = ["Embedding", "add_embedding", "prepare"]


def _convert(value: Any) -> Any:
    raise TypeError(
        "the 'embedding' kind writes projector files, not records: call writer.add_embedding(mat, ...) instead of "
        "add_value('embedding', ...)"
    )


@hookimpl
def register_kinds(register: Any) -> None:
    register(
        Kind(
            name="embedding",
            convert=_convert,
            methods={"add_embedding": add_embedding},
            description="projector files: vectors, labels, sprite",
        )
    )
