"""hf/smollm2: transformers + torch on the CPU, loading SmolLM2 from the GGUF file in the wheel."""

import asyncio

import pytest

from judgecal.judges.base import Request


@pytest.fixture(scope="module")
def hf_backend():
    from judgecal.judges.registry import make_backend

    return make_backend("hf/smollm2")


def test_generates_with_logprobs(hf_backend):
    req = Request((("user", "Which is larger, 3 or 7? Reply with one number."),), 4, 0.0, 0, True, 5)
    out = asyncio.run(hf_backend.generate(req))
    assert out.text.strip()
    assert out.prompt_tokens > 5 and 1 <= out.completion_tokens <= 4
    assert len(out.top_logprobs) == 5
    lps = [lp for _, lp in out.top_logprobs]
    assert lps == sorted(lps, reverse=True) and lps[0] <= 0
    assert asyncio.run(hf_backend.generate(req)).text == out.text


def test_agrees_with_llama_cpp_on_the_first_token(hf_backend, local_backend):
    """The same weights through two runtimes should usually pick the same greedy first token."""
    req = Request((("user", "What is the capital of France? Answer in one word."),), 2, 0.0, 0, True, 5)
    a = asyncio.run(hf_backend.generate(req))
    b = asyncio.run(local_backend.generate(req))
    assert a.top_logprobs[0][0].strip() == b.top_logprobs[0][0].strip()
