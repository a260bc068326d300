"""``openai-http/<model>``: an OpenAI-compatible chat-completions server over a lean HTTP/1.1 path.

The same requests, replies, keys and judge as ``openai/<model>`` (the backend's name is ``openai``, so
the two share cache keys and specs), without the SDK's per-call request transformation and response
model building, which cost most of the engine's CPU per call against a fast local server (``vllm
serve``, ``llama_cpp.server``; see ``benchmarks/bench_engine.py``). Requests go over a pool of
keep-alive asyncio connections framed by ``h11`` (the HTTP/1.1 state machine under httpx): taking a
connection is O(1), where httpcore 1.0's pool scans every connection for every queued request
(quadratic in the concurrency). The key comes from
``OPENAI_API_KEY`` (never stored, redacted from every message); ``OPENAI_BASE_URL`` or ``base_url=``
picks the server. Status handling as the SDK's: 429 and 5xx (with ``Retry-After``), timeouts and
dropped connections are transient; other statuses fail the call; a context overflow is ``too_long``.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from collections import deque
from typing import Any
from urllib.parse import urlsplit

import h11

from judgecal.judges.backends.openai_api import is_context_overflow
from judgecal.judges.base import (
    BackendError,
    Request,
    Response,
    TransientError,
    env_key,
    malformed,
    redact,
    retry_after_seconds,
)

OPENAI_URL = "https://api.openai.com/v1"


class OpenAIHTTPBackend:
    name = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 max_concurrency: int = 256, timeout_s: float = 120.0) -> None:
        self.model = model
        self.max_concurrency = max_concurrency
        base = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
        key = api_key or env_key("OPENAI_API_KEY") or (None if base == OPENAI_URL else "sk-local")
        if key is None:
            raise BackendError("openai-http backend needs OPENAI_API_KEY (or a base_url for a local server)")
        self.secrets = (key,)
        u = urlsplit(f"{base}/chat/completions")
        self.host, self.path = u.hostname or "localhost", u.path
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.tls = u.scheme == "https"
        self.client = _Endpoint(base + "/")  # the endpoint the spec records, as the SDK client shows it
        host = self.host if u.port is None else f"{self.host}:{self.port}"
        self._headers = [("host", host), ("authorization", f"Bearer {key}"), ("content-type", "application/json"),
                         ("accept", "application/json"), ("user-agent", "judgecal")]
        self._timeout = timeout_s
        self._idle: deque[tuple[asyncio.StreamReader, asyncio.StreamWriter, h11.Connection]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, h11.Connection]:
        """An idle keep-alive connection of this event loop, or a new one."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # connections belong to the loop that opened them
            self._idle.clear()
            self._loop = loop
        while self._idle:
            conn = self._idle.pop()
            if not conn[1].is_closing() and not conn[0].at_eof():
                return conn
            conn[1].close()
        reader, writer = await asyncio.open_connection(self.host, self.port,
                                                       ssl=ssl.create_default_context() if self.tls else None,
                                                       limit=1 << 20)
        return reader, writer, h11.Connection(h11.CLIENT)

    async def aclose(self) -> None:
        """Close this loop's idle connections (the engine calls it as a run ends)."""
        while self._idle:
            self._idle.pop()[1].close()
        self._loop = None

    async def _post(self, body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        reader, writer, conn = await self._connection()
        try:
            headers = [*self._headers, ("content-length", str(len(body)))]
            writer.write(conn.send(h11.Request(method="POST", target=self.path, headers=headers))
                         + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
            await writer.drain()
            status, resp_headers, chunks = 0, [], []
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await reader.read(65536)
                    conn.receive_data(data)
                    if not data and conn.their_state is not h11.DONE:
                        raise ConnectionError("connection closed mid-reply")
                elif isinstance(event, h11.Response):
                    status, resp_headers = event.status_code, list(event.headers)
                elif isinstance(event, h11.Data):
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    break
        except BaseException:
            writer.close()
            raise
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
            self._idle.append((reader, writer, conn))
        else:
            writer.close()
        return status, resp_headers, b"".join(chunks)

    def body(self, request: Request) -> bytes:
        d: dict[str, Any] = {"model": self.model, "messages": request.message_dicts(),
                             "max_tokens": request.max_tokens, "temperature": request.temperature}
        if request.seed is not None:
            d["seed"] = request.seed
        if request.logprobs:
            d.update(logprobs=True, top_logprobs=request.top_logprobs)
        return json.dumps(d).encode()

    async def generate(self, request: Request) -> Response:
        try:
            code, headers, content = await self._post(self.body(request))  # the caller bounds the time
        except (OSError, h11.ProtocolError) as exc:  # refused, reset or dropped connections, bad framing
            raise TransientError(type(exc).__name__) from None
        if code == 429 or code >= 500:
            hdrs = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}
            raise TransientError(f"HTTP {code}", retry_after_seconds(hdrs))
        if code != 200:
            text = redact(content.decode("utf-8", errors="replace"), self.secrets)
            if code == 400 and is_context_overflow(BackendError(text)):
                return Response("", status="too_long", extra={"reason": text[:300]})
            raise BackendError(redact(f"HTTP {code}: {text}", self.secrets)[:300])
        try:
            out = json.loads(content)
        except ValueError as exc:
            raise malformed(f"{type(exc).__name__}: {exc}", self.secrets) from None
        return self.read_reply(out)

    def read_reply(self, out: Any) -> Response:
        """The first choice's text, first-token log-probabilities and usage; anything missing is malformed."""
        try:
            choices = out.get("choices") if isinstance(out, dict) else None
            if not isinstance(choices, list):
                raise ValueError(f"not a chat completion: {str(out)[:200]!r}")
            if not choices:
                raise ValueError("no choices")
            choice = choices[0]
            message = choice.get("message") or {}
            content = message.get("content")
            if not isinstance(content, str):
                why = message.get("refusal") or choice.get("finish_reason")
                raise ValueError(f"no message content (finish_reason/refusal: {why!r})")
            top = None
            lp = choice.get("logprobs")
            if lp and lp.get("content"):
                top = [(str(t["token"]), float(t["logprob"])) for t in lp["content"][0].get("top_logprobs") or []]
            usage = out.get("usage") or {}
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise malformed(str(exc), self.secrets) from None
        return Response(redact(content, self.secrets, shapes=False), top, prompt if isinstance(prompt, int) else None,
                        completion if isinstance(completion, int) else None)


class _Endpoint:
    """What :meth:`JudgeSpec.bind` reads from a backend's ``client``: its base URL."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
