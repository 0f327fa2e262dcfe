"""What the mlflow sink sends for each kind: one queued item per value, ``(what, *fields)``."""

from __future__ import annotations

import re
from typing import Any

_BAD_KEY = re.compile(r"[^\w\-. /:]")


def metric_key(tag: str) -> str:
    """``tag`` as an MLflow metric/param key: characters MLflow refuses become ``_``."""
    return _BAD_KEY.sub("_", tag) or "_"


def artifact_path(folder: str, tag: str, step: int | None, wall_time: float, suffix: str) -> str:
    """``<folder>/<tag>/step_<step><suffix>`` with the tag made safe (no ``..``, no odd chars)."""
    parts = [metric_key(p).replace(":", "_") for p in tag.split("/") if p not in ("", ".", "..")]
    name = f"step_{step:08d}" if step is not None else f"time_{int(wall_time * 1000)}"
    return "/".join([folder, *parts, name + suffix])


def encode_scalar(tag: str, step: int | None, wall_time: float, value: Any) -> tuple[Any, ...]:
    if type(value) is not float:
        value = float(getattr(value, "value", value))
    return ("metric", metric_key(tag), value, int(wall_time * 1000), step or 0)


def encode_hparams(tag: str, step: int | None, wall_time: float, summary: Any) -> tuple[Any, ...]:
    """Params as MLflow logs them: ``str()`` of the value given (``"3"`` for the int 3)."""
    if summary.part != "session_start_info":  # metric values arrive as scalars of their own
        return ("none",)
    texts = getattr(summary, "texts", None) or {}
    return ("params", {metric_key(k): texts.get(k, str(v)) for k, v in summary.hparams.items()})


def encode_text(tag: str, step: int | None, wall_time: float, text: Any) -> tuple[Any, ...]:
    if not isinstance(text, str):  # a table: its rows, cells separated by tabs
        rows = text.reshape(len(text), -1) if text.ndim else text.reshape(1, 1)
        text = "\n".join("\t".join(row) for row in rows.tolist())
    return ("file", artifact_path("text", tag, step, wall_time, ".txt"), text.encode())


def encode_image(tag: str, step: int | None, wall_time: float, payload: Any) -> tuple[Any, ...]:
    from tallyboard_image.codec import encode

    img = encode(payload)
    suffix = ".gif" if img.content_type == "image/gif" else ".png"
    return ("file", artifact_path("images", tag, step, wall_time, suffix), img.data)


def encode_audio(tag: str, step: int | None, wall_time: float, payload: Any) -> tuple[Any, ...]:
    from tallyboard_audio.codec import encode_wav

    return ("file", artifact_path("audio", tag, step, wall_time, ".wav"), encode_wav(payload))


ENCODERS = {
    "scalar": encode_scalar,
    "hparams": encode_hparams,
    "text": encode_text,
    "image": encode_image,
    "audio": encode_audio,
}
