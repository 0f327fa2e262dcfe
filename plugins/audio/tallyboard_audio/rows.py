"""``Kind.from_row`` of the audio kind: a decoded audio row back to 16-bit PCM samples."""

from __future__ import annotations

import io
import wave
from typing import Any

import numpy as np

from .convert import AudioPayload


def from_row(row: dict[str, Any]) -> tuple[str, AudioPayload]:
    """The samples of an audio row's 16-bit PCM WAV ``data`` at the row's sample rate, so
    encoding the payload gives the same WAV back.

    Raises ``ValueError`` for other content (not a WAV, or not 16-bit PCM).
    """
    tag, data = row["tag"], row["data"]
    where = f"audio {tag!r} at step {row.get('step')}"
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            width, channels = wav.getsampwidth(), wav.getnchannels()
            rate = wav.getframerate()
            frames = wav.readframes(wav.getnframes())
    except (wave.Error, EOFError) as exc:
        raise ValueError(
            f"{where}: only WAV audio can be rebuilt, got {row.get('content_type')!r} ({exc})"
        ) from None
    if width != 2:
        raise ValueError(f"{where}: only 16-bit PCM WAV can be rebuilt, got {8 * width}-bit")
    samples = np.frombuffer(frames, dtype="<i2").reshape(-1, channels).copy()
    sample_rate = float(row.get("sample_rate") or rate)
    return tag, AudioPayload(samples, sample_rate)
