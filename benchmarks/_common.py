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


# Run in a fresh process by audit_profile: the audit's steps as they start (progress), timed, with the peak memory.
_PROFILE = """
import json, resource, sys, time
from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.data.store import Workspace

t0 = time.perf_counter()
steps, last = [], [t0, "read the judgments"]
def peak():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
def at(done, total, step):
    now = time.perf_counter()
    steps.append({"step": last[1], "seconds": round(now - last[0], 3), "peak_rss_mb_after": peak()})
    last[:] = [now, step]
ws = Workspace(sys.argv[1], create=False)
audit_workspace(ws, AuditOptions(consensus=sys.argv[2], n_boot=int(sys.argv[3])), progress=at)
at(0, 0, "")
print(json.dumps({"seconds": round(time.perf_counter() - t0, 2), "peak_rss_mb": peak(), "steps": steps}))
"""


def audit_profile(workspace: str, consensus: str = "ds", n_boot: int = 2000) -> dict[str, object]:
    """Where an audit's time and memory go: :func:`judgecal.audit.pipeline.audit_workspace` in a fresh process,
    each step's seconds (from its start to the next one's) and the peak resident memory after it. The first
    step, until the first probe starts, reads the judgments, the truth and the items' facts."""
    import json
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", _PROFILE, workspace, consensus, str(n_boot)], capture_output=True,
                         text=True, check=True)
    out: dict[str, object] = json.loads(res.stdout.strip().splitlines()[-1])
    return out
