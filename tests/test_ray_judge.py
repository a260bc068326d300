"""Distributed judging on a real loopback Ray cluster: a head (no CPUs) and two worker nodes started as
separate ``ray start`` processes, the embedded llama.cpp judge on the workers. One worker node is
killed mid-run; the run still ends with every planned judgment stored exactly once, keyed as a local
run keys it; a re-run calls nothing; the CLI's ``--executor ray`` goes through the same path."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

import pytest

pytest.importorskip("ray")
pytest.importorskip("llama_cpp")

from judgecal.cli import main  # noqa: E402
from judgecal.data.records import Candidate, Item  # noqa: E402
from judgecal.data.store import DB_NAME, Workspace  # noqa: E402
from judgecal.distributed.judge import remote_backend, run_on_ray  # noqa: E402
from judgecal.distributed.loopback import LoopbackCluster  # noqa: E402
from judgecal.judges.backends.local import LocalBackend  # noqa: E402
from judgecal.judges.engine import Engine  # noqa: E402
from judgecal.judges.rubric import load_rubric  # noqa: E402

N_ITEMS = 8


def _items(n: int, offset: int = 0) -> list[Item]:
    return [Item(f"q{k}", f"What is {k} + {k + 1}?", [Candidate(str(2 * k + 1)), Candidate(str(2 * k + 2))])
            for k in range(offset, offset + n)]


@pytest.fixture(scope="module")
def cluster():
    with LoopbackCluster(workers=2, cpus_per_worker=1, head_cpus=0) as c:
        yield c


def _rows(path) -> list[tuple[str, int]]:
    con = sqlite3.connect(path / DB_NAME)
    try:
        return con.execute("SELECT key, COUNT(*) FROM judgments GROUP BY key").fetchall()
    finally:
        con.close()


def test_a_killed_worker_loses_and_duplicates_nothing(tmp_path, cluster):
    import ray

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(_items(N_ITEMS))
    backend = remote_backend("local/smollm2", {}, cluster.address)
    eng = Engine(ws, backend, load_rubric("pairwise"), progress=False)
    calls = eng.plan(ws.items_repo.items())
    # the same content-hash keys as a local run of the same judge
    local = Engine(Workspace(tmp_path / "local"), LocalBackend(workers=1), load_rubric("pairwise"), progress=False)
    assert {c.key for c in calls} == {c.key for c in local.plan(ws.items_repo.items())}
    assert eng.spec_hash == local.spec_hash

    killed: list[int] = []

    def kill_once(stored: int) -> None:
        if stored >= 4 and not killed:
            killed.append(cluster.kill_worker(-1))

    st = run_on_ray(eng, calls, batch_size=2, on_batch=kill_once)
    assert killed, "the worker was never killed: the run ended before its first write"
    assert (st.planned, st.done, st.errors) == (2 * N_ITEMS, 2 * N_ITEMS, 0), st.error_messages
    rows = _rows(ws.path)
    assert len(rows) == 2 * N_ITEMS and all(n == 1 for _, n in rows)
    assert {k for k, _ in rows} == {c.key for c in calls}
    df = ws.judgments_repo.judgments_frame()
    assert set(df["status"]) <= {"ok", "invalid"} and df["verdict"].isin(["A", "B", "tie", "invalid"]).all()
    assert df["env"].str.contains('"backend": "local"').all()  # each worker's own fingerprint
    assert sum(n["Alive"] for n in ray.nodes()) == 2  # the head and the surviving worker

    again = run_on_ray(eng, eng.plan(ws.items_repo.items()), batch_size=2)
    assert (again.done, again.cached) == (0, 2 * N_ITEMS)
    assert len(_rows(ws.path)) == 2 * N_ITEMS


def test_cli_executor_ray(tmp_path, cluster, capsys):  # after the kill: one worker node left
    ws = Workspace(tmp_path / "cli")
    ws.items_repo.add_items(_items(3, offset=100))
    ws.close()
    args = ["judge", "--workspace", str(tmp_path / "cli"), "--judge", "local/smollm2", "--executor", "ray",
            "--address", cluster.address, "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "6 planned, 0 cached, 6 run" in out, out
    assert main(args) == 0
    assert "6 planned, 6 cached, 0 run" in capsys.readouterr().out
    assert len(_rows(tmp_path / "cli")) == 6
    assert main([*args[:-1], "--rate-limit", "-1"]) != 0
    assert "argument --rate-limit: -1 is not allowed" in capsys.readouterr().err


def test_a_killed_driver_resumes_without_duplicates(tmp_path, cluster):
    """The driver (a `judgecal judge --executor ray` process) is killed after its first write; the next
    run makes only the calls not stored and every judgment is there once."""
    path = tmp_path / "driver"
    ws = Workspace(path)
    ws.items_repo.add_items(_items(10, offset=200))
    ws.close()
    args = ["judge", "--workspace", str(path), "--judge", "local/smollm2", "--executor", "ray",
            "--address", cluster.address, "--quiet"]
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from judgecal.cli import main; sys.exit(main())",
                             *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        stored = 0
        while time.monotonic() < deadline and proc.poll() is None:
            if (path / DB_NAME).exists():
                try:
                    stored = len(_rows(path))
                except sqlite3.OperationalError:
                    stored = 0
            if stored:
                break
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait()
    first = len(_rows(path))
    assert 0 < first < 20, f"the driver was not killed mid-run ({first} of 20 stored)"
    assert main(args) == 0
    rows = _rows(path)
    assert len(rows) == 20 and all(n == 1 for _, n in rows)
