"""LLMBar: every evaluator x strategy in the shared subsets reproduces the authors' statistics.json."""

import re

import pandas as pd
import pytest

from judgecal.audit.alignment import judge_metrics
from judgecal.data.datasets import load_llmbar
from judgecal.data.registry import LLMBAR_SUBSETS

SHARED = ["llmbar/Natural", "llmbar/Processed/MT-Bench", "llmbar/Processed/LLMEval^2"]


def _frac(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+) / (\d+) = ", text)
    assert m, text
    return int(m.group(1)), int(m.group(2))


def _pct(text: str) -> float:
    return float(text.split("=")[-1].strip().rstrip("%")) / 100


@pytest.mark.parametrize("name", SHARED)
def test_statistics_json_reproduced(mirror, name):
    ds = load_llmbar(name)
    truth = pd.Series({a.item_id: a.label for a in ds.annotations})
    frame = pd.DataFrame([j.__dict__ for j in ds.judgments])
    judges = sorted(frame["judge"].unique())
    assert judges == sorted(ds.statistics), "every recorded judge has its statistics"
    assert len(judges) >= 8
    for judge in judges:
        st = ds.statistics[judge]
        m = judge_metrics(frame[frame["judge"] == judge], truth, invalid_as="wrong", n_boot=50)
        n = len(truth)
        for key, metric in (("correct_False", "accuracy_AB"), ("correct_True", "accuracy_BA"),
                            ("correct_both", "accuracy_both"), ("equal", "position_consistency")):
            num, den = _frac(str(st[key]))
            assert den == n == m[metric]["n"], (judge, key)
            assert round(m[metric]["estimate"] * n) == num, (judge, key, m[metric])
            assert m[metric]["estimate"] == pytest.approx(_pct(str(st[key])), abs=1e-9)
        assert m["accuracy"]["estimate"] == pytest.approx(_pct(str(st["correct_average"])), abs=5e-4)
        # the average of the two orders, exactly
        avg = (_frac(str(st["correct_False"]))[0] + _frac(str(st["correct_True"]))[0]) / (2 * n)
        assert m["accuracy"]["estimate"] == pytest.approx(avg, abs=1e-9)


def test_judge_names_follow_the_authors(mirror):
    ds = load_llmbar("llmbar/Natural")
    names = {j.judge for j in ds.judgments}
    assert "replay/llmbar/GPT-4/Swap_CoT" in names
    assert "replay/llmbar/ChatGPT-0301/Vanilla_1shot" in names
    assert {j.order for j in ds.judgments} == {"AB", "BA"}
    assert all(a.annotator == "llmbar-gold" for a in ds.annotations)


def test_every_subset_is_registered():
    assert set(LLMBAR_SUBSETS) == {
        "llmbar/Natural", "llmbar/Adversarial/Neighbor", "llmbar/Adversarial/GPTInst",
        "llmbar/Adversarial/GPTOut", "llmbar/Adversarial/Manual", "llmbar/Processed/MT-Bench",
        "llmbar/Processed/LLMEval^2", "llmbar/Processed/FairEval",
    }
