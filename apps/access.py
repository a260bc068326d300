"""Who may read the explorer: on loopback anyone on the machine (as any local program); on any other address only
a reader who holds the token the server was started with (``JUDGECAL_APP_TOKEN``), checked on every request.

:class:`Guard` stands in front of everything Streamlit serves (the page, its static files, the health endpoints,
the websocket ``/_stcore/stream``). A reader proves the token once, by opening the address with ``?token=...``
(answered by a redirect to the same address without it, setting an HttpOnly, SameSite=Strict cookie that holds a
digest of the token, never the token), or on each request with ``Authorization: Bearer <token>`` or HTTP Basic
(any user name, the token as password; no Basic challenge is sent, so a browser shows the text saying how to
log in rather than a password dialog). Every comparison is constant-time. A request without it gets 401 and a
short text that names no workspace, judge or model; a websocket without it is closed before it is accepted (the
upgrade is answered 403). The token is never logged, sent back, or put in the page.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]

ENV = "JUDGECAL_APP_TOKEN"
MIN_LENGTH = 16
GENERATE = "python -c 'import secrets; print(secrets.token_urlsafe(24))'"
DENIED = (b"judgecal explorer: this server needs its access token. Open its address once with ?token=<the token "
          b"it was started with>, or send it as a Bearer token or a Basic password.\n")
UNSET = (b"judgecal explorer: it listens beyond loopback without an access token, so it serves nothing. Restart it "
         b"with JUDGECAL_APP_TOKEN set.\n")


def is_loopback(address: str) -> bool:
    """Whether ``address`` (a ``--address``: an IP, ``localhost`` or another host name) is loopback only; a name
    other than ``localhost`` and an empty address (every interface) are not."""
    a = address.strip().strip("[]").lower()
    if a == "localhost":
        return True
    try:
        return ipaddress.ip_address(a).is_loopback
    except ValueError:
        return False


def token_problem(token: str | None) -> str | None:
    """Why ``token`` cannot protect the explorer (unset, too short, spaces or control characters), or ``None``."""
    if not token:
        return f"{ENV} is not set"
    if len(token) < MIN_LENGTH:
        return f"{ENV} is shorter than {MIN_LENGTH} characters"
    if any(c.isspace() or not c.isprintable() for c in token):
        return f"{ENV} holds spaces or control characters"
    return None


def session_value(token: str) -> str:
    """The cookie's value: a digest of the token (the cookie never holds the token itself)."""
    return hmac.new(token.encode(), b"judgecal explorer session", hashlib.sha256).hexdigest()


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return {k.lower(): v for k, v in scope.get("headers", [])}


def _cookies(raw: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in raw.decode("latin-1").split(";"):
        name, _, value = part.strip().partition("=")
        out.setdefault(name, value)
    return out


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))


class Guard:
    """Every request answered by ``app`` only when it carries ``token`` (see the module); ``token=None`` (an
    explorer beyond loopback started without one) answers every request 503 and serves nothing."""

    def __init__(self, app: ASGI, token: str | None) -> None:
        self.app, self.token = app, token
        self.session = session_value(token) if token else ""

    def cookie_name(self, scope: Scope) -> str:
        """One cookie per port: two explorers on one host keep their own sessions."""
        server = scope.get("server") or (None, None)
        return f"judgecal_explorer_{server[1] or 0}"

    def _authorised(self, scope: Scope, headers: dict[bytes, bytes]) -> bool:
        assert self.token is not None
        ok = _same(_cookies(headers.get(b"cookie", b"")).get(self.cookie_name(scope), ""), self.session)
        kind, _, value = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if kind.lower() == "bearer":
            ok |= _same(value.strip(), self.token)
        elif kind.lower() == "basic":
            try:
                password = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")[2]
            except (binascii.Error, UnicodeDecodeError):
                password = ""
            ok |= _same(password, self.token)
        return ok

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan: no reader, nothing served
            await self.app(scope, receive, send)
            return
        if self.token is None:
            await self._refuse(scope, send, 503, UNSET)
            return
        headers = _headers(scope)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given and scope["type"] == "http":  # the first visit: never let the token reach the page or history
            if self._authorised(scope, headers) or _same(given[-1], self.token):
                await self._enter(scope, send, [(k, v) for k, v in query if k != "token"])
            else:
                await self._refuse(scope, send, 401, DENIED)
            return
        if self._authorised(scope, headers):
            await self.app(scope, receive, send)
        else:
            await self._refuse(scope, send, 401, DENIED)

    async def _enter(self, scope: Scope, send: Send, rest: list[tuple[str, str]]) -> None:
        """303 to the same address without the token, with the session cookie."""
        secure = scope.get("scheme") in ("https", "wss") or _headers(scope).get(b"x-forwarded-proto") == b"https"
        cookie = (f"{self.cookie_name(scope)}={self.session}; Path=/; HttpOnly; SameSite=Strict"
                  + ("; Secure" if secure else ""))
        # one leading slash (``//host`` would send the reader to another host), every other character quoted
        where = "/" + quote((scope.get("root_path", "") + scope.get("path", "/")).lstrip("/"))
        where += f"?{urlencode(rest)}" if rest else ""
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", where.encode("ascii")), (b"set-cookie", cookie.encode()),
                                (b"cache-control", b"no-store"), (b"referrer-policy", b"no-referrer"),
                                (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    async def _refuse(scope: Scope, send: Send, status: int, text: bytes) -> None:
        if scope["type"] == "websocket":  # closed before accepting: the upgrade is answered 403
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(text)).encode()),
                   (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else text})
