"""Per-model prices (USD per million tokens), from the defaults or ``<workspace>/prices.yaml``.

``prices.yaml`` maps ``<backend>/<model>`` (glob patterns allowed) to ``{input: X, output: Y}``.
Local backends cost nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from judgecal.data.yamlfile import ConfigError, load_yaml


def _price(entry: object, path: Path, key: object, side: str) -> float:
    """One price (USD per million tokens): a finite number, 0 or more."""
    v = entry.get(side) if isinstance(entry, dict) else None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not 0 <= v <= 1e6:
        raise ConfigError(f"{path}: {key}.{side}: must be a price in USD per million tokens from 0 to 1e6, got {v!r}")
    return float(v)

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "openai/gpt-4o-mini*": (0.15, 0.60),
    "openai/gpt-4o*": (2.50, 10.00),
    "openai/gpt-4.1-mini*": (0.40, 1.60),
    "openai/gpt-4.1*": (2.00, 8.00),
    "anthropic/claude-3-5-haiku*": (0.80, 4.00),
    "anthropic/claude-haiku-4*": (1.00, 5.00),
    "anthropic/claude-sonnet-4*": (3.00, 15.00),
    "anthropic/claude-3-5-sonnet*": (3.00, 15.00),
    "local/*": (0.0, 0.0),
    "hf/*": (0.0, 0.0),
    "vllm/*": (0.0, 0.0),
}


@dataclass
class Prices:
    table: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def cost(self, backend: str, model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one call, or ``None`` when the model has no known price or tokens are unknown."""
        name = f"{backend}/{model}"
        for pattern, (inp, out) in self.table.items():
            if fnmatch(name, pattern):
                if prompt_tokens is None and completion_tokens is None:
                    return None
                return ((prompt_tokens or 0) * inp + (completion_tokens or 0) * out) / 1e6
        return None


def load_prices(workspace: Path | None = None) -> Prices:
    prices = Prices()
    if workspace is not None and (workspace / "prices.yaml").exists():
        path = workspace / "prices.yaml"
        data = load_yaml(path) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of <backend>/<model> patterns to {{input: X, output: Y}}")
        custom = {str(k): (_price(v, path, k, "input"), _price(v, path, k, "output")) for k, v in data.items()}
        prices.table = {**custom, **prices.table}
    return prices
