"""Audio as a file holds it: an encoded clip (a WAV from every known writer) and the facts
stored beside it, written back as it is, never re-encoded.

A reader's clip becomes an :class:`EncodedAudio`, the audio kind's payload read back: the
TensorBoard encoder writes its bytes as they are, and encoders that need samples (a 16-bit PCM
WAV, as :class:`~tallyboard_audio.convert.AudioPayload` holds them) read
:attr:`EncodedAudio.samples`, decoded on first use. Importing this module is cheap.
"""

from __future__ import annotations

import functools
import io
import wave
from dataclasses import dataclass
from typing import Any

WAV = "audio/wav"


@dataclass(frozen=True, eq=False)
class EncodedAudio:
    """One encoded clip with the header TensorBoard stores beside it.

    ``data`` holds the clip's bytes as the file held them; ``content_type`` says what they are
    (``audio/wav``; ``""`` when the file did not say and they are no WAV); ``sample_rate``
    (Hz), ``num_channels`` and ``length`` (frames per channel) are the file's, 0 when it gave
    none; ``label`` and ``sample`` are the clip's label and place in its summary (TF2 writes
    several clips, each with a label, in one value); ``path`` is the side file a format kept
    the clip in (JSONL), None when the clip was inside the file.
    """

    data: bytes
    content_type: str
    sample_rate: float
    num_channels: int
    length: int
    label: str = ""
    sample: int = 0
    path: str | None = None

    @property
    def nbytes(self) -> int:
        """Memory held by the encoded bytes (the writer's queue accounting reads this)."""
        return len(self.data)

    @property
    def length_frames(self) -> int:
        """Frames per channel, as :class:`~tallyboard_audio.convert.AudioPayload` names them."""
        return self.length

    @functools.cached_property
    def samples(self) -> Any:
        """The clip as ``int16`` samples of shape (frames, channels), decoded on first use,
        for encoders that write samples.

        Raises:
            ValueError: the clip is no 16-bit PCM WAV.
        """
        import numpy as np

        try:
            with wave.open(io.BytesIO(self.data), "rb") as wav:
                width, channels = wav.getsampwidth(), wav.getnchannels()
                frames = wav.readframes(wav.getnframes())
        except (wave.Error, EOFError) as exc:
            raise ValueError(
                f"only WAV audio has samples, got {self.content_type or 'unknown'!r} ({exc})"
            ) from None
        if width != 2:
            raise ValueError(f"only 16-bit PCM WAV has samples, got {8 * width}-bit")
        samples = np.frombuffer(frames, dtype="<i2").reshape(-1, channels).copy()
        samples.flags.writeable = False
        return samples


def wav_facts(data: bytes) -> tuple[float, int, int] | None:
    """Sample rate, channels and frames of a WAV; None for other data."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            return float(wav.getframerate()), wav.getnchannels(), wav.getnframes()
    except (wave.Error, EOFError):  # a WAV the wave module does not read (float samples, ...)
        return None


def from_bytes(data: bytes, label: str = "", sample: int = 0) -> EncodedAudio:
    """A clip stored without its header (TF2's string tensor): the facts told by the WAV
    header, 0 and content type ``""`` when the clip is no WAV."""
    facts = wav_facts(data)
    rate, channels, frames = facts or (0.0, 0, 0)
    return EncodedAudio(data, WAV if facts else "", rate, channels, frames, label, sample)
