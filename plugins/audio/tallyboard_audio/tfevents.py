"""Audio as TensorBoard ``Event`` bytes: ``Summary.Value(tag, audio=Summary.Audio(...))``, no metadata."""

from __future__ import annotations

from tallyboard_tfevents.encoding import summary_event
from tallyboard_tfevents.proto import SummaryAudio, SummaryValue

from .codec import encode_wav
from .convert import AudioPayload, convert
from .encoded import EncodedAudio


def encode(
    tag: str, step: int | None, wall_time: float, payload: AudioPayload | EncodedAudio
) -> bytes:
    """One Event holding a WAV; TensorBoard's audio plugin serves it as ``audio/wav``.

    A clip read back (:class:`EncodedAudio`) is written as the file held it, bytes and header.
    A plain array payload (from a face that skips ``Kind.convert``) is read as 44.1 kHz samples.
    """
    if type(payload) is EncodedAudio:
        audio = SummaryAudio(
            sample_rate=payload.sample_rate,
            num_channels=payload.num_channels,
            length_frames=payload.length,
            encoded_audio_string=payload.data,
            content_type=payload.content_type,
        )
        return summary_event(step, wall_time, [SummaryValue(tag=tag, audio=audio)])
    if type(payload) is not AudioPayload:
        payload = convert(payload)
    audio = SummaryAudio(
        sample_rate=payload.sample_rate,
        num_channels=payload.num_channels,
        length_frames=payload.length_frames,
        encoded_audio_string=encode_wav(payload),
        content_type="audio/wav",
    )
    return summary_event(step, wall_time, [SummaryValue(tag=tag, audio=audio)])
