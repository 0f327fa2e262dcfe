"""Meshes as TensorBoard's mesh plugin reads them: one DT_FLOAT tensor per component."""

from __future__ import annotations

from typing import Any

import numpy as np
from plugboard.protobuild import build
from plugboard_tfevents.encoding import summary_event
from plugboard_tfevents.proto import DT_FLOAT, SummaryValue, TensorProto, metadata, shape

from .methods import Mesh

VERTEX, FACE, COLOR = 1, 2, 3
_NAMES = {VERTEX: "VERTEX", FACE: "FACE", COLOR: "COLOR"}

MeshPluginData: Any = build(
    "plugboard.mesh",
    {
        "MeshPluginData": [
            ("version", 1, "int32"),
            ("name", 2, "string"),
            ("content_type", 3, "int32"),
            ("json_config", 5, "string"),
            ("shape", 6, "int32", "repeated"),
            ("components", 7, "uint32"),
        ]
    },
)["MeshPluginData"]


def encode(tag: str, step: int | None, wall_time: float, mesh: Mesh) -> bytes:
    """One ``Event`` with up to three values, in torch's order: vertices, faces, colours."""
    parts = [
        (a, kind)
        for a, kind in ((mesh.vertices, VERTEX), (mesh.faces, FACE), (mesh.colors, COLOR))
        if a is not None
    ]
    components = 0
    for _, kind in parts:
        components |= 1 << kind
    values = []
    for arr, kind in parts:
        content = MeshPluginData(
            version=0,
            name=tag,
            content_type=kind,
            json_config=mesh.json_config,
            shape=list(arr.shape),
            components=components,
        ).SerializeToString()
        data = np.ascontiguousarray(arr, dtype="<f4")
        tensor = TensorProto(
            dtype=DT_FLOAT, tensor_shape=shape(arr.shape), tensor_content=data.tobytes()
        )
        values.append(
            SummaryValue(
                tag=f"{tag}_{_NAMES[kind]}", metadata=metadata("mesh", content), tensor=tensor
            )
        )
    return summary_event(step, wall_time, values)
