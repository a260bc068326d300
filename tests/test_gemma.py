"""The second embedded judge, for real: Gemma 3 270M (another model family than SmolLM2) via llama.cpp
and transformers, on real PandaLM items; cross-judge agreement of the two embedded judges."""

import asyncio
import json

import numpy as np
import pytest
from conftest import copy_workspace

from judgecal.judges.backends.local import MODELS, completion_prompt, model_path
from judgecal.judges.base import Request


@pytest.fixture(scope="module")
def gemma_backend():
    from judgecal.judges.backends.local import LocalBackend

    return LocalBackend("gemma3", workers=1)


def test_the_shipped_file_is_the_pretrained_gemma3_270m_under_the_gemma_terms():
    from gguf import GGUFReader

    r = GGUFReader(str(model_path("gemma3")))
    meta = {k: r.fields[k].contents() for k in ("general.architecture", "general.name", "general.license",
                                                 "general.size_label", "general.file_type")}
    assert meta == {"general.architecture": "gemma3", "general.name": "Gemma 3 270m", "general.license": "gemma",
                    "general.size_label": "270M", "general.file_type": 15}  # 15 = MOSTLY_Q4_K_M
    # no chat template: not the instruction-tuned -it model, so it is prompted as a plain document
    assert "tokenizer.chat_template" not in r.fields and MODELS["gemma3"].prompt == "completion"
    assert MODELS["smollm2"].prompt == "chat"


