"""Time `judgecal demo` end to end in a fresh workspace (target: <= 5 minutes on 2 cores). Prints JSON."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine  # noqa: E402


def main() -> None:
    import os

    os.environ.setdefault("JUDGECAL_DATA_MIRROR", str(Path(__file__).resolve().parents[2] / "shared" / "datasets"))
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "demo"
        t0 = time.perf_counter()
        res = subprocess.run([sys.executable, "-m", "judgecal.cli", "demo", "--workspace", str(ws), "--quiet"],
                             capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        report = json.loads((ws / "reports" / "audit.json").read_text()) if res.returncode == 0 else {}
        local = report.get("judges", {}).get("local/smollm2", {})
        print(json.dumps({
            "benchmark": "demo", "machine": machine(), "returncode": res.returncode, "seconds": round(seconds, 1),
            "local_judgments": local.get("n_judgments"),
            "local_metrics": {k: v["estimate"] for k, v in local.get("metrics", {}).items()},
            "stderr_tail": res.stderr[-500:] if res.returncode else "",
            "targets": {"seconds": "<= 300 on 2 cores"},
        }, indent=1))


if __name__ == "__main__":
    main()
