"""Connecting to a Ray cluster (``ray`` is an optional dependency: the ``ray`` extra)."""

from __future__ import annotations

import contextlib
import os
import socket
from typing import Any

from judgecal.errors import BackendError, MissingExtraError

CLIENT_INIT_ATTEMPTS = 3


class RayUnavailableError(BackendError):
    """The Ray cluster cannot be reached, did not come up, or lacks what a run needs (a GPU)."""


def ray_module() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "ray") from None
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
    for attempt in range(CLIENT_INIT_ATTEMPTS):
        try:
            ray.init(address=address, log_to_driver=False, logging_level="WARNING")
            return ray
        except ConnectionAbortedError as exc:
            # a Ray Client head starts one server process per client and gives up when it is slow to
            # come up (a loaded head); that start is retried, with the server's reason kept if it fails
            if attempt + 1 < CLIENT_INIT_ATTEMPTS and address.startswith("ray://"):
                with contextlib.suppress(Exception):
                    ray.shutdown()
                continue
            raise RayUnavailableError(f"cannot connect to the Ray cluster at {address!r}: {_reason(exc)}") from None
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayUnavailableError(f"cannot connect to the Ray cluster at {address!r}: {_reason(exc)}") from None
    return ray  # pragma: no cover - the loop returns or raises


def _reason(exc: BaseException) -> str:
    """The first line of Ray's message and, when the server sent a traceback after it, its last line."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return lines[0] if len(lines) == 1 else f"{lines[0]} {lines[-1]}"


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
