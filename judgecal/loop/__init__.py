"""Closing the loop: compare and gate judge versions, panels, alignment from human labels, cascades."""


class LoopError(ValueError):
    """A comparison, panel, alignment or cascade that cannot run on this input (a usage error)."""


def inert(text: object) -> str:
    """A name from a file or a model made inert for a terminal: control and escape characters shown as
    their escapes (``\\x1b``), never sent."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
