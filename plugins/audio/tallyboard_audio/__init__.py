"""The ``audio`` kind: ``add_audio`` and ``add_value("audio", ...)``: mono or stereo 16-bit PCM WAV.

Samples are validated, clipped and converted to ``int16`` in the caller
(:class:`tallyboard_audio.convert.AudioPayload`); sinks wrap them (TensorBoard: a WAV file).
Importing this module is cheap: NumPy loads when the registry is built.
"""

from __future__ import annotations

from typing import Any

from tallyboard import Kind, hookimpl


def add_audio(
    writer: Any,
    tag: str,
    snd_tensor: Any,
    global_step: Any = None,
    sample_rate: float = 44100,
    walltime: Any = None,
) -> None:
    """Log sound with amplitudes in [-1, 1]: (L,) or (1, L) mono, (L, 2) stereo; louder is clipped."""
    from .convert import AudioPayload, check_sample_rate, to_pcm16

    payload = AudioPayload(to_pcm16(snd_tensor), check_sample_rate(sample_rate))
    writer.emit("audio", tag, payload, global_step, walltime)


@hookimpl
def register_kinds(register: Any) -> None:
    from .convert import convert
    from .rows import from_row

    register(
        Kind(
            name="audio",
            convert=convert,
            methods={"add_audio": add_audio},
            description="mono or stereo sound, 16-bit PCM WAV",
            from_row=from_row,
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    def encode_tfevents(tag: str, step: int | None, wall_time: float, payload: Any) -> bytes:
        from .tfevents import encode

        return encode(tag, step, wall_time, payload)

    register("audio", "tfevents", encode_tfevents)


def decode_tfevents(value: Any, step: int, wall_time: float) -> dict[str, Any] | None:
    """A ``Summary.Audio`` as metadata plus its encoded bytes (a WAV from torch and tallyboard)."""
    if not value.HasField("audio"):
        return None
    audio = value.audio
    return {
        "sample_rate": float(audio.sample_rate),
        "num_channels": int(audio.num_channels),
        "length": int(audio.length_frames),
        "content_type": str(audio.content_type),
        "data": bytes(audio.encoded_audio_string),
    }


@hookimpl
def register_decoders(register: Any) -> None:
    register("tfevents", "audio", decode_tfevents)
