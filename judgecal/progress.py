"""One progress bar for the long steps: judging, imports, audits and pulls.

A bar is drawn on stderr, and only while stderr is a terminal: never into a pipe or a log file, never into
the JSON a ``--json`` command prints on stdout, never with ``--quiet`` (``enabled=False``). Labels are names
from files and models: shown inert (:func:`judgecal.inert.term`) and never read as rich markup.

Library code takes plain callbacks and never imports rich: ``advance(n)`` (``n`` more done) or
``report(done, total, label)`` (``done`` of ``total`` in the step ``label``); a :class:`Bar` is both.
"""

from __future__ import annotations

import time
from typing import Any

from judgecal.inert import term


class Bar:
    """A rich progress bar with rate and time left, or nothing at all when it is not shown.

    ``with Bar(label, total) as bar: bar()`` advances by one, ``bar(n)`` by ``n``, ``bar.report(done,
    total, label)`` sets where a step is. ``unit`` names what is counted (``calls``: a rate of calls/s).
    ``console`` is for tests (e.g. ``Console(file=..., force_terminal=True)``); by default stderr's.
    """

    def __init__(self, label: str, total: int | None = None, *, enabled: bool = True, unit: str = "",
                 console: Any = None, transient: bool = True) -> None:
        self.label, self.total, self.unit, self.transient = label, total, unit, transient
        self.done = 0
        self._bar: Any = None
        if console is None and enabled:
            from rich.console import Console

            console = Console(stderr=True)
        self.console = console
        self.shown = bool(enabled and total != 0 and console is not None and console.is_terminal)

    def __enter__(self) -> Bar:
        if not self.shown:
            return self
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(TextColumn("{task.fields[label]}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                             TaskProgressColumn(), TextColumn("{task.fields[rate]}", markup=False),
                             TimeElapsedColumn(), TimeRemainingColumn(), console=self.console,
                             transient=self.transient, redirect_stdout=False, redirect_stderr=False)
        self._bar.start()
        self._text = term(self.label)
        self._task = self._bar.add_task("", total=self.total, label=self._text, rate="")
        self._t0 = time.perf_counter()
        return self

    def __call__(self, n: int = 1) -> None:
        """``n`` more done."""
        self.report(self.done + n)

    def report(self, done: int, total: int | None = None, label: str | None = None) -> None:
        """``done`` of ``total`` (unchanged when ``None``), in the step ``label`` (shown after the bar's own)."""
        back, self.done = done < self.done, done
        if total is not None:
            self.total = total
        if self._bar is None:
            return
        new_step = label is not None and term(f"{self.label}: {label}") != self._text
        if label is not None:
            self._text = term(f"{self.label}: {label}")
        fields: dict[str, Any] = {"label": self._text}
        if back:  # counting again from the start (checking, then writing): a rate and time left of its own
            self._t0 = time.perf_counter()
            self._bar.reset(self._task, total=self.total, completed=done, label=self._text, rate="")
        if self.unit:
            fields["rate"] = f"{done / max(1e-9, time.perf_counter() - self._t0):6.1f} {self.unit}/s"
        self._bar.update(self._task, completed=done, total=self.total, refresh=new_step, **fields)  # a step shows

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
