"""The explorer's front for Streamlit's app (:class:`judgecal.apps.serve.Bundles`): Streamlit's own bundles from
memory with their caching, nothing else answered by it, and the table grid's modules announced in the page."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from judgecal.apps.serve import IMMUTABLE, Bundles

PAGE = b'<html><head><link rel="modulepreload" href="./static/js/shared.1.js"></head><body></body></html>'


def _root(tmp_path: Path) -> Path:
    js = tmp_path / "static" / "js"
    js.mkdir(parents=True)
    (js / "DataFrame.abc.js").write_text('import{a}from"./grid.2.js";import"./shared.1.js";', "utf-8")
    (js / "grid.2.js").write_text('import{b}from"./deep.3.js";', "utf-8")
    (js / "deep.3.js").write_text("export const b=1;", "utf-8")
    (js / "shared.1.js").write_text("export const a=1;", "utf-8")
    (js / "other.4.js").write_text("export const c=1;", "utf-8")
    (tmp_path / "secret.txt").write_text("not served", "utf-8")
    return tmp_path


def _get(front: Bundles, path: str, method: str = "GET") -> tuple[list[dict[str, Any]], list[str]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request"}

    async def send(msg: Any) -> None:
        sent.append(dict(msg))

    asyncio.run(front({"type": "http", "method": method, "path": path}, receive, send))
    return sent, front.app.calls  # type: ignore[attr-defined]


class Inner:
    """Streamlit's app, as far as the front sees it: answers every path with ``body`` (in two chunks)."""

    def __init__(self, body: bytes = PAGE, kind: bytes = b"text/html; charset=utf-8", encoding: bytes = b"") -> None:
        self.body, self.kind, self.encoding, self.calls = body, kind, encoding, []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls.append(scope["path"])
        headers = [(b"content-type", self.kind), (b"content-length", str(len(self.body)).encode())]
        headers += [(b"content-encoding", self.encoding)] if self.encoding else []
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        half = len(self.body) // 2
        await send({"type": "http.response.body", "body": self.body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": self.body[half:]})


def test_a_bundle_is_answered_from_memory_with_streamlits_caching(tmp_path: Path) -> None:
    front = Bundles(Inner(), _root(tmp_path), "")
    for _ in range(2):  # read once, then from memory
        sent, calls = _get(front, "/static/js/other.4.js")
        assert calls == []
        headers = dict(sent[0]["headers"])
        assert sent[0]["status"] == 200 and headers[b"cache-control"] == IMMUTABLE
        assert headers[b"content-type"].endswith(b"javascript")
        assert sent[1]["body"] == b"export const c=1;" and headers[b"content-length"] == b"17"
    sent, _ = _get(front, "/static/js/other.4.js", "HEAD")
    assert sent[1]["body"] == b"" and dict(sent[0]["headers"])[b"content-length"] == b"17"


def test_only_names_under_the_static_folder_are_answered_by_the_front(tmp_path: Path) -> None:
    front = Bundles(Inner(b"inner", b"text/plain"), _root(tmp_path), "")
    for path in ("/secret.txt", "/static/js/../../secret.txt", "/static/js/missing.js", "/static/js", "/"):
        sent, calls = _get(front, path)
        assert calls[-1] == path and b"".join(m.get("body", b"") for m in sent[1:]) == b"inner"
    prefixed = Bundles(Inner(b"inner", b"text/plain"), _root(tmp_path / "p"), "/base")
    assert _get(prefixed, "/base/static/js/deep.3.js")[1] == []
    assert _get(prefixed, "/static/js/deep.3.js")[1] == ["/static/js/deep.3.js"]


def test_the_page_announces_the_grids_modules_once(tmp_path: Path) -> None:
    front = Bundles(Inner(), _root(tmp_path), "")
    sent, _ = _get(front, "/")
    body = sent[1]["body"]
    assert dict(sent[0]["headers"])[b"content-length"] == str(len(body)).encode()
    for name in ("DataFrame.abc.js", "grid.2.js", "deep.3.js"):
        assert body.count(b'<link rel="modulepreload" crossorigin href="./static/js/%s">' % name.encode()) == 1
    assert body.count(b"shared.1.js") == 1 and b"other.4.js" not in body  # already linked; not the grid's
    assert body.index(b"deep.3.js") < body.index(b"</head>")
    for inner, method in ((Inner(encoding=b"gzip"), "GET"), (Inner(b"{}", b"application/json"), "GET"),
                          (Inner(), "HEAD")):  # compressed, not a page, or no body: as Streamlit sent it
        sent, _ = _get(Bundles(inner, _root(tmp_path / method / inner.kind.decode()[:4]), ""), "/", method)
        assert b"".join(m.get("body", b"") for m in sent[1:]) == inner.body
        assert dict(sent[0]["headers"])[b"content-length"] == str(len(inner.body)).encode()
