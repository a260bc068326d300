"""A remote annotator's session, run inside a network namespace of its own (see test_remote_annotator.py).

``python remote_annotator.py WORKSPACE HOST OUT_JSON``: starts the managed Label Studio on ``HOST`` with the
judgecal command line, adds two annotators, pushes a blind sample, has the first annotator log in and label
in Chromium through ``HOST``, pulls, runs ``annotate check`` and stops the server. What each step showed is
written to ``OUT_JSON`` for the test to judge; nothing here decides whether the test passes.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import annotator_page

PEOPLE = ["alice@example.org", "bob@example.org"]


def cli(ws: str, *args: str) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "judgecal.cli", "annotate", *args, "--workspace", ws],
                          capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, done.stdout, done.stderr


def answers(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex((host, port)) == 0


def label_in_browser(public: str, person: dict[str, str], pid: int) -> dict[str, Any]:
    """Log in at ``public`` as ``person``, open their project's label stream, pick "A better" and submit."""
    seen: dict[str, Any] = {}
    requests: list[str] = []
    with annotator_page(public, person) as page:
        seen["after_login"] = page.url
        page.on("request", lambda r: requests.append(r.url))
        page.goto(f"{public}/projects/{pid}/data?labeling=1")
        page.locator("h2", has_text="Pairwise tasks").first.wait_for(timeout=120_000)
        seen["guidelines_shown"] = True
        page.keyboard.press("Escape")
        choice = page.locator("label", has_text="A better").first
        choice.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        choice.click()
        page.get_by_role("button", name="Submit").first.click()
        page.wait_for_timeout(3000)
        seen["hosts"] = sorted({u.split("/")[2] for u in requests if u.startswith("http")})
        seen["final_url"] = page.url
    return seen


def main(ws: str, host: str, out: Path) -> int:
    from judgecal.data.store import Workspace

    result: dict[str, Any] = {}
    try:
        result["start"] = cli(ws, "server", "start", "--host", host)
        status = json.loads(cli(ws, "server", "status")[1])
        result["status"] = status
        port = int(status["url"].rsplit(":", 1)[1])
        result["answers"] = {host: answers(host, port), "127.0.0.1": answers("127.0.0.1", port)}
        # a request naming another host (DNS rebinding) is not answered; one naming the public address is
        import httpx

        result["host_header"] = {name: httpx.get(f"http://{host}:{port}/user/login/", headers={"Host": name},
                                                 timeout=30).status_code for name in ("evil.example", f"{host}:{port}")}
        rc, text, err = cli(ws, "annotators", "--add", *PEOPLE, "--json")
        result["annotators"] = {"rc": rc, "err": err, "logins": json.loads(text) if rc == 0 else None}
        result["push"] = cli(ws, "push", "--budget", "4", "--overlap", "1", "--source", "pandalm", "--seed", "7")
        with Workspace(ws) as w:
            pids = {e: int(p["project_id"]) for e, p in w.labelstudio_repo.ls_projects("Blind review").items()}
        alice = next(p for p in result["annotators"]["logins"] if p["email"] == PEOPLE[0])
        result["browser"] = label_in_browser(alice["url"], alice, pids[PEOPLE[0]])
        result["pull"] = cli(ws, "pull", "--quiet")
        with Workspace(ws) as w:
            result["labels"] = w.labelstudio_repo.ls_labels_frame().astype(str).to_dict("records")
        rc, text, err = cli(ws, "check")
        result["check"] = {"rc": rc, "report": json.loads(text) if text.strip().startswith("{") else text,
                           "err": err}
    except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it with what was seen so far
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        result["stop"] = cli(ws, "server", "stop")
        out.write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
