"""Keras 3 callback."""
