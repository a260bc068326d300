"""What a backend receives and returns, and the errors it translates SDK exceptions into.

A backend is one module with one async method, ``generate(request) -> Response``. Retries, rate
limits, concurrency, caching and cost live once, in :mod:`judgecal.judges.engine`.
Secrets are removed here, at the boundary: no text that leaves a backend (an error message, a raw
reply) carries an API key or an ``Authorization`` value, so none reaches the database, logs or reports.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any, Protocol

from judgecal.errors import BackendError, TransientError

# Environment variables whose values are secrets wherever they appear.
SECRET_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY")
REDACTED = "[REDACTED]"
# Credential shapes: an auth scheme and its token, ``sk-`` style keys, and the value given to a
# header or field named like a credential (``x-api-key: ...``, ``"api_key": "..."``), quoted or not.
_SCHEME_TOKEN = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
_SK_TOKEN = re.compile(r"\bsk-[A-Za-z0-9_-]{6,}")
_NAMED = re.compile(r"(?i)((?:x-api-key|api[-_]?key|authorization|access[-_]?token|secret)(?:\\?[\"'])?\s*[:=]\s*"
                    r"(?:\\?[\"'])?)(?!\[REDACTED\]|bearer\b|basic\b)[^\s\"'\\,;}]+")


def env_key(name: str) -> str | None:
    """The API key in the environment variable ``name`` (``None`` when unset or empty). A key holding whitespace
    or a control character (a trailing newline pasted with it) is refused at once, naming the variable and never
    the key: sent as it is, every call would fail as if the server could not be reached."""
    key = os.environ.get(name) or None
    if key is not None and any(c.isspace() or not c.isprintable() for c in key):
        raise BackendError(f"{name} holds whitespace or a control character (a trailing newline?); set it to the key "
                           "alone")
    return key


def redact(text: str, secrets: Iterable[str | None] = (), shapes: bool = True) -> str:
    """``text`` with every secret value (``secrets`` and the :data:`SECRET_ENV` variables) and, with
    ``shapes`` (error messages; a model's answer keeps its text), every credential-shaped token
    replaced by ``[REDACTED]``."""
    values = {v for v in (*secrets, *(os.environ.get(k) for k in SECRET_ENV)) if v and len(v) >= 4}
    for v in sorted(values, key=len, reverse=True):
        text = text.replace(v, REDACTED)
    if not shapes:
        return text
    text = _SCHEME_TOKEN.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _SK_TOKEN.sub(REDACTED, text)
    return _NAMED.sub(lambda m: m.group(1) + REDACTED, text)


@dataclass(frozen=True)
class Request:
    messages: tuple[tuple[str, str], ...]
    max_tokens: int = 8
    temperature: float = 0.0
    seed: int | None = None
    logprobs: bool = True
    top_logprobs: int = 10
    # a label judge's labels: a backend that can constrain its decoding (llama.cpp's grammars) answers one of
    # them, then an optional reason on the next line; the others ignore it (their answer is parsed)
    choices: tuple[str, ...] | None = None

    def message_dicts(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]

    def params(self) -> dict[str, object]:
        """The settings that change the output (part of the cache key; ``choices`` only when given)."""
        out: dict[str, object] = {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed,
                                  "logprobs": self.logprobs, "top_logprobs": self.top_logprobs if self.logprobs else None}
        if self.choices is not None:
            out["choices"] = list(self.choices)
        return out


@dataclass
class Response:
    text: str
    top_logprobs: list[tuple[str, float]] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    status: str = "ok"
    extra: dict[str, object] = field(default_factory=dict)


class Backend(Protocol):
    """One judge model behind one async method."""

    name: str
    model: str
    max_concurrency: int

    async def generate(self, request: Request) -> Response: ...


def retry_after_seconds(headers: object) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header, when present and numeric."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    ms = get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from datetime import datetime
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, (when - datetime.now(UTC)).total_seconds())


def translate_sdk_error(exc: Exception, transient: tuple[type[Exception], ...], status: type[Exception],
                        secrets: Iterable[str | None] = ()) -> Exception:
    """Map an SDK exception: ``transient`` types (timeouts, dropped connections), 429 and 5xx
    become :class:`TransientError` (with ``Retry-After``); other HTTP statuses and anything else the
    SDK raises (a reply it cannot read) :class:`BackendError`. Messages are :func:`redact`-ed."""
    if isinstance(exc, transient):
        return TransientError(type(exc).__name__)
    if isinstance(exc, status):
        code = int(getattr(exc, "status_code", 0))
        if code == 429 or code >= 500:
            response = getattr(exc, "response", None)
            return TransientError(f"HTTP {code}", retry_after_seconds(getattr(response, "headers", None)))
        return BackendError(redact(f"HTTP {code}: {exc}", secrets)[:300])
    return BackendError(redact(f"{type(exc).__name__}: {exc}", secrets)[:300])


def malformed(what: str, secrets: Iterable[str | None] = ()) -> BackendError:
    """A 200 reply that cannot be read (not JSON, no choices, no message): a recorded error."""
    return BackendError(redact(f"malformed reply: {what}", secrets)[:300])


class PerLoopClient:
    """An SDK client per event loop: pooled connections belong to the loop that opened them, so a second
    ``Engine.run`` (a new loop) gets a client of its own. Subclasses set ``_make`` (a client factory),
    ``client``, ``_loop = None`` and ``_owns_http`` (whether the pool is theirs to close)."""

    _make: Any
    client: Any
    _loop: asyncio.AbstractEventLoop | None
    _owns_http: bool

    def _client(self) -> Any:
        """The client of the running event loop."""
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop:
            self.client = self._make()
        self._loop = loop
        return self.client

    async def aclose(self) -> None:
        """Close this loop's pooled connections (the engine calls it as a run ends)."""
        if self._loop is not None and self._owns_http:
            await self.client.close()
            self.client, self._loop = self._make(), None
