"""One figure of the audit: an estimate with its interval, sample size, null value and test.

``p`` tests ``estimate = null_value`` (two-sided); ``q`` is its Benjamini-Hochberg value across every
tested metric of the report; ``mde`` the smallest effect the test detects with 80% power at this
sample size. A descriptive metric has no null value and ``p = q = mde = None``. Undefined values
(NaN) are ``None``. ``extra`` holds a metric's own fields (e.g. the mutation a worst-case rate is of).

Serialised as the metric objects of ``audit.json`` (schema ``judgecal.audit/2``, :class:`judgecal.audit.schema.Figure`):
``{"estimate", "ci_low", "ci_high", "n", **extra, "null_value", "p", "q", "mde"}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

_CORE = ("estimate", "ci_low", "ci_high", "n", "null_value", "p", "q", "mde")


def clean(v: Any) -> float | None:
    """A finite float, or ``None`` for missing and undefined values."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


@dataclass(frozen=True)
class Metric:
    estimate: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    null_value: float | None = None
    p: float | None = None
    q: float | None = None
    mde: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("estimate", "ci_low", "ci_high", "null_value", "p", "q", "mde"):
            object.__setattr__(self, name, clean(getattr(self, name)))
        object.__setattr__(self, "n", int(self.n))

    @classmethod
    def of(cls, d: dict[str, Any], **kw: Any) -> Metric:
        """From a probe's ``{estimate, ci_low, ci_high, n, ...}`` dict; other keys go to ``extra``."""
        core = {k: d.get(k) for k in ("estimate", "ci_low", "ci_high")}
        extra = {k: v for k, v in d.items() if k not in _CORE}
        return cls(**core, n=int(d.get("n") or 0), extra={**extra, **kw.pop("extra", {})}, **kw)

    def tested(self, p: float | None, null_value: float, mde: float | None = None) -> Metric:
        return replace(self, p=p, null_value=null_value, mde=mde)

    @property
    def is_tested(self) -> bool:
        return self.p is not None

    def to_json(self) -> dict[str, Any]:
        extra = {k: clean(v) if isinstance(v, float) else v for k, v in self.extra.items()}
        return {"estimate": self.estimate, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n,
                **extra, "null_value": self.null_value, "p": self.p, "q": self.q, "mde": self.mde}
