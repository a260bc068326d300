"""``anthropic/<model>``: the official Anthropic SDK (Messages API). No token log-probabilities.

The key comes from ``ANTHROPIC_API_KEY`` (never stored; removed from every message that leaves the
backend). A reply that cannot be read is a recorded error. SDK retries are off: the engine retries
429, 5xx (529 overloaded included), timeouts and dropped connections.
"""

from __future__ import annotations

import asyncio
import inspect
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


def translate_anthropic_error(exc: Exception, secrets: tuple[str | None, ...] = ()) -> Exception:
    """Map an ``anthropic`` SDK exception to :class:`TransientError` or :class:`BackendError`."""
    import anthropic

    return translate_sdk_error(exc, (anthropic.APITimeoutError, anthropic.APIConnectionError),
                               anthropic.APIStatusError, secrets)


class AnthropicBackend(PerLoopClient):
    name = "anthropic"

    def __init__(self, model: str, api_key: str | None = None, base_url: str | None = None,
                 max_concurrency: int = 64, timeout_s: float = 120.0, http_client: Any = None) -> None:
        from anthropic import AsyncAnthropic

        self.model = model
        self.max_concurrency = max_concurrency
        key = api_key or env_key("ANTHROPIC_API_KEY")
        if not key:
            raise BackendError("anthropic backend needs ANTHROPIC_API_KEY in the environment")
        self.secrets = (key,)
        self._make = lambda: AsyncAnthropic(api_key=key, base_url=base_url, max_retries=0, timeout=timeout_s,
                                            http_client=http_client)
        self.client = self._make()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._owns_http = http_client is None
        # Recent SDK releases no longer take sampling settings; the provider's defaults then apply.
        self._takes_temperature = "temperature" in inspect.signature(self.client.messages.create).parameters

    async def generate(self, request: Request) -> Response:
        import anthropic

        system = "\n\n".join(c for r, c in request.messages if r == "system")
        msgs = [{"role": r, "content": c} for r, c in request.messages if r != "system"]
        kwargs: dict[str, Any] = {"model": self.model, "messages": msgs, "max_tokens": request.max_tokens}
        if self._takes_temperature:
            kwargs["temperature"] = request.temperature
        if system:
            kwargs["system"] = system
        try:
            out = await self._client().messages.create(**kwargs)
        except anthropic.BadRequestError as exc:
            if "too long" in str(exc).lower() or "context" in str(exc).lower():
                return Response("", status="too_long", extra={"reason": redact(str(exc), self.secrets)[:300]})
            raise translate_anthropic_error(exc, self.secrets) from None
        except anthropic.AnthropicError as exc:
            raise translate_anthropic_error(exc, self.secrets) from None
        except ValueError as exc:  # a 200 whose body the SDK cannot decode (JSON, validation)
            raise malformed(f"{type(exc).__name__}: {exc}", self.secrets) from None
        try:
            blocks = out.content
            if not isinstance(blocks, list):
                raise TypeError(f"not a message: {str(out)[:200]!r}")
            text = "".join(b.text for b in blocks if getattr(b, "type", None) == "text" and isinstance(b.text, str))
            if not text and not blocks:
                raise ValueError(f"no content (stop_reason {getattr(out, 'stop_reason', None)!r})")
            usage = out.usage
            tokens = (usage.input_tokens, usage.output_tokens)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise malformed(str(exc), self.secrets) from None
        return Response(redact(text, self.secrets, shapes=False), None, *tokens)
