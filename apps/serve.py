"""``python -m judgecal.apps.serve run explorer.py ...``: Streamlit's command line with the explorer's
modules (pandas, pyarrow, plotly, the pages) imported before the server starts, so the first reader's page does
not wait for them, and Streamlit's front-end bundles served from memory, the table grid's announced in the page
(:class:`Bundles`), all of it behind the access control of :mod:`judgecal.apps.access` whenever a token is
set or the server listens beyond loopback."""

from __future__ import annotations

import mimetypes
import os
import re
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import judgecal.apps.page_biases  # noqa: F401
import judgecal.apps.page_items  # noqa: F401
import judgecal.apps.page_judges  # noqa: F401
import judgecal.apps.page_labels  # noqa: F401
import judgecal.apps.page_models  # noqa: F401
import judgecal.apps.page_overview  # noqa: F401
import plotly.graph_objects  # noqa: F401  (the pages' charts: half a second to import on a busy machine)
import pyarrow  # noqa: F401  (what Streamlit serialises every table with)
import streamlit.emojis  # noqa: F401  (the first st.info compiles its emoji pattern: a third of a second)
from judgecal.apps.access import ENV, Guard, is_loopback
from streamlit import config, file_util
from streamlit.web import cli
from streamlit.web.server.starlette import starlette_server

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGI = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]
IMMUTABLE = b"public, immutable, max-age=31536000"  # what Streamlit sends for its content-hashed bundles


class Bundles:
    """Streamlit's own content-hashed front-end files (``static/js``, ``static/css``, ``static/media``) answered
    from memory, each read once, in one message; every other request goes to Streamlit's app as it is.

    A fresh browser fetches about 60 such files before it can open the page's connection, and 30 more when a
    page first shows a table, six at a time: Streamlit's file route streams each through its middleware in
    64 KiB chunks handed to worker threads (about 10 ms a file on 2 busy cores, 50 ms under load), time the
    browser spends waiting. Only names found under Streamlit's static folder are answered (an exact match, so
    no path outside it), with the headers Streamlit gives them (long-lived, immutable caching).

    The page itself (Streamlit's index.html) also names the table grid's modules (``st.dataframe``'s chunk and
    what it imports) as ``modulepreload`` links: every page with a table, the Overview first, would otherwise
    ask for them only once its first table arrives, then wait for ~30 fetches and their compilation; announced,
    the browser fetches and compiles them beside the app's own bundles (the trust table drawn 0.5-0.7 s
    sooner at 100k items on 2 busy cores, the verdicts no later)."""

    def __init__(self, app: ASGI, root: Path, prefix: str) -> None:
        self.app, self.prefix = app, prefix
        self.files = {f"{prefix}/{p.relative_to(root).as_posix()}": p
                      for p in (root / "static").rglob("*") if p.is_file()}
        self.cache: dict[str, tuple[list[tuple[bytes, bytes]], bytes]] = {}
        self.grid = grid_modules(root / "static" / "js")

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or scope.get("method") not in ("GET", "HEAD") or path not in self.files:
            await self.app(scope, receive, self.announcing(send) if scope.get("method") == "GET" else send)
            return
        if path not in self.cache:
            body = self.files[path].read_bytes()
            kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
            self.cache[path] = ([(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode()),
                                 (b"cache-control", IMMUTABLE)], body)
        headers, body = self.cache[path]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body if scope["method"] == "GET" else b""})


    def announcing(self, send: Callable[[Message], Awaitable[None]]) -> Callable[[Message], Awaitable[None]]:
        """``send`` with the grid's modules linked in an HTML page's head (a page sent compressed, or without
        a head, goes as it is)."""
        held: list[Message] = []

        async def wrapped(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                headers = dict(msg.get("headers", []))
                if headers.get(b"content-type", b"").startswith(b"text/html") and b"content-encoding" not in headers:
                    held.append(msg)  # the page: sent once its body is complete
                    return
            if not held:
                await send(msg)
                return
            held.append(msg)
            if msg.get("more_body"):
                return
            start, body = held[0], b"".join(m.get("body", b"") for m in held[1:])
            links = b"".join(b'<link rel="modulepreload" crossorigin href="./static/js/%s">' % n.encode()
                             for n in self.grid if n.encode() not in body)
            body = body.replace(b"</head>", links + b"</head>", 1)
            start["headers"] = [(k, str(len(body)).encode() if k == b"content-length" else v)
                                for k, v in start["headers"]]
            await send(start)
            await send({"type": "http.response.body", "body": body})

        return wrapped


def grid_modules(js: Path) -> list[str]:
    """The modules ``st.dataframe``'s grid needs: its chunk (``DataFrame.<hash>.js``) and what it imports,
    transitively, read off the bundles (so the names follow Streamlit's version)."""
    todo, seen = [p.name for p in js.glob("DataFrame.*.js")], set()
    while todo:
        name = todo.pop()
        if name not in seen and (js / name).is_file():
            seen.add(name)
            todo += re.findall(r'(?:from|import)"\./([^"/]+\.js)"', (js / name).read_text("utf-8"))
    return sorted(seen)


_create_app = starlette_server.create_starlette_app


def create_app(runtime: Any) -> Any:
    """Streamlit's app with :class:`Bundles` in front of it, and :class:`judgecal.apps.access.Guard` in front of
    both when ``JUDGECAL_APP_TOKEN`` is set or the address is not loopback (then, without a token, it serves
    nothing: ``judgecal app`` refuses to start so, this catches a server started another way). The token is taken
    out of the environment, so no page's code can read it."""
    prefix = "/" + str(config.get_option("server.baseUrlPath") or "").strip("/")
    app = Bundles(_create_app(runtime), Path(file_util.get_static_dir()), prefix.rstrip("/"))
    token = os.environ.pop(ENV, "") or None
    if token is None and is_loopback(str(config.get_option("server.address") or "")):
        return app
    return Guard(app, token)


starlette_server.create_starlette_app = create_app

if __name__ == "__main__":
    sys.exit(cli.main())
