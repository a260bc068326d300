"""vllm cannot run here: its translation layer is kept thin and tested on vllm's output shapes."""

from types import SimpleNamespace

import pytest

from judgecal.judges.backends.vllm_offline import sampling_kwargs, to_response
from judgecal.judges.base import Request
from judgecal.judges.registry import UnknownJudgeError, make_backend


def test_sampling_kwargs():
    req = Request((("user", "hi"),), max_tokens=5, temperature=0.7, seed=3, logprobs=True, top_logprobs=4)
    assert sampling_kwargs(req) == {"max_tokens": 5, "temperature": 0.7, "seed": 3, "logprobs": 4}
    assert "logprobs" not in sampling_kwargs(Request((("user", "hi"),), logprobs=False))


def test_to_response_reads_first_token_logprobs():
    lp = {7: SimpleNamespace(logprob=-0.1, decoded_token="A", rank=1),
          9: SimpleNamespace(logprob=-2.5, decoded_token="B", rank=2),
          11: SimpleNamespace(logprob=float("-inf"), decoded_token="x", rank=3)}
    out = SimpleNamespace(prompt_token_ids=[1, 2, 3], outputs=[SimpleNamespace(
        text="A", token_ids=[7], logprobs=[lp])])
    r = to_response(out)
    assert r.text == "A" and r.prompt_tokens == 3 and r.completion_tokens == 1
    assert r.top_logprobs == [("A", -0.1), ("B", -2.5)]


def test_missing_vllm_names_the_extra():
    pytest.importorskip("judgecal")
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(UnknownJudgeError, match=r"judgecal-toolkit\[vllm\]"):
            make_backend("vllm/HuggingFaceTB/SmolLM2-135M-Instruct")
    else:
        pytest.skip("vllm is installed")


def test_unknown_backend_and_bad_name():
    with pytest.raises(UnknownJudgeError, match="unknown backend"):
        make_backend("nope/model")
    with pytest.raises(UnknownJudgeError, match="<backend>/<model>"):
        make_backend("smollm2")
