"""The explorer beyond loopback: ``judgecal app`` refuses a network address without a token, and with one the
server answers nothing of the workspace (page, bundles, health, websocket) to a reader without it, in Debian's
Chromium. The server binds 0.0.0.0 (not loopback) and is reached through 127.0.0.1 only."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import free_port
from explorer_browser import ARGS, CHROMIUM, Browser
from judgecal.apps.access import ENV, Guard, is_loopback, session_value, token_problem

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "k3y-" + "0123456789abcdefXYZ"
SECRETS = ("example/acme-judge", "acme-judge-1", "gpt-4o-mini", "acme-chat-7b", "claude-3-5-haiku", "annotator1")


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "judgecal.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


def _env(token: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    return env if token is None else {**env, ENV: token}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("access")
    for args in (("import", str(ROOT / "data/items.jsonl")),
                 ("import", str(ROOT / "data/verdicts.jsonl"), "--as", "judgments", "--spec", str(ROOT / "data/judge.yaml")),
                 ("aggregate",), ("audit", "--n-boot", "100")):
        res = _cli(*args, "-w", "ws", cwd=tmp)
        assert res.returncode == 0, res.stderr
    return tmp / "ws"


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "198.18.0.1", "lan-host.example"])
@pytest.mark.parametrize("token", [None, "", "too-short"])
def test_a_network_address_without_a_usable_token_is_refused_in_one_line(ws: Path, address: str,
                                                                         token: str | None) -> None:
    res = _cli("app", "-w", str(ws), "--address", address, "--port", str(free_port()), cwd=ws.parent, env=_env(token))
    assert res.returncode == 2, res
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr and ENV in lines[0] and address in lines[0], res.stderr
    assert (token or "\0") not in res.stderr and res.stdout == ""


def test_loopback_needs_no_token_and_names_are_classified() -> None:
    assert all(is_loopback(a) for a in ("127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost", "LOCALHOST"))
    assert not any(is_loopback(a) for a in ("0.0.0.0", "::", "", "192.168.1.4", "10.0.0.1", "myhost", "::ffff:1.2.3.4"))
    assert token_problem(None) and token_problem("x" * 15) and token_problem("x" * 16 + " ")
    assert token_problem("x" * 16 + "\x1b") and token_problem(TOKEN) is None


# -- the guard as an ASGI app, request by request -------------------------------------------------------------
class Inner:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls.append(f"{scope['type']} {scope.get('path', '')}")
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"workspace: example/acme-judge"})


def _call(guard: Guard, path: str = "/", kind: str = "http", query: bytes = b"",
          headers: list[tuple[bytes, bytes]] | None = None, method: str = "GET") -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request"}

    async def send(msg: Any) -> None:
        sent.append(dict(msg))

    scope = {"type": kind, "path": path, "query_string": query, "headers": headers or [], "method": method,
             "server": ("0.0.0.0", 8501), "scheme": "http" if kind == "http" else "ws"}
    asyncio.run(guard(scope, receive, send))
    return sent


def _body(sent: list[dict[str, Any]]) -> bytes:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def test_the_guard_lets_through_only_requests_that_prove_the_token() -> None:
    inner = Inner()
    guard = Guard(inner, TOKEN)
    cookie = (b"cookie", f"other=1; judgecal_explorer_8501={session_value(TOKEN)}".encode())
    basic = base64.b64encode(f"anyone:{TOKEN}".encode())
    for headers in ([cookie], [(b"authorization", f"Bearer {TOKEN}".encode())], [(b"authorization", b"Basic " + basic)]):
        assert _body(_call(guard, "/_stcore/health", headers=headers)) == b"workspace: example/acme-judge"
    assert inner.calls == ["http /_stcore/health"] * 3
    inner.calls.clear()
    wrong_basic = base64.b64encode(f"{TOKEN}:wrong".encode())  # the token as user name is not the password
    for headers in ([], [(b"cookie", f"judgecal_explorer_8502={session_value(TOKEN)}".encode())],
                    [(b"cookie", f"judgecal_explorer_8501={TOKEN}".encode())],
                    [(b"authorization", b"Bearer " + TOKEN[:-1].encode())], [(b"authorization", b"Basic " + wrong_basic)],
                    [(b"authorization", b"Basic %%%")]):
        for path in ("/", "/static/js/index.js", "/_stcore/health", "/_stcore/host-config"):
            sent = _call(guard, path, headers=headers)
            assert sent[0]["status"] == 401 and b"acme" not in _body(sent) and TOKEN.encode() not in _body(sent)
        ws = _call(guard, "/_stcore/stream", kind="websocket", headers=headers)
        assert ws == [{"type": "websocket.close", "code": 1008}]
    assert _call(guard, "/", method="HEAD")[0]["status"] == 401
    assert inner.calls == []  # not one request reached Streamlit


def test_the_first_visit_trades_the_token_for_a_cookie_and_drops_it_from_the_address() -> None:
    inner = Inner()
    guard = Guard(inner, TOKEN)
    sent = _call(guard, "/items", query=f"item=ex-01&token={TOKEN}".encode())
    headers = dict(sent[0]["headers"])
    assert sent[0]["status"] == 303 and headers[b"location"] == b"/items?item=ex-01"
    cookie = headers[b"set-cookie"].decode()
    assert cookie.startswith(f"judgecal_explorer_8501={session_value(TOKEN)};") and TOKEN not in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert _call(guard, "/", query=b"token=wrong-token-0123456789")[0]["status"] == 401
    for path, where in (("//evil.example/x", b"/evil.example/x"), ("/a\r\nSet-Cookie: x=1", b"/a%0D%0ASet-Cookie%3A%20x%3D1")):
        sent = _call(guard, path, query=f"token={TOKEN}".encode())  # no redirect to another host, no header injected
        assert dict(sent[0]["headers"])[b"location"] == where
    behind_tls = _call(guard, "/", query=f"token={TOKEN}".encode(), headers=[(b"x-forwarded-proto", b"https")])
    assert b"Secure" in dict(behind_tls[0]["headers"])[b"set-cookie"]
    assert _call(guard, "/_stcore/stream", kind="websocket", query=f"token={TOKEN}".encode())[0]["type"] == \
        "websocket.close"  # a websocket proves it with the cookie only
    assert inner.calls == []


def test_without_a_token_a_guard_serves_nothing() -> None:
    inner = Inner()
    sent = _call(Guard(inner, None), "/", query=b"token=anything-at-all-123")
    assert sent[0]["status"] == 503 and ENV.encode() in _body(sent) and inner.calls == []


# -- the real server in Chromium --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(ws: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "judgecal.cli", "app", "--workspace", str(ws), "--port", str(port),
                             "--address", "0.0.0.0"], env=_env(TOKEN), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:  # healthy only for a request that carries the token
        assert proc.poll() is None and time.time() < deadline, proc.stdout.read() if proc.stdout else ""
        try:
            if httpx.get(f"{url}/_stcore/health", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    yield url, proc
    proc.terminate()
    proc.wait(timeout=20)


def _bundle() -> str:
    from streamlit import file_util

    js = Path(file_util.get_static_dir()) / "static" / "js"
    return "/static/js/" + next(p.name for p in js.glob("index.*.js"))


def _upgrade(url: str, headers: str = "") -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{headers}\r\n".encode())
        return s.recv(200)


def test_without_the_token_chromium_gets_nothing_of_the_workspace(server: tuple[str, Any]) -> None:
    url, _ = server
    for path in ("/", _bundle(), "/_stcore/health", "/_stcore/host-config", "/?token=not-the-token-0123456"):
        r = httpx.get(url + path)
        assert r.status_code == 401 and not any(s in r.text for s in SECRETS), (path, r.status_code)
    assert _upgrade(url).startswith(b"HTTP/1.1 403")  # the websocket upgrade is refused
    assert _upgrade(url, f"Cookie: judgecal_explorer_{url.rsplit(':', 1)[1]}={session_value(TOKEN)}\r\n").startswith(
        b"HTTP/1.1 101")  # ... and accepted with the session cookie
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        seen: list[int] = []
        page.on("response", lambda r: seen.append(r.status))
        resp = page.goto(url)
        assert resp is not None and resp.status == 401
        page.wait_for_timeout(1500)
        text, html = page.inner_text("body"), page.content()
        assert "access token" in text and not any(s in html for s in SECRETS), html[:500]
        assert seen and set(seen) == {401}  # not one answer but the refusal: no bundle, no script, no stream
        opened = page.evaluate("""url => new Promise(done => { const ws = new WebSocket(url);
            ws.onopen = () => done('open'); ws.onclose = e => done('closed ' + e.code); })""",
                               url.replace("http", "ws") + "/_stcore/stream")
        assert opened.startswith("closed"), opened
    finally:
        pw.stop()


def test_with_the_token_chromium_renders_the_first_page_and_the_token_stays_out_of_it(server: tuple[str, Any]) -> None:
    url, proc = server
    b = Browser(f"{url}/?token={TOKEN}")
    try:
        assert b.page.url.rstrip("/") == url and TOKEN not in b.page.url  # the address no longer holds it
        b.idle()
        text = b.text()
        assert "example/acme-judge" in text and "access token" not in text
        assert TOKEN not in b.page.content() and b.errors == [], b.errors
        cookie = next(c for c in b.page.context.cookies() if c["name"].startswith("judgecal_explorer_"))
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["value"] != TOKEN
        assert b.page.evaluate("document.cookie").find(cookie["value"]) == -1  # no script can read it
        b.open("Items")  # another page, over the same websocket (no error shown on it)
    finally:
        b.close()
    proc.terminate()
    out = proc.communicate(timeout=20)[0].decode(errors="replace")
    assert TOKEN not in out and "token=<your JUDGECAL_APP_TOKEN>" in out  # the log names the variable, never its value
