"""System metrics."""
