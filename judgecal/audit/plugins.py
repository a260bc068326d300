"""Probes from outside judgecal: the ``judgecal.probes`` entry-point group, and ``$JUDGECAL_PROBES``.

A distribution adds a probe by naming it in its ``pyproject.toml``::

    [project.entry-points."judgecal.probes"]
    my_probe = "my_package.my_module:MyProbe"

Each entry point loads a :class:`~judgecal.audit.probe.Probe` subclass (made with no arguments) or a probe
instance; :mod:`judgecal.audit.probes` registers it after the built-in probes, so the CLI, the explorer and
``validate`` run it as they run those. ``$JUDGECAL_PROBES`` (comma-separated modules that call ``register``
themselves) still works. A plugin that cannot be loaded stops with one line naming the entry point and its
distribution (a :class:`~judgecal.errors.ConfigError`), never a traceback.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points

from judgecal.audit.probe import Probe
from judgecal.errors import ConfigError

GROUP = "judgecal.probes"
PLUGINS_ENV = "JUDGECAL_PROBES"  # comma-separated modules that register probes of their own


def _where(ep: EntryPoint) -> str:
    """``entry point 'name' (= value) of distribution 'dist'``: how an error names a plugin."""
    dist = ep.dist.name if ep.dist is not None else "unknown"
    return f"{GROUP}: entry point {ep.name!r} (= {ep.value}) of distribution {dist!r}"


def probe_of(ep: EntryPoint) -> Probe:
    """The probe an entry point names: its class made with no arguments, or the instance itself."""
    try:
        obj = ep.load()
    except Exception as exc:  # any failure of a third party's import is that plugin's, named as such
        raise ConfigError(f"{_where(ep)}: cannot be loaded ({type(exc).__name__}: {exc})") from None
    if isinstance(obj, type) and issubclass(obj, Probe):
        try:
            return obj()
        except Exception as exc:
            raise ConfigError(f"{_where(ep)}: {obj.__name__}() failed ({type(exc).__name__}: {exc})") from None
    if isinstance(obj, Probe):
        return obj
    raise ConfigError(f"{_where(ep)}: is not a judgecal.audit.probe.Probe subclass or instance "
                      f"(got {type(obj).__name__})")


def load_entry_points(register: Callable[[Probe], Probe], registered: Callable[[], list[Probe]]) -> list[str]:
    """Register the probe of every ``judgecal.probes`` entry point (by entry-point name, so the order does not
    depend on how the distributions were installed); returns the probes' names. A probe already registered
    under its name by the same class (a module also named in ``$JUDGECAL_PROBES``) is not added twice."""
    names = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: (e.name, e.value)):
        probe = probe_of(ep)
        same = [p for p in registered() if p.name == probe.name]
        if same and type(same[0]) is type(probe):
            continue
        try:
            register(probe)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{_where(ep)}: {exc}") from None
        names.append(probe.name)
    return names


def load_env_modules() -> list[str]:
    """Import the modules named in ``$JUDGECAL_PROBES`` (each registers its probes with
    :func:`judgecal.audit.probes.register`); returns their names. A module that cannot be imported stops with
    its name, never silently."""
    names = [n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",") if n.strip()]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"{PLUGINS_ENV}: {name}: cannot be imported ({exc})") from None
    return names
