"""Shared statistics: pure, vectorised functions of arrays (the bottom of the package graph).

Nothing here imports from the rest of judgecal; everything above may import from here.
"""
