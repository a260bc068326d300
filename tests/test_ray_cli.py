"""``judgecal audit --executor ray`` on a real loopback cluster (a head and two worker nodes, separate
``ray start`` processes) writes the audit.json that ``judgecal audit`` writes on the same workspace,
naming in its ``executor`` section which figures the cluster computed and which this machine did; and the
same cluster is reached through Ray Client (``ray://``, the head's client server)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ray")

from conftest import copy_workspace  # noqa: E402

from judgecal.cli import main  # noqa: E402
from judgecal.data.records import Judgment  # noqa: E402
from judgecal.distributed.audit import COVERED  # noqa: E402
from judgecal.distributed.loopback import LoopbackCluster  # noqa: E402

N_BOOT = "200"


@pytest.fixture(scope="module")
def cluster():
    with LoopbackCluster(workers=2, cpus_per_worker=1, head_cpus=0, client_server=True) as c:
        yield c


@pytest.fixture(scope="module")
def ws_path(pandalm_ws, tmp_path_factory):
    """PandaLM (real human consensus, recorded judges) plus a seeded judge in both orders with ties and
    invalid answers, so every covered metric, the position ones too, has something to count."""
    path = tmp_path_factory.mktemp("ray_cli") / "ws"
    ws = copy_workspace(pandalm_ws, path)
    rng = np.random.default_rng(11)
    rows = []
    for i in sorted(ws.annotations_repo.consensus_frame("ds")["item_id"].unique()):
        for order in ("AB", "BA"):
            v = str(rng.choice(["A", "B", "tie", "invalid"], p=[0.5, 0.3, 0.1, 0.1]))
            rows.append(Judgment(f"{i}|{order}", i, "sim/both-orders", "h0", order=order, verdict=v,
                                 status="invalid" if v == "invalid" else "ok"))
    ws.judgments_repo.add_judgments(rows)
    ws.close()
    return path


def _audit(ws_path, out, *extra: str) -> dict[str, Any]:
    assert main(["audit", "--workspace", str(ws_path), "--out", str(out), "--n-boot", N_BOOT, *extra]) == 0
    return json.loads((out / "audit.json").read_text("utf-8"))


def _without_run_details(report: dict[str, Any]) -> dict[str, Any]:
    """The report less what differs between any two runs (the time written) and the executor note."""
    rep = json.loads(json.dumps(report))
    rep.pop("generated_at")
    rep.pop("executor", None)
    return rep


def test_cli_audit_on_the_cluster_writes_the_local_audit(ws_path, cluster, tmp_path, capsys):
    local = _audit(ws_path, tmp_path / "local")
    dist = _audit(ws_path, tmp_path / "ray", "--executor", "ray", "--address", cluster.address, "--shards", "5")
    ex = dist["executor"]
    assert ex["name"] == "ray" and ex["address"] == cluster.address and ex["shards"] == 5
    assert ex["computed_on_cluster"]["metrics"] == list(COVERED) and "probes" in ex["computed_locally"]
    assert "executor" not in local and "executor" not in dist["settings"]
    assert _without_run_details(dist) == _without_run_details(local)  # every figure, every section
    judge = dist["judges"]["sim/both-orders"]["metrics"]
    assert judge["flip_rate"]["n"] > 0 and math.isfinite(judge["accuracy"]["estimate"])
    assert not list((ws_path).glob("audit-shards-*"))  # the temporary shards are gone
    kept = tmp_path / "kept"
    _audit(ws_path, tmp_path / "ray2", "--executor", "ray", "--address", cluster.address, "--shard-dir", str(kept))
    assert len(list(kept.glob("judgments-*.parquet"))) == 16


def test_cli_audit_names_an_unreachable_cluster(ws_path, tmp_path, capsys):
    import ray

    if ray.is_initialized():
        ray.shutdown()
    code = main(["audit", "--workspace", str(ws_path), "--out", str(tmp_path), "--n-boot", N_BOOT,
                 "--executor", "ray", "--address", "127.0.0.1:1"])
    err = capsys.readouterr().err
    assert code == 69 and "cannot connect to the Ray cluster at '127.0.0.1:1'" in err, err  # EX_UNAVAILABLE
    assert "Traceback" not in err


def _fresh_driver() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()


def test_ray_client_address(ws_path, cluster, tmp_path):
    """``--address ray://127.0.0.1:PORT`` (Ray Client, the head started with ``--ray-client-server-port``):
    the audit's Ray tasks run through the client server and give the same figures."""
    pytest.importorskip("grpc")  # the ray[client] extra
    import ray

    _fresh_driver()
    local = _audit(ws_path, tmp_path / "local")
    dist = _audit(ws_path, tmp_path / "client", "--executor", "ray", "--address", cluster.client_address)
    assert ray.util.client.ray.is_connected()  # a Ray Client session, not a driver on a node
    assert dist["executor"]["address"] == cluster.client_address
    assert _without_run_details(dist) == _without_run_details(local)
    _fresh_driver()


def test_ray_client_judging(tmp_path, cluster, capsys):
    """``judgecal judge --executor ray --address ray://...``: the embedded judge on the worker nodes,
    every judgment stored once, a re-run calls nothing."""
    pytest.importorskip("grpc")
    pytest.importorskip("llama_cpp")
    from judgecal.data.records import Candidate, Item
    from judgecal.data.store import Workspace

    _fresh_driver()
    ws = Workspace(tmp_path / "judge")
    ws.items_repo.add_items([Item(f"c{k}", f"What is {k} + 2?", [Candidate(str(k + 2)), Candidate(str(k + 3))]) for k in range(3)])
    ws.close()
    args = ["judge", "--workspace", str(tmp_path / "judge"), "--judge", "local/smollm2", "--executor", "ray",
            "--address", str(cluster.client_address), "--quiet"]
    assert main(args) == 0
    assert "6 planned, 0 cached, 6 run" in capsys.readouterr().out
    assert main(args) == 0
    assert "6 planned, 6 cached, 0 run" in capsys.readouterr().out
    ws = Workspace(tmp_path / "judge")
    df = ws.judgments_repo.judgments_frame()
    assert len(df) == 6 and df["key"].is_unique and df["env"].str.contains('"backend": "local"').all()
    ws.close()
    _fresh_driver()


def test_connect_error_keeps_the_servers_reason():
    """Ray Client's 'Initialization failure from server:' is followed by the server's traceback; the
    message the user sees keeps its last line (the reason), not only the empty heading."""
    from judgecal.distributed.cluster import _reason

    exc = ConnectionAbortedError("Initialization failure from server:\nTraceback (most recent call last):\n"
                                 '  File "proxier.py", line 780\nRuntimeError: Proxy failed to Connect to backend!\n')
    assert _reason(exc) == "Initialization failure from server: RuntimeError: Proxy failed to Connect to backend!"
    assert _reason(ValueError("")) == "ValueError"
    assert _reason(ConnectionError("refused")) == "refused"
