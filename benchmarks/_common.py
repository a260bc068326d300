"""Helpers shared by the benchmark scripts: machine description and peak memory."""

from __future__ import annotations

import os
import platform
import resource


def machine() -> dict[str, object]:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpus": os.cpu_count(), "cpu": cpu, "memory_gib": round(mem, 1), "python": platform.python_version(),
            "platform": platform.platform()}


def peak_rss_mb() -> float:
    """Peak resident memory of this process (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
