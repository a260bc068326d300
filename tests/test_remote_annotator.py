"""Annotators on other machines: the managed server on a non-loopback address, its public URL, its checks.

The real scenario runs in a network namespace of its own (``unshare -n``) whose loopback device also
carries 198.18.0.1 (a benchmarking address, RFC 2544): the server, the command line and Chromium all talk
through that address, and no packet leaves the namespace. The refusals need no server.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_workspace

from judgecal.annotation.server import ManagedServer, public_url_problem
from judgecal.cli import main

HOST = "198.18.0.1"
HERE = Path(__file__).resolve().parent


def _namespaces() -> str | None:
    """Why the scenario cannot run here (``None`` when it can)."""
    if not shutil.which("unshare") or not shutil.which("ip"):
        return "needs unshare and ip (util-linux, iproute2)"
    done = subprocess.run(["unshare", "-n", "sh", "-c", f"ip link set lo up && ip addr add {HOST}/32 dev lo"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"a network namespace of its own is not permitted here (unshare -n: {done.stderr.strip()[:120]})"
    return None


def test_remote_annotator_labels_through_a_non_loopback_address(tmp_path, pandalm_ws):
    """Started with --host 198.18.0.1, the server listens there and not on 127.0.0.1; the links handed out
    start with its public URL; an annotator logs in and labels through that address in Chromium (every
    request of the page goes there), the label comes back with `annotate pull`, and `annotate check`
    finds the labels independent."""
    why = _namespaces()
    if why:
        pytest.skip(why)
    ws_dir = tmp_path / "ws"
    copy_workspace(pandalm_ws, ws_dir).close()
    out = tmp_path / "scenario.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGECAL_LS_URL")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    script = (f"ip link set lo up && ip addr add {HOST}/32 dev lo && "
              f"exec {sys.executable} {HERE / 'remote_annotator.py'} {ws_dir} {HOST} {out}")
    try:
        done = subprocess.run(["unshare", "-n", "sh", "-c", script], env=env, capture_output=True, text=True,
                              timeout=900, check=False)
    finally:
        ManagedServer(ws_dir).stop()  # whatever happened inside, no server outlives the test
    assert done.returncode == 0, done.stderr[-2000:]
    r = json.loads(out.read_text())
    assert "error" not in r, (r.get("error"), r)
    public = f"http://{HOST}:8480"
    rc, text, err = r["start"]
    assert rc == 0, err
    assert f"up at {public} for annotators" in text and "plain http" in err
    assert r["status"]["running"] is True and r["status"]["host"] == HOST and r["status"]["public_url"] == public
    # it listens on the address asked for, and not on loopback
    assert r["answers"] == {HOST: True, "127.0.0.1": False}
    assert r["host_header"] == {"evil.example": 400, f"{HOST}:8480": 200}
    logins = r["annotators"]["logins"]
    assert r["annotators"]["rc"] == 0 and {p["email"] for p in logins} == {"alice@example.org", "bob@example.org"}
    assert all(p["url"] == public for p in logins)
    assert r["push"][0] == 0, r["push"][2]
    seen = r["browser"]
    assert seen["after_login"].startswith(public) and "/user/login" not in seen["after_login"]
    assert seen["guidelines_shown"] is True and seen["final_url"].startswith(public)
    assert seen["hosts"] == [f"{HOST}:8480"]  # the page itself asked nothing of any other address
    assert r["pull"][0] == 0 and "1 new and 0 updated annotations" in r["pull"][1], r["pull"]
    mine = [x for x in r["labels"] if x["status"] == "ok"]
    # "A better" as shown, stored in item orientation (A or B, as the copy was flipped or not)
    assert [x["annotator"] for x in mine] == ["alice@example.org"] and mine[0]["choice"] in ("A", "B")
    check = r["check"]
    assert check["rc"] == 0, check
    assert check["report"]["url"] == public and check["report"]["independent"] is True
    assert check["report"]["reasons"] == [] and check["report"]["not_checked"] == []
    assert r["stop"][1].strip() == "stopped"


@pytest.mark.parametrize(("args", "message"), [
    (["--public-url", "ftp://review.example.org"], "is not an http(s) URL with a host"),
    (["--public-url", "https://"], "is not an http(s) URL with a host"),
    (["--public-url", "https://user:secret@review.example.org"], "holds credentials"),
    (["--public-url", "https://review.example.org/?next=1"], "has a query or fragment"),
    (["--public-url", "https://review.example.org/#top"], "has a query or fragment"),
    (["--public-url", "https://review.example.org/review"], "has a path ('/review')"),
    (["--host", "::1"], "an IPv6 address is not supported"),
    (["--host", "a b"], "is not an IPv4 address or host name"),
    (["--host", "0.0.0.0"], "--public-url: host 0.0.0.0 listens on every address"),
    (["--host", "192.0.2.1"], "--host: 192.0.2.1: cannot listen there"),
])
def test_bad_host_or_public_url_is_one_line_exit_2(tmp_path, capsys, args, message):
    """Refused before anything starts: one line naming the flag, exit 2, no secret echoed."""
    assert main(["annotate", "server", "start", *args, "--workspace", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert ("--host" in err or "--public-url" in err) and "secret" not in err
    assert not (tmp_path / "label-studio" / "server.json").exists()


def test_public_url_is_what_label_studio_is_told(tmp_path):
    """Behind a reverse proxy: Label Studio builds its links from the public URL, trusts it as the origin of
    its forms, and answers requests naming it, the bound host or loopback only."""
    env = ManagedServer(tmp_path, 8480, "127.0.0.1", "https://review.example.org/").env()
    assert env["LABEL_STUDIO_HOST"] == "https://review.example.org"
    assert env["LABEL_STUDIO_CSRF_TRUSTED_ORIGINS"] == "https://review.example.org"
    assert env["LABEL_STUDIO_ALLOWED_HOSTS"].split(",") == ["review.example.org", "127.0.0.1", "localhost"]
    plain = ManagedServer(tmp_path, 8490, "198.18.0.1")
    assert plain.public_url == "http://198.18.0.1:8490" and plain.url == "http://198.18.0.1:8490"
    everywhere = ManagedServer(tmp_path, 8490, "0.0.0.0", "http://review-box.example.org:8490")
    assert everywhere.url == "http://127.0.0.1:8490"
    assert "0.0.0.0" not in everywhere.env()["LABEL_STUDIO_ALLOWED_HOSTS"]


def test_port_in_use_is_checked_on_the_host_asked_for(tmp_path, capsys):
    """A port taken on the host asked for (here loopback, by a listener of the test) is refused naming that
    host; the public URL check accepts a plain address."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["annotate", "server", "start", "--host", "127.0.0.1", "--port", str(port),
                     "--workspace", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"--port: port {port} on 127.0.0.1 is in use" in err
    assert public_url_problem("https://review.example.org") is None
    assert public_url_problem("http://review.example.org:8480/") is None


def test_label_studio_is_found_where_setup_installed_it(tmp_path, monkeypatch):
    """``$JUDGECAL_LS_VENV`` first; else the Label Studio of this version installed beside judgecal's own
    environment (what ``make setup-*`` does), so a command run outside ``make`` does not install a second copy;
    else the user's data folder (where a first ``annotate server start`` installs it)."""
    import sys

    from judgecal.annotation import server

    prefix = tmp_path / "venv"
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv(server.VENV_ENV, raising=False)
    beside = prefix / "label-studio"
    (beside / "bin").mkdir(parents=True)
    (beside / "bin" / "label-studio").touch()
    assert server.venv_dir() == tmp_path / "data" / "judgecal" / f"label-studio-{server.LS_VERSION}"  # no stamp
    (beside / ".installed-0.0.1").touch()  # another version's
    assert server.venv_dir() != beside
    (beside / f".installed-{server.LS_VERSION}").touch()
    assert server.venv_dir() == beside
    monkeypatch.setenv(server.VENV_ENV, str(tmp_path / "chosen"))
    assert server.venv_dir() == tmp_path / "chosen"
