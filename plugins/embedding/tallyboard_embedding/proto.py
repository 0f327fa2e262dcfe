"""The projector's config messages (field numbers from tensorboard/plugins/projector/projector_config.proto)."""

from __future__ import annotations

from typing import Any

from tallyboard.records.protobuild import build

_m = build(
    "tensorboard",  # the package of the original messages, so text format and type names match
    {
        "SpriteMetadata": [
            ("image_path", 1, "string"),
            ("single_image_dim", 2, "uint32", "repeated"),
        ],
        "EmbeddingInfo": [
            ("tensor_name", 1, "string"),
            ("metadata_path", 2, "string"),
            ("bookmarks_path", 3, "string"),
            ("tensor_shape", 4, "uint32", "repeated"),
            ("sprite", 5, "SpriteMetadata"),
            ("tensor_path", 6, "string"),
        ],
        "ProjectorConfig": [
            ("model_checkpoint_path", 1, "string"),
            ("embeddings", 2, "EmbeddingInfo", "repeated"),
            ("model_checkpoint_dir", 3, "string"),
        ],
    },
)

ProjectorConfig: Any = _m["ProjectorConfig"]
EmbeddingInfo: Any = _m["EmbeddingInfo"]
SpriteMetadata: Any = _m["SpriteMetadata"]
