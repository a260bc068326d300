"""A run killed with SIGKILL and resumed ends with the same judgments as an uninterrupted run."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

from judgecal.data.store import Workspace


def _judge_cmd(ws):
    return [sys.executable, "-m", "judgecal.cli", "judge", "--judge", "local/smollm2", "--items", "10",
            "--source", "pandalm", "--quiet", "--workspace", str(ws)]


def _count(ws) -> int:
    try:
        con = sqlite3.connect(ws / "judgecal.sqlite", timeout=5)
        n = con.execute("SELECT COUNT(*) FROM judgments WHERE judge='local/smollm2'").fetchone()[0]
        con.close()
        return int(n)
    except sqlite3.OperationalError:
        return 0


def _frame(ws):
    with Workspace(ws) as w:
        df = w.judgments_repo.judgments_frame("local/smollm2")
    return df


def test_sigkill_then_resume_matches_uninterrupted(tmp_path, pandalm_ws):
    import shutil

    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        pandalm_ws._db.conn.execute("PRAGMA wal_checkpoint(FULL)")
        shutil.copy(pandalm_ws.db_path, d / "judgecal.sqlite")
    env = {**os.environ}
    subprocess.run(_judge_cmd(a), check=True, env=env, capture_output=True)
    proc = subprocess.Popen(_judge_cmd(b), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while _count(b) < 4 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = _count(b)
    assert 0 < partial < 20, partial
    res = subprocess.run(_judge_cmd(b), check=True, env=env, capture_output=True, text=True)
    assert f"{partial} cached" in res.stdout
    fa, fb = _frame(a), _frame(b)
    assert len(fb) == 20 and fb["key"].is_unique
    cols = ["key", "item_id", "order", "verdict", "raw"]
    assert fa.sort_values("key")[cols].to_numpy().tolist() == fb.sort_values("key")[cols].to_numpy().tolist()
