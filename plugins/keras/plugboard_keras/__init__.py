"""Keras 3: a TensorBoard callback that writes through plugboard on every backend.

``plugboard_keras.TensorBoard(log_dir)`` is a drop-in for ``keras.callbacks.TensorBoard`` that
needs no TensorFlow (Keras' own needs it even on the torch and JAX backends). Keras is imported
when ``TensorBoard`` is first used, so set ``KERAS_BACKEND`` before that, as for Keras itself.
Needs ``pip install plugboard[keras]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .callback import TensorBoard

__all__ = ["TensorBoard"]


def __getattr__(name: str) -> Any:
    if name == "TensorBoard":
        from .callback import TensorBoard

        return TensorBoard
    raise AttributeError(f"module 'plugboard_keras' has no attribute {name!r}")
