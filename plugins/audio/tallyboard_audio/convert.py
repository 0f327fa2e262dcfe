"""Turning user sound arrays into format-neutral 16-bit PCM payloads, in the caller."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from tallyboard.values import to_array
from tallyboard.warn import warn

DEFAULT_SAMPLE_RATE = 44100
_INT16_MAX = np.iinfo(np.int16).max  # 32767: torch scales by this and truncates
#: A WAV header stores the rate and the byte rate (rate x channels x 2 bytes) as uint32.
MAX_SAMPLE_RATE = (2**32 - 1) // 4


@dataclass(frozen=True, eq=False)
class AudioPayload:
    """Sound as ``int16`` PCM samples of shape (frames, channels) plus the sample rate in Hz."""

    samples: np.ndarray
    sample_rate: float

    @property
    def nbytes(self) -> int:
        """Memory held by the samples."""
        return int(self.samples.nbytes)

    @property
    def num_channels(self) -> int:
        """1 (mono) or 2 (stereo)."""
        return int(self.samples.shape[1])

    @property
    def length_frames(self) -> int:
        """Samples per channel."""
        return int(self.samples.shape[0])


def check_sample_rate(sample_rate: Any, arg: str = "sample_rate") -> float:
    """A sample rate from 1 Hz to :data:`MAX_SAMPLE_RATE` (what a WAV header can hold)."""
    if isinstance(sample_rate, bool) or not isinstance(
        sample_rate, (int, float, np.integer, np.floating)
    ):
        raise TypeError(
            f"{arg} must be a number of Hz, got {type(sample_rate).__name__}: {sample_rate!r}"
        )
    value = float(sample_rate)
    if not math.isfinite(value) or value < 1 or round(value) > MAX_SAMPLE_RATE:
        raise ValueError(
            f"{arg} must be a finite number >= 1 and <= {MAX_SAMPLE_RATE} Hz (a WAV header's "
            f"limit), got {sample_rate!r}"
        )
    return value


def to_pcm16(value: Any, arg: str = "snd_tensor") -> np.ndarray:
    """Amplitudes in [-1, 1] as ``int16`` (frames, channels): (L,) and (1, L) mono, (L, 2) stereo.

    Values beyond [-1, 1] are clipped with a warning; NaN becomes 0; samples are
    ``trunc(x * 32767)`` as torch computes them.
    """
    arr = to_array(value, arg)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{arg} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim == 2 and arr.shape[1] == 2 and arr.shape[0] != 1:
        pass  # stereo (L, 2)
    else:
        squeezed = np.atleast_1d(arr.squeeze())
        if squeezed.ndim != 1:
            hint = ""
            if arr.ndim == 2 and arr.shape[0] == 2:
                hint = f": for stereo with channels first, (2, L), pass {arg}.T"
            raise ValueError(
                f"{arg} must have shape (L,) or (1, L) for mono or (L, 2) for stereo, got "
                f"{tuple(arr.shape)}{hint}"
            )
        arr = squeezed[:, None]
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    elif arr.dtype == np.float16:
        arr = arr.astype(np.float32)  # float16 cannot hold 32767: 1.0 would wrap to -32768
    if np.isnan(arr).any():
        arr = np.nan_to_num(arr, nan=0.0, posinf=np.inf, neginf=-np.inf)
    if np.abs(arr).max() > 1:
        warn(f"{arg}: audio amplitude out of range, auto clipped.", UserWarning)
        arr = arr.clip(-1, 1)
    return np.ascontiguousarray((arr * _INT16_MAX).astype("<i2"))


def check_payload(payload: AudioPayload, arg: str = "value") -> None:
    """An AudioPayload built by hand holds what ``to_pcm16`` and ``check_sample_rate`` give."""
    samples = payload.samples
    if not isinstance(samples, np.ndarray) or samples.dtype != np.dtype("<i2"):
        raise TypeError(f"{arg}.samples must be an int16 NumPy array")
    if samples.ndim != 2 or samples.shape[1] not in (1, 2) or samples.shape[0] == 0:
        raise ValueError(
            f"{arg}.samples must have shape (frames, 1 or 2), got {tuple(samples.shape)}"
        )
    check_sample_rate(payload.sample_rate, f"{arg}.sample_rate")


def convert(value: Any) -> Any:
    """``add_value("audio", tag, value)``: an AudioPayload, a clip read back
    (:class:`~tallyboard_audio.encoded.EncodedAudio`, as it is), or samples at 44.1 kHz."""
    from .encoded import EncodedAudio

    if isinstance(value, EncodedAudio):
        return value
    if isinstance(value, AudioPayload):
        check_payload(value)
        return value
    return AudioPayload(to_pcm16(value, "value"), float(DEFAULT_SAMPLE_RATE))
