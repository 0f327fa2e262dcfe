"""torch's ``add_mesh`` on the writer, with the arrays checked before anything is written."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from tallyboard.values import check_text, to_array


@dataclass(frozen=True, eq=False)
class Mesh:
    """Vertices, optional faces (vertex indices) and colours, each float32 [B, N, 3]."""

    vertices: np.ndarray
    faces: np.ndarray | None = None
    colors: np.ndarray | None = None
    json_config: str = "{}"

    @property
    def nbytes(self) -> int:
        """Payload size (for queue accounting)."""
        return sum(a.nbytes for a in (self.vertices, self.faces, self.colors) if a is not None)


#: A mesh's components, in the order torch writes them.
COMPONENT_NAMES = ("vertices", "faces", "colors")


@dataclass(frozen=True, eq=False)
class MeshPart:
    """One component of a logged mesh as a reader gives it back, so it can be written again
    (``tallyboard convert``, ``tallyboard board``): which component, its [B, N, 3] values, the
    mesh's three.js JSON and the components the whole mesh has (TensorBoard finds a mesh's
    other parts through them)."""

    component: str
    value: np.ndarray
    json_config: str
    components: tuple[str, ...]

    @property
    def nbytes(self) -> int:
        """Payload size (for queue accounting)."""
        return int(self.value.nbytes)


def _part(value: MeshPart) -> MeshPart:
    """A :class:`MeshPart` checked: known components, [B, N, 3] numbers, a JSON string."""
    names = tuple(value.components)
    if value.component not in COMPONENT_NAMES or not set(names) <= set(COMPONENT_NAMES):
        raise ValueError(
            f"a mesh part names components of {COMPONENT_NAMES}, got {value.component!r} "
            f"of {names!r}"
        )
    if value.component not in names:
        raise ValueError(f"a mesh part's components {names!r} must hold {value.component!r}")
    if not isinstance(value.json_config, str):
        raise TypeError(f"json_config must be a str, got {type(value.json_config).__name__}")
    return MeshPart(value.component, _component(value.value, "value"), value.json_config, names)


def _component(value: Any, arg: str) -> np.ndarray:
    arr = to_array(value, arg)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{arg} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 3 or arr.shape[2] != 3:
        hint = ""
        if arr.ndim == 2 and arr.shape[1] == 3:
            hint = f": for one mesh (N, 3) add the batch axis, {arg}[None]"
        elif arr.ndim == 3 and arr.shape[1] == 3:
            hint = (
                f": it looks like [B, 3, N], one point per column; pass "
                f"np.transpose({arg}, (0, 2, 1)) (a torch tensor: {arg}.permute(0, 2, 1))"
            )
        raise ValueError(f"{arg} must have shape [B, N, 3], got {tuple(arr.shape)}{hint}")
    return arr.astype(np.float32)


def make_mesh(
    vertices: Any, colors: Any = None, faces: Any = None, config_dict: Any = None
) -> Mesh:
    """Validate torch's ``add_mesh`` arguments into a :class:`Mesh`."""
    if vertices is None:
        raise TypeError("vertices is required (a [B, N, 3] array)")
    v = _component(vertices, "vertices")
    c = None if colors is None else _component(colors, "colors")
    f = None if faces is None else _component(faces, "faces")
    if c is not None and c.shape[:2] != v.shape[:2]:
        raise ValueError(
            f"colors must have one colour per vertex: shape {c.shape} for vertices {v.shape}"
        )
    if c is not None and not (np.all(c >= 0) and np.all(c <= 255)):
        raise ValueError("colors must be in 0..255")
    if f is not None:
        if f.shape[0] != v.shape[0]:
            raise ValueError(
                f"faces must have the batch size of vertices: {f.shape[0]} != {v.shape[0]}"
            )
        if not (np.all(f == np.floor(f)) and np.all(f >= 0) and np.all(f < v.shape[1])):
            raise ValueError(f"faces must hold integer vertex indices in [0, {v.shape[1]})")
    if config_dict is None:
        config = "{}"
    elif isinstance(config_dict, Mapping):
        try:
            config = json.dumps(config_dict, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"config_dict must be JSON-serializable: {exc}") from None
    else:
        raise TypeError(f"config_dict must be a dict or None, got {type(config_dict).__name__}")
    return Mesh(v, f, c, config)


def add_mesh(
    writer: Any,
    tag: str,
    vertices: Any,
    colors: Any = None,
    faces: Any = None,
    config_dict: Any = None,
    global_step: Any = None,
    walltime: Any = None,
) -> None:
    """Log a 3D point cloud or triangle mesh, shown in the MESH tab (rotatable).

    Written as torch writes it: up to three tensors, tagged ``<tag>_VERTEX``, ``<tag>_FACE`` and
    ``<tag>_COLOR``, each ``[B, N, 3]`` float32 (a batch of B meshes of N vertices) with the
    mesh plugin's metadata. Without ``faces`` the vertices are drawn as points.

    Args:
        tag: The mesh's name, a str.
        vertices: ``[B, N, 3]`` real numbers: the x, y, z of N vertices for each of B meshes.
        colors: ``[B, N, 3]`` RGB in 0..255, one per vertex. Default ``None`` (the tab's own
            colour).
        faces: ``[B, F, 3]`` vertex indices (whole numbers in ``[0, N)``), three per triangle.
            Default ``None`` (a point cloud).
        config_dict: The three.js settings the tab passes on (camera, lights, material), a
            JSON-serializable dict. Default ``None`` (``{}``).
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: An array is not real numbers (a str ``vertices`` beside a non-str ``tag``:
            the message says they look swapped); ``config_dict`` is not a JSON-serializable
            dict.
        ValueError: An array is not ``[B, N, 3]`` (for ``(N, 3)`` the message suggests
            ``vertices[None]``, for ``[B, 3, N]`` the transpose); ``colors`` not one per vertex
            or outside 0..255; ``faces`` of another batch size or not vertex indices.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> vertices = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]], dtype=float)
        >>> faces = np.array([[[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]]])
        >>> colors = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0]]])
        >>> with SummaryWriter("runs/mesh") as writer:
        ...     writer.add_mesh("tetrahedron", vertices, colors=colors, faces=faces)
    """
    try:
        mesh = make_mesh(vertices, colors, faces, config_dict)
    except TypeError:
        from tallyboard.values import raise_if_swapped

        raise_if_swapped("add_mesh", tag, vertices, "vertices")
        raise
    writer.emit("mesh", tag, mesh, global_step, walltime)


def convert(value: Any) -> Mesh | MeshPart:
    """``add_value('mesh', tag, value)``: a Mesh, a vertices array, or a dict of add_mesh's
    arguments (or one :class:`MeshPart` read back)."""
    if isinstance(value, MeshPart):
        return _part(value)
    if isinstance(value, Mesh):  # built by hand: checked as add_mesh checks its arguments
        if not isinstance(value.json_config, str):
            raise TypeError(
                f"value.json_config must be a str, got {type(value.json_config).__name__}"
            )
        try:
            config = json.loads(check_text(value.json_config, "value.json_config"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"value.json_config is not JSON: {exc}") from None
        if not isinstance(config, dict):
            raise ValueError("value.json_config must be a JSON object")
        return make_mesh(value.vertices, value.colors, value.faces, config)
    if isinstance(value, Mapping):
        unknown = set(value) - {"vertices", "colors", "faces", "config_dict"}
        if unknown:
            raise ValueError(f"unknown mesh keys {sorted(unknown)}")
        return make_mesh(**value)
    return make_mesh(value)