@pytest.mark.parametrize("judge", ["local/gemma3", "hf/gemma3"])
def test_without_the_gemma_extra_one_line_names_it_and_nothing_is_written(judge, tmp_path, monkeypatch, capsys):
    """The chunk wheel missing (and no assembled copy in the cache): one line naming the extra to install,
    no judgment, no stored spec, nothing in the cache."""
    import sys

    from judgecal.cli import main
    from judgecal.data.store import Workspace

    (tmp_path / "pairs.jsonl").write_text(json.dumps({"id": "p1", "prompt": "2 + 2?", "response_a": "4",
                                                      "response_b": "5"}) + "\n")
    ws = str(tmp_path / "ws")
    assert main(["import", str(tmp_path / "pairs.jsonl"), "-w", ws]) == 0
    capsys.readouterr()
    monkeypatch.setenv("JUDGECAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, MODELS["gemma3"].package, None)  # import fails as if not installed
    assert main(["judge", "--judge", judge, "-w", ws]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'gemma3'" in err[0] and "judgecal-toolkit[gemma]" in err[0], err
    with Workspace(tmp_path / "ws") as w:
        assert len(w.judgments_repo.judgments_frame()) == 0 and not w.judgments_repo.judge_specs()
    assert not (tmp_path / "cache").exists()


def test_completion_prompt_renders_system_shots_and_the_answer_cue():
    msgs = (("system", "Judge."), ("user", "Q1"), ("assistant", "A"), ("user", "Q2"))
    assert completion_prompt(msgs) == "Judge.\n\nQ1\nAnswer: A\n\nQ2\nAnswer:"


def test_generates_with_first_token_logprobs(gemma_backend):
    req = Request((("user", "Which is larger, 3 or 7? Reply with one number."),), 4, 0.0, 0, True, 5)
    out = asyncio.run(gemma_backend.generate(req))
    assert out.status == "ok" and out.prompt_tokens and out.prompt_tokens > 5
    assert out.top_logprobs is not None and len(out.top_logprobs) == 5
    lps = [lp for _, lp in out.top_logprobs]
    assert lps == sorted(lps, reverse=True) and all(lp <= 0 for lp in lps)
    assert asyncio.run(gemma_backend.generate(req)).text == out.text  # greedy is repeatable
    assert gemma_backend.identity == "gemma3" and gemma_backend.weights == "original"


def test_engine_judges_pandalm_items_in_both_orders(pandalm_ws, gemma_backend, tmp_path):
    from judgecal.data.store import Workspace
    from judgecal.judges.engine import Engine
    from judgecal.judges.rubric import load_rubric

    items = sorted(pandalm_ws.items_repo.items(), key=lambda it: it.item_id)[:6]
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(items)
    eng = Engine(ws, gemma_backend, load_rubric("pairwise"), judge="local/gemma3", progress=False)
    st = eng.run(eng.plan(items))
    assert st.done == 12 and st.errors == 0
    df = ws.judgments_repo.judgments_frame()
    assert set(df["order"]) == {"AB", "BA"} and df.groupby("item_id").size().eq(2).all()
    assert df["verdict"].isin(["A", "B", "tie", "invalid"]).all()
    assert (df["verdict"] != "invalid").mean() >= 0.5  # the base model mostly answers with a label
    assert df["p_a"].notna().all() and df["p_a"].between(0, 1).all()
    env = json.loads(df["env"].iloc[0])
    assert env["backend"] == "local" and env["quantisation"] == "q4_k_m"
    assert env["model_file"] == "gemma-3-270m.Q4_K_M.gguf" and env["model_sha256"] == "a5fd3b62230aa5ec"
    # a second run is answered from the cache
    assert eng.run(eng.plan(items)).done == 0 and ws.judgments_repo.count_judgments() == 12
    ws.close()


def test_cross_judge_agreement_of_the_two_embedded_judges(pandalm_ws, tmp_path, capsys):
    from sklearn.metrics import cohen_kappa_score

    from judgecal.audit.stability_section import summarise_run
    from judgecal.cli import main
    from judgecal.data.store import Workspace

    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    ws.close()
    w = ["-w", str(tmp_path / "ws")]
    assert main(["stability", "run", "--judge", "local/smollm2", "--axes", "judge", "--items", "8",
                 "--deterministic", "--quiet", *w]) == 0
    assert main(["stability", "score", "--n-boot", "50", *w]) == 0
    out = capsys.readouterr().out
    assert "beside local/gemma3: accuracy" in out and "None" not in out
    assert "no Stability Score: the run holds no variant of the judge itself" in out  # why no sigma is printed
    assert "headline figures per variant: swap-debiased verdicts" in out  # not the audit's per-order accuracy
    ws = Workspace(tmp_path / "ws")
    [run] = ws.stability_repo.stability_runs()
    variants = ws.stability_repo.stability_variants(run["run_id"])
    assert [v["name"] for v in variants] == ["base", "judge=local/gemma3"] and all(v["paid"] == 16 for v in variants)
    res = {"run_id": run["run_id"]}
    s = summarise_run(ws, run, n_boot=50)
    # the other judge is a reference, not a variant of this judge: no σ from one variant, no guard verdict on it
    assert s["figures"]["accuracy"]["n_variants"] == 1 and s["figures"]["accuracy"]["sigma_pp"] is None
    assert s["guard"]["status"] == "pass"
    [cj] = s["cross_judge"]
    v = ws.stability_repo.stability_verdicts(res["run_id"]).pivot(index="item_id", columns="variant", values="verdict")
    both = v[0].isin(["A", "B", "tie"]) & v[1].isin(["A", "B", "tie"])
    assert cj["judge"] == "local/gemma3" and cj["n"] == int(both.sum()) > 0
    assert cj["item_agreement"] == pytest.approx(float(np.mean(v[0][both] == v[1][both])))
    a, b = v[0][both].to_numpy(dtype=object), v[1][both].to_numpy(dtype=object)
    if len(set(a)) > 1 or len(set(b)) > 1:
        assert cj["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-9)
    accs = s["figures"]["accuracy"]["figures"]
    assert cj["difference_pp"] == pytest.approx(100 * (accs[1] - accs[0]))
    ws.close()


def test_a_judge_level_that_cannot_load_is_refused_before_any_call(pandalm_ws, tmp_path, capsys):
    from judgecal.cli import main
    from judgecal.data.store import Workspace

    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    before = ws.judgments_repo.count_judgments()
    ws.close()
    capsys.readouterr()
    assert main(["stability", "run", "--judge", "local/smollm2", "--axes", "judge", "--judges", "local/bogus",
                 "--items", "2", "--quiet", "-w", str(tmp_path / "ws")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown local model 'bogus'" in err[0], err
    with Workspace(tmp_path / "ws") as w:  # the base variant did not run first: nothing paid, nothing stored
        assert w.judgments_repo.count_judgments() == before and not w.stability_repo.stability_runs()


def test_hf_backend_loads_the_q4_k_m_gguf_and_judges_like_llama_cpp(gemma_backend):
    from judgecal.judges.registry import make_backend

    hf = make_backend("hf/gemma3")
    assert type(hf.lm).__name__ == "Gemma3ForCausalLM" and hf.completion
    req = Request((("system", "Answer the question."), ("user", "What is the capital of France? One word.")),
                  3, 0.0, 0, True, 5)
    a, b = asyncio.run(hf.generate(req)), asyncio.run(gemma_backend.generate(req))
    assert a.text and a.text == a.text.strip() and "\n\n" not in a.text
    # the same Q4_K_M weights, dequantised to float32 by transformers: the same greedy first token
    assert a.top_logprobs[0][0].strip() == b.top_logprobs[0][0].strip()


def test_the_judge_axis_refuses_what_is_not_another_model_on_the_same_backend():
    from judgecal.judges.spec import resolve_judge
    from judgecal.stability.runs import StabilityError, plan_variants

    base = resolve_judge("local/smollm2")[0]
    [_, v] = plan_variants(base, ["judge"])
    assert (v.name, v.spec.backend, v.spec.model, v.spec.temperature) == ("judge=local/gemma3", "local", "gemma3", 0.0)
    with pytest.raises(StabilityError, match=r"keeps the backend \(local/\): 'hf/gemma3'"):
        plan_variants(base, ["judge"], {"judge": ("hf/gemma3",)})
    with pytest.raises(StabilityError, match="name another model"):
        plan_variants(base, ["judge"], {"judge": ("local/smollm2",)})
    with pytest.raises(StabilityError, match="name another model"):
        plan_variants(resolve_judge("openai/gpt-4o-mini")[0], ["judge"])
