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
    """Log a sound clip, played in the AUDIO tab: 16-bit PCM WAV.

    Amplitudes are in [-1, 1]; louder samples are clipped with a warning (torch prints one), NaN
    becomes silence, and samples become ``int16(x * 32767)`` truncated, as torch computes them.
    Unlike torch, which takes mono only, ``(L, 2)`` is stereo.

    Args:
        tag: The clip's name, a str.
        snd_tensor: Real numbers of shape ``(L,)`` or ``(1, L)`` (mono) or ``(L, 2)`` (stereo),
            L samples per channel.
        global_step: The step: an int within int64. Default ``None`` writes no step (read as 0).
        sample_rate: Samples per second, a finite number from 1 to 1073741823 (what a WAV header
            holds). Default ``44100``.
        walltime: Seconds since the epoch, a finite number. Default ``None``: ``time.time()``.

    Raises:
        TypeError: ``snd_tensor`` is not real numbers (a str where ``tag`` is not: the message
            says they look swapped); ``sample_rate`` is not a number.
        ValueError: Another shape (for a ``(2, L)`` stereo clip the message suggests
            ``snd_tensor.T``); ``sample_rate`` out of range.

    Example:
        >>> import numpy as np
        >>> from tallyboard import SummaryWriter
        >>> t = np.arange(16000) / 16000
        >>> a440 = 0.5 * np.sin(2 * np.pi * 440 * t)  # one second of A, 16 kHz
        >>> with SummaryWriter("runs/audio") as writer:
        ...     writer.add_audio("a440", a440, 0, sample_rate=16000)
    """
    from tallyboard.values import defer_call, on_device

    from .convert import AudioPayload, check_sample_rate, to_pcm16

    if on_device(snd_tensor):  # a jax.Array, a CUDA tensor: converted on the writer's side
        defer_call(
            writer, "audio", tag, snd_tensor, global_step, walltime,
            lambda w, host: add_audio(w, tag, host, global_step, sample_rate, walltime),
        )  # fmt: skip
        return
    try:
        samples = to_pcm16(snd_tensor)
    except TypeError:
        from tallyboard.values import raise_if_swapped

        raise_if_swapped("add_audio", tag, snd_tensor, "snd_tensor")
        raise
    payload = AudioPayload(samples, check_sample_rate(sample_rate))
    writer.emit("audio", tag, payload, global_step, walltime)


@hookimpl
def register_kinds(register: Any) -> None:
    from .convert import AudioPayload, convert
    from .encoded import EncodedAudio
    from .rows import to_row

    register(
        Kind(
            name="audio",
            convert=convert,
            methods={"add_audio": add_audio},
            description="mono or stereo sound, 16-bit PCM WAV",
            payload=(AudioPayload, EncodedAudio),
            to_row=to_row,
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    def encode_tfevents(tag: str, step: int | None, wall_time: float, payload: Any) -> bytes:
        from .tfevents import encode

        return encode(tag, step, wall_time, payload)

    register("audio", "tfevents", encode_tfevents)


def decode_tfevents(value: Any, step: int, wall_time: float) -> Any:
    """Audio clips as the kind's payloads read back, one
    :class:`~tallyboard_audio.encoded.EncodedAudio` per clip (its encoded bytes, a WAV from
    every known writer, and the facts stored beside them).

    A ``Summary.Audio`` is one clip (``sample`` 0, ``label`` ""); an ``audio``-plugin string
    tensor (TF2's ``tf.summary.audio``) is ``[k, 2]``: k encoded clips and their labels, numbered
    by ``sample``. For those, ``sample_rate``, ``num_channels`` and ``length`` (frames) come from
    the WAV header (0 when the clip is no WAV).
    """
    from .encoded import EncodedAudio, from_bytes

    if value.HasField("audio"):
        audio = value.audio
        return [
            EncodedAudio(
                bytes(audio.encoded_audio_string),
                str(audio.content_type),
                float(audio.sample_rate),
                int(audio.num_channels),
                int(audio.length_frames),
            )
        ]
    if value.metadata.plugin_data.plugin_name != "audio" or not value.HasField("tensor"):
        return None
    from tallyboard_tfevents.proto import DT_STRING
    from tallyboard_tfevents.tensors import shape_of, strings

    tensor = value.tensor
    dims = shape_of(tensor)
    if tensor.dtype != DT_STRING or len(dims) != 2 or dims[1] != 2:
        return None
    items = strings(tensor)
    return [
        from_bytes(items[2 * i], items[2 * i + 1].decode("utf-8", "replace"), i)
        for i in range(dims[0])
    ]


@hookimpl
def register_decoders(register: Any) -> None:
    register("tfevents", "audio", decode_tfevents)
