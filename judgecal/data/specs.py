"""A judge spec, the record: backend, model, rubric and every output-changing parameter
(:mod:`judgecal.judges.spec` reads, checks and resolves specs; the record lives here, in the data layer, so
that importers and the store hold specs without depending on the judges).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from judgecal.data.records import stable_hash

VENDOR_ENDPOINTS = frozenset({"https://api.openai.com/v1", "https://api.anthropic.com"})
# a query parameter whose name says it carries a credential (``?api-key=``, ``?access_token=``, ``?sig=``)
_SECRET_QUERY = re.compile(r"key|token|secret|passw|auth|sig|credential|session", re.IGNORECASE)


@dataclass(frozen=True)
class JudgeSpec:
    """One judge. Parameters that do not apply (a recorded judge's) are ``None``."""

    backend: str
    model: str
    rubric: str = "pairwise"
    rubric_hash: str = ""
    temperature: float | None = 0.0
    max_tokens: int | None = 8
    logprobs: bool | None = True
    top_logprobs: int | None = 10
    identity: str = ""
    endpoint: str = ""
    options: tuple[tuple[str, Any], ...] = ()
    name: str = ""
    run_options: tuple[tuple[str, Any], ...] = ()
    origin: str = ""  # the file it came from (messages only)

    @property
    def base_name(self) -> str:
        """The name it is shown under while no other spec shares it."""
        return self.name or f"{self.backend}/{self.model}"

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON: every field that changes the output (not the name, not run options)."""
        d: dict[str, Any] = {"backend": self.backend, "model": self.model, "identity": self.identity,
                             "endpoint": self.endpoint, "rubric": self.rubric, "rubric_hash": self.rubric_hash,
                             "temperature": self.temperature, "max_tokens": self.max_tokens,
                             "logprobs": self.logprobs,
                             "top_logprobs": self.top_logprobs if self.logprobs is not False else None,
                             "options": dict(self.options)}
        return {k: v for k, v in d.items() if v not in (None, "", {})}

    @property
    def spec_hash(self) -> str:
        return stable_hash(self.to_dict())

    def call_identity(self) -> str:
        """The model as the cache key names it: the backend's identity, the endpoint of a server that
        is not the vendor's own, and any output-changing option."""
        ident = self.identity or self.model
        if self.endpoint and self.endpoint not in VENDOR_ENDPOINTS:
            ident += f"@{self.endpoint}"
        if self.options:
            ident += json.dumps(dict(self.options), sort_keys=True, default=str)
        return ident

    def backend_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`judgecal.judges.registry.make_backend`."""
        return {**dict(self.options), **dict(self.run_options)}

    def bind(self, backend: Any, rubric: Any) -> JudgeSpec:
        """This spec as run by ``backend`` with ``rubric``: the model identity, endpoint and rubric
        (name and content hash) filled in from what will actually run."""
        client = getattr(backend, "client", None)
        endpoint = str(getattr(client, "base_url", "") or "").rstrip("/") if client is not None else ""
        endpoint = without_credentials(endpoint)  # e.g. from OPENAI_BASE_URL: never stored with a key
        options = tuple((k, v) for k, v in self.options if k != "base_url")  # the endpoint says it
        return replace(self, backend=backend.name, model=backend.model,
                       identity=str(getattr(backend, "identity", None) or backend.model), endpoint=endpoint,
                       options=options, rubric=rubric.name, rubric_hash=rubric.version)

    @classmethod
    def replay(cls, judge: str) -> JudgeSpec:
        """A recorded judge (``replay/<dataset>/<judge>``): backend ``replay``, no parameters."""
        return cls(backend="replay", model=judge.removeprefix("replay/"), rubric="", temperature=None,
                   max_tokens=None, logprobs=None, top_logprobs=None, name=judge)


def http_url_problem(url: Any, example: str) -> str | None:
    """Why ``url`` is not an ``http(s)://host[:port]...`` address (``example`` shows one), or ``None``:
    text without spaces or control characters, parsed by :func:`urllib.parse.urlsplit` with a valid port,
    an http(s) scheme and a host, and a port other than 0."""
    if not isinstance(url, str) or not url.strip():
        return f"must be a URL such as {example}, got {url!r}"
    if any(c.isspace() or not c.isprintable() for c in url):
        return f"{url!r} is not a URL (it holds spaces or control characters)"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"{url!r} is not a URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url!r} is not an http(s) URL with a host, such as {example}"
    if port == 0:
        return f"{url!r}: port 0 is not a server's port"
    return None


def url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be a judge's server address, or ``None``: an ``http(s)://host[:port][/path]``
    without credentials. A key in the address (``http://user:KEY@host``, ``?api-key=KEY``) would be
    stored with the spec; keys come from the environment (``OPENAI_API_KEY``)."""
    if problem := http_url_problem(url, "http://127.0.0.1:8000/v1"):
        return problem
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        return "holds credentials (user:password@); give the key in OPENAI_API_KEY (or ANTHROPIC_API_KEY), never in the URL"
    if any(_SECRET_QUERY.search(k) for k, _ in parse_qsl(parts.query, keep_blank_values=True)):
        return "holds a credential in its query (?key=...); give the key in OPENAI_API_KEY, never in the URL"
    if parts.fragment:
        return f"{url!r}: a server address has no #fragment"
    return None


def without_credentials(url: str) -> str:
    """``url`` without a user:password@ part and without query parameters named like credentials."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return ""
    secret_query = any(_SECRET_QUERY.search(k) for k, _ in parse_qsl(parts.query, keep_blank_values=True))
    if parts.username is None and parts.password is None and not secret_query:
        return url  # unchanged, so the spec hash of a plain address never moves
    if ":" in host:
        host = f"[{host}]"
    query = "&".join(f"{k}={v}" for k, v in parse_qsl(parts.query, keep_blank_values=True)
                     if not _SECRET_QUERY.search(k))
    return parts._replace(netloc=host + port, query=query, fragment="").geturl()
