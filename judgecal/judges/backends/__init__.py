"""Backends, one module each; see :mod:`judgecal.judges.registry`."""
