"""Keras 3: a TensorBoard callback that writes through tallyboard on every backend.

``tallyboard_keras.TensorBoard(log_dir)`` is a drop-in for ``keras.callbacks.TensorBoard`` that
needs no TensorFlow (Keras' own needs it even on the torch and JAX backends). Keras is imported
when ``TensorBoard`` is first used, so set ``KERAS_BACKEND`` before that, as for Keras itself.
The plugin also registers the ``keras_model`` kind (``writer.add_keras_model(tag, model)``):
a model's JSON config, which TensorBoard's GRAPHS tab draws as a conceptual graph.
Needs ``pip install tallyboard[keras]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tallyboard import Kind, hookimpl

if TYPE_CHECKING:
    from .callback import TensorBoard

__all__ = ["TensorBoard"]


def __getattr__(name: str) -> Any:
    if name == "TensorBoard":
        from .callback import TensorBoard

        return TensorBoard
    raise AttributeError(f"module 'tallyboard_keras' has no attribute {name!r}")


@hookimpl
def register_kinds(register: Any) -> None:
    from .model_graph import add_keras_model, convert, from_row, to_row

    register(
        Kind(
            name="keras_model",
            convert=convert,
            methods={"add_keras_model": add_keras_model},
            description="a Keras model config (TensorBoard conceptual graph)",
            from_row=from_row,
            payload=str,  # the JSON text convert returns
            to_row=to_row,
        )
    )


@hookimpl
def register_encoders(register: Any) -> None:
    from .model_graph import encode_tfevents

    register("keras_model", "tfevents", encode_tfevents)


@hookimpl
def register_decoders(register: Any) -> None:
    from .model_graph import decode_tfevents

    register("tfevents", "keras_model", decode_tfevents)
