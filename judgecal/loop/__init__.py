"""Closing the loop: compare and gate judge versions, panels, alignment from human labels, cascades."""


from judgecal.errors import InputError


class LoopError(InputError):
    """A comparison, panel, alignment or cascade that cannot run on this input (a usage error)."""


def inert(text: object) -> str:
    """A name from a file or a model made inert for a terminal: control and escape characters shown as
    their escapes (``\\x1b``), never sent."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def finite(obj: object) -> object:
    """``obj`` with every non-finite float (NaN, inf) as ``None``, numpy scalars as Python ones: JSON-ready."""
    import math

    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, str | bytes):
        obj = obj.item()  # type: ignore[attr-defined]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
