"""16-bit PCM WAV encoding with the standard library (44-byte header, interleaved channels)."""

from __future__ import annotations

import io
import wave

from .convert import AudioPayload
from .encoded import WAV, EncodedAudio


def encode_wav(payload: AudioPayload | EncodedAudio) -> bytes:
    """The payload as a WAV file: 44 header bytes + 2 bytes per sample per channel. A WAV read
    back (:class:`~tallyboard_audio.encoded.EncodedAudio` of ``audio/wav``) is its own bytes."""
    if isinstance(payload, EncodedAudio) and payload.content_type == WAV:
        return payload.data
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(payload.num_channels)
        wav.setsampwidth(2)
        wav.setframerate(int(round(payload.sample_rate)))
        wav.writeframes(payload.samples.tobytes())
    return out.getvalue()
