"""The ``mesh`` kind: ``add_mesh`` and ``add_value("mesh", ...)`` (point clouds and triangle meshes).

The payload is a :class:`~tallyboard_mesh.methods.Mesh` of float32 [B, N, 3] arrays plus the JSON
three.js configuration.
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl


def _read_table(rows: list[dict[str, Any]], batches: Any) -> list[dict[str, Any]]:
    """``tallyboard.read(kind="mesh")``: one row per mesh and step (numpy imported only here)."""
    from .tfevents import read_table

    return read_table(rows, batches)


def _from_row(row: dict[str, Any]) -> tuple[str, Any]:
    """A decoded component row as the :class:`~tallyboard_mesh.methods.MeshPart` it was."""
    import json

    from .methods import MeshPart

    config = row.get("config")
    components = tuple(row.get("components") or (row["component"],))
    json_config = "" if config is None else json.dumps(config)
    return row["name"], MeshPart(row["component"], row["value"], json_config, components)


@hookimpl
def register_kinds(register: Any) -> None:
    from .methods import add_mesh, convert

    register(
        Kind(
            name="mesh",
            convert=convert,
            methods={"add_mesh": add_mesh},
            heavy=True,
            read_table=_read_table,
            from_row=_from_row,
            description="3-D point clouds and meshes",
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    from .tfevents import encode

    register("mesh", "tfevents", encode)


@hookimpl
def register_decoders(register: Any) -> None:
    from .tfevents import decode

    register("tfevents", "mesh", decode)
