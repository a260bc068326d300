"""Label Studio round trip: push 1,000 blind tasks and pull 3,000 annotations (target <= 30 s in
all, excluding the server start). The 3,000 annotations are submitted between the two timed
steps (3 annotators x 1,000 tasks, through the API). Prints JSON."""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.annotation import tasks as lstasks  # noqa: E402
from judgecal.annotation.server import ManagedServer  # noqa: E402
from judgecal.data.records import Candidate, Item  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402

N = 1000


def main() -> None:
    os.environ.setdefault("JUDGECAL_LS_VENV", str(Path(__file__).resolve().parents[1] / ".venv" / "label-studio"))
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        ws = Workspace(Path(tmp) / "ws")
        ws.items_repo.add_items([Item(f"item{i}", f"Question {i}: explain topic {i} briefly.",
                           [Candidate(f"Answer one for {i}. " * 5, "model-x"), Candidate(f"Answer two for {i}.", "model-y")])
                      for i in range(N)])
        server = ManagedServer(ws.path, port)
        t0 = time.perf_counter()
        conn = server.start()
        start_s = time.perf_counter() - t0
        try:
            ls = lstasks.client(conn)
            t1 = time.perf_counter()
            res = lstasks.push(ws, ls, [f"item{i}" for i in range(N)], overlap=3)
            push_s = time.perf_counter() - t1
            users = [ls.users.create(username=f"r{k}@example.org", email=f"r{k}@example.org").id for k in range(3)]
            task_ids = [t.id for t in ls.tasks.list(project=res.project_id, page_size=1000)]

            def annotate(job: tuple[int, int]) -> None:
                tid, uid = job
                ls.annotations.create(id=tid, result=lstasks.annotation_json("A"), completed_by=uid)

            t2 = time.perf_counter()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(annotate, [(t, u) for t in task_ids for u in users]))
            submit_s = time.perf_counter() - t2
            t3 = time.perf_counter()
            pulled = lstasks.pull(ws, ls)
            pull_s = time.perf_counter() - t3
        finally:
            server.stop()
        print(json.dumps({
            "benchmark": "labelstudio", "machine": machine(), "tasks": res.created, "annotations_pulled": pulled.new,
            "server_start_s": round(start_s, 1), "push_s": round(push_s, 2), "pull_s": round(pull_s, 2),
            "push_plus_pull_s": round(push_s + pull_s, 2), "submit_3000_untimed_s": round(submit_s, 1),
            "problems": len(pulled.problems), "peak_rss_mb": peak_rss_mb(),
            "targets": {"push_plus_pull_s": "<= 30"},
        }, indent=1))


if __name__ == "__main__":
    main()
