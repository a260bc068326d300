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


# A process's peak memory (``ru_maxrss``) starts from that of the process it was forked from: Linux carries the
# high-water mark across fork and exec. A measured child is therefore started by this small launcher (a Python
# without site, about 10 MB), not by the benchmark, which may hold hundreds of MB by then; the launcher prints
# the child's own peak on its last line of stderr, after MARK, and exits with the child's status.
MARK = "peak_rss_kib="
_LAUNCH = ("import os, sys; pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ); "
           "_, status, usage = os.wait4(pid, 0); print(f'\\n" + MARK + "{usage.ru_maxrss}', file=sys.stderr); "
           "code = os.waitstatus_to_exitcode(status); sys.exit(code if code >= 0 else 128 - code)")


def fresh(cmd: list[str]) -> list[str]:
    """``cmd`` started by the small launcher (see :data:`MARK`): its peak memory is its own."""
    import shutil
    import sys

    program = cmd[0] if os.path.sep in cmd[0] else (shutil.which(cmd[0]) or cmd[0])
    return [sys.executable, "-S", "-c", _LAUNCH, program, *cmd[1:]]


def launched_peak_mb(stderr: str) -> float:
    """The peak memory (MB) the launcher of :func:`fresh` printed for its child."""
    line = next(ln for ln in reversed(stderr.splitlines()) if ln.startswith(MARK))
    return round(int(line[len(MARK):]) / 1024, 1)


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

    res = subprocess.run(fresh([sys.executable, "-c", _PROFILE, workspace, consensus, str(n_boot)]),
                         capture_output=True, text=True, check=True)
    out: dict[str, object] = json.loads(res.stdout.strip().splitlines()[-1])
    return out
