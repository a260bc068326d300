"""``openai/<model>``: the official SDK against any OpenAI-compatible base URL.

OpenAI itself, ``vllm serve`` or ``llama_cpp.server``. The key comes from ``OPENAI_API_KEY``
(never stored; removed from every message that leaves the backend); ``OPENAI_BASE_URL`` or
``base_url=`` picks the server. The SDK's own retries are off: the engine retries. A 200 reply that
cannot be read (not JSON, no choices, no message) is a recorded error, not an aborted run.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from judgecal.judges.base import (
    BackendError,
    PerLoopClient,
    Request,
    Response,
    env_key,
    malformed,
    redact,
    translate_sdk_error,
)


def translate_openai_error(exc: Exception, secrets: tuple[str | None, ...] = ()) -> Exception:
    """Map an ``openai`` SDK exception to :class:`TransientError` or :class:`BackendError`."""
    import openai

    return translate_sdk_error(exc, (openai.APITimeoutError, openai.APIConnectionError), openai.APIStatusError,
                               secrets)


def is_context_overflow(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(s in text for s in ("context length", "context_length", "maximum context", "too long", "exceed"))


class OpenAIBackend(PerLoopClient):
    name = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 max_concurrency: int = 256, timeout_s: float = 120.0, http_client: Any = None) -> None:
        from openai import AsyncOpenAI

        self.model = model
        self.max_concurrency = max_concurrency
        base = base_url or os.environ.get("OPENAI_BASE_URL")
        key = api_key or env_key("OPENAI_API_KEY") or ("sk-local" if base else None)
        if key is None:
            raise BackendError("openai backend needs OPENAI_API_KEY (or a base_url for a local server)")
        self.secrets = (key,)
        self._make = lambda: AsyncOpenAI(api_key=key, base_url=base, max_retries=0, timeout=timeout_s,
                                         http_client=http_client)
        self.client = self._make()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._owns_http = http_client is None

    async def generate(self, request: Request) -> Response:
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": request.message_dicts(),
                                  "max_tokens": request.max_tokens, "temperature": request.temperature}
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.logprobs:
            kwargs.update(logprobs=True, top_logprobs=request.top_logprobs)
        try:
            out = await self._client().chat.completions.create(**kwargs)
        except openai.BadRequestError as exc:
            if is_context_overflow(exc):
                return Response("", status="too_long", extra={"reason": redact(str(exc), self.secrets)[:300]})
            raise translate_openai_error(exc, self.secrets) from None
        except openai.OpenAIError as exc:
            raise translate_openai_error(exc, self.secrets) from None
        except ValueError as exc:  # a 200 whose body the SDK cannot decode (JSON, validation)
            raise malformed(f"{type(exc).__name__}: {exc}", self.secrets) from None
        return self.read_reply(out)

    def read_reply(self, out: Any) -> Response:
        """The first choice's text, first-token log-probabilities and usage; anything missing is malformed."""
        try:
            choices = getattr(out, "choices", None)
            if not isinstance(choices, list):
                raise ValueError(f"not a chat completion: {str(out)[:200]!r}")
            if not choices:
                raise ValueError("no choices")
            choice = choices[0]
            message = getattr(choice, "message", None)
            content = getattr(message, "content", None)
            if not isinstance(content, str):
                why = getattr(message, "refusal", None) or getattr(choice, "finish_reason", None)
                raise ValueError(f"no message content (finish_reason/refusal: {why!r})")
            top = None
            lp = getattr(choice, "logprobs", None)
            if lp is not None and lp.content:
                top = [(str(t.token), float(t.logprob)) for t in lp.content[0].top_logprobs]
            usage = getattr(out, "usage", None)
            prompt = getattr(usage, "prompt_tokens", None)
            completion = getattr(usage, "completion_tokens", None)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise malformed(str(exc), self.secrets) from None
        return Response(redact(content, self.secrets, shapes=False), top, prompt if isinstance(prompt, int) else None,
                        completion if isinstance(completion, int) else None)
