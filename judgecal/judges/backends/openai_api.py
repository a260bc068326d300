"""``openai/<model>``: the official SDK against any OpenAI-compatible base URL.

OpenAI itself, ``vllm serve`` or ``llama_cpp.server``. The key comes from ``OPENAI_API_KEY``
(never stored); ``OPENAI_BASE_URL`` or ``base_url=`` picks the server. The SDK's own retries are
off: the engine retries.
"""

from __future__ import annotations

import os
from typing import Any

from judgecal.judges.base import BackendError, Request, Response, translate_sdk_error


def translate_openai_error(exc: Exception) -> Exception:
    """Map an ``openai`` SDK exception to :class:`TransientError` or :class:`BackendError`."""
    import openai

    return translate_sdk_error(exc, (openai.APITimeoutError, openai.APIConnectionError), openai.APIStatusError)


def is_context_overflow(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(s in text for s in ("context length", "context_length", "maximum context", "too long", "exceed"))


class OpenAIBackend:
    name = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 max_concurrency: int = 256, timeout_s: float = 120.0, http_client: Any = None) -> None:
        from openai import AsyncOpenAI

        self.model = model
        self.max_concurrency = max_concurrency
        base = base_url or os.environ.get("OPENAI_BASE_URL")
        key = api_key or os.environ.get("OPENAI_API_KEY") or ("sk-local" if base else None)
        if key is None:
            raise BackendError("openai backend needs OPENAI_API_KEY (or a base_url for a local server)")
        self.client = AsyncOpenAI(api_key=key, base_url=base, max_retries=0, timeout=timeout_s,
                                  http_client=http_client)

    async def generate(self, request: Request) -> Response:
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": request.message_dicts(),
                                  "max_tokens": request.max_tokens, "temperature": request.temperature}
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.logprobs:
            kwargs.update(logprobs=True, top_logprobs=request.top_logprobs)
        try:
            out = await self.client.chat.completions.create(**kwargs)
        except openai.BadRequestError as exc:
            if is_context_overflow(exc):
                return Response("", status="too_long", extra={"reason": str(exc)[:300]})
            raise translate_openai_error(exc) from None
        except openai.OpenAIError as exc:
            raise translate_openai_error(exc) from None
        choice = out.choices[0]
        top = None
        if choice.logprobs is not None and choice.logprobs.content:
            top = [(t.token, float(t.logprob)) for t in choice.logprobs.content[0].top_logprobs]
        usage = out.usage
        return Response(choice.message.content or "", top,
                        usage.prompt_tokens if usage else None, usage.completion_tokens if usage else None)
