"""Prompt rendering, verdict parsing, the engine and the backends."""
