"""Meshes as TensorBoard's mesh plugin reads them: one DT_FLOAT tensor per component."""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from tallyboard.records.protobuild import build
from tallyboard_tfevents.encoding import summary_event
from tallyboard_tfevents.proto import DT_FLOAT, SummaryValue, TensorProto, metadata, shape

from .methods import Mesh, MeshPart

VERTEX, FACE, COLOR = 1, 2, 3
_NAMES = {VERTEX: "VERTEX", FACE: "FACE", COLOR: "COLOR"}

MeshPluginData: Any = build(
    "tallyboard.mesh",
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


#: content type of each component name
_KINDS = {"vertices": VERTEX, "faces": FACE, "colors": COLOR}


def encode(tag: str, step: int | None, wall_time: float, mesh: Mesh | MeshPart) -> bytes:
    """One ``Event`` with up to three values, in torch's order: vertices, faces, colours (one
    value for a :class:`MeshPart`, naming the components of its whole mesh)."""
    if isinstance(mesh, MeshPart):
        components = 0
        for name in mesh.components:
            components |= 1 << _KINDS[name]
        part = _value(tag, mesh.value, _KINDS[mesh.component], mesh.json_config, components)
        return summary_event(step, wall_time, [part])
    parts = [
        (a, kind)
        for a, kind in ((mesh.vertices, VERTEX), (mesh.faces, FACE), (mesh.colors, COLOR))
        if a is not None
    ]
    components = 0
    for _, kind in parts:
        components |= 1 << kind
    values = [_value(tag, arr, kind, mesh.json_config, components) for arr, kind in parts]
    return summary_event(step, wall_time, values)


def _value(tag: str, arr: Any, kind: int, json_config: str, components: int) -> Any:
    content = MeshPluginData(
        version=0,
        name=tag,
        content_type=kind,
        json_config=json_config,
        shape=list(arr.shape),
        components=components,
    ).SerializeToString()
    data = np.ascontiguousarray(arr, dtype="<f4")
    tensor = TensorProto(
        dtype=DT_FLOAT, tensor_shape=shape(arr.shape), tensor_content=data.tobytes()
    )
    return SummaryValue(
        tag=f"{tag}_{_NAMES[kind]}", metadata=metadata("mesh", content), tensor=tensor
    )


#: Component name in a decoded row, and the dtype TensorBoard's mesh plugin serves it in.
COMPONENTS = {VERTEX: ("vertices", "<f4"), FACE: ("faces", "<i4"), COLOR: ("colors", "u1")}


def decode(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """One component of a mesh (plugin ``mesh``): ``name`` (the mesh's tag), ``component``
    (``vertices``, ``faces`` or ``colors``), ``value`` (a numpy array in the dtype TensorBoard's
    mesh plugin serves: float32, int32, uint8), ``config`` (the three.js JSON, parsed) and
    ``components`` (the components the whole mesh has, in torch's order)."""
    import json

    if value.metadata.plugin_data.plugin_name != "mesh" or not value.HasField("tensor"):
        return None
    try:
        meta = MeshPluginData.FromString(value.metadata.plugin_data.content)
        config = json.loads(meta.json_config) if meta.json_config else None
    except (DecodeError, ValueError):  # not the mesh plugin's data: not a mesh this reads
        return None
    if meta.content_type not in COMPONENTS:
        return None
    component, dtype = COMPONENTS[meta.content_type]
    t = value.tensor
    dims = [int(d.size) for d in t.tensor_shape.dim] or list(meta.shape)
    if t.tensor_content:
        data = np.frombuffer(t.tensor_content, "<f4")
    else:  # torch and tensorboardX write the repeated float_val
        data = np.asarray(t.float_val, np.float32)
    if data.size != int(np.prod(dims)):
        return None
    return {
        "name": meta.name,
        "component": component,
        "value": data.reshape(dims).astype(dtype),
        "config": config,
        "components": tuple(n for k, (n, _) in COMPONENTS.items() if meta.components & (1 << k))
        or (component,),
    }


def read_table(rows: list[dict[str, Any]], batches: Any) -> list[dict[str, Any]]:
    """One row per mesh and step: ``run, tag, step, wall_time, vertices, faces, colors, config``
    (``tag`` is the mesh's name; a component it was logged without is None)."""
    meshes: dict[tuple[Any, str, int], dict[str, Any]] = {}
    for row in rows:
        key = (row["run"], row["name"], row["step"])
        mesh = meshes.get(key)
        if mesh is None:
            mesh = meshes[key] = {
                "run": row["run"],
                "tag": row["name"],
                "step": row["step"],
                "wall_time": row["wall_time"],
                "vertices": None,
                "faces": None,
                "colors": None,
                "config": row["config"],
            }
        mesh[row["component"]] = row["value"]
    return list(meshes.values())
