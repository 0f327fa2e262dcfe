"""The audio kind's row in ``tallyboard.read``'s table (``Kind.to_row``), from either payload."""

from __future__ import annotations

from typing import Any

from .codec import encode_wav
from .encoded import WAV, EncodedAudio


def to_row(payload: Any) -> dict[str, Any]:
    """An audio payload as a row of ``tallyboard.read``'s table: ``sample_rate``,
    ``num_channels``, ``length`` (frames), ``content_type``, ``data`` (the encoded bytes),
    ``label`` and ``sample``, and ``path`` for a clip read from a side file. Samples
    (:class:`~tallyboard_audio.convert.AudioPayload`) are encoded as the sinks encode them."""
    if not isinstance(payload, EncodedAudio):
        data = encode_wav(payload)
        payload = EncodedAudio(
            data, WAV, float(payload.sample_rate), payload.num_channels, payload.length_frames
        )
    row = {
        "sample_rate": payload.sample_rate,
        "num_channels": payload.num_channels,
        "length": payload.length,
        "content_type": payload.content_type,
        "data": payload.data,
        "label": payload.label,
        "sample": payload.sample,
    }
    if payload.path is not None:
        row["path"] = payload.path
    return row
