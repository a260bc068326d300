"""Connecting to a Ray cluster (``ray`` is an optional dependency: the ``ray`` extra)."""

from __future__ import annotations

import os
import socket
from typing import Any

from judgecal.errors import BackendError


class RayUnavailableError(BackendError):
    """Ray is not installed or the cluster cannot be reached."""


def ray_module() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailableError("--executor ray needs Ray: pip install 'judgecal-toolkit[ray]'") from None
    return ray


def connect(address: str | None = None) -> Any:
    """``ray.init`` on ``address`` (``auto``, ``host:port`` of the head's GCS, or ``ray://host:port`` for a
    Ray Client server); an already connected driver is reused. Returns the ``ray`` module."""
    ray = ray_module()
    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = address or os.environ.get("RAY_ADDRESS") or "auto"
    _reachable(address)
    try:
        ray.init(address=address, log_to_driver=False, logging_level="WARNING")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RayUnavailableError(f"cannot connect to the Ray cluster at {address!r}: {first}") from None
    return ray


def _reachable(address: str) -> None:
    """Fail at once when nothing listens at a ``host:port`` or ``ray://host:port`` address: ``ray.init``
    would retry for minutes before giving up."""
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return  # ``auto``, ``local`` or a form Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise RayUnavailableError(f"cannot connect to the Ray cluster at {address!r}: nothing answers at "
                                  f"{hostport} ({exc.strerror or type(exc).__name__})") from None


def cluster_cpus(ray: Any) -> int:
    """CPUs the cluster has now (at least 1)."""
    return max(1, int(ray.cluster_resources().get("CPU", 0)))
