"""Is the judge stable: fingerprints, stability runs over axes, the Stability Score, the guard, adaptive repeats, deterministic mode."""
