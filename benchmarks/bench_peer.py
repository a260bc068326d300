"""judgecal's full audit against the PyPI package ``judgecal`` 0.1.0 (the peer), side by side.

One synthetic set of N items x 16 judgments with planted position, verbosity, self-preference,
template and run-to-run effects is written twice: as the peer's ``judgments.jsonl`` and as a
judgecal workspace (the same verdicts; condition -> order / sample / mutation / padded pair). The
peer is installed from the package index into its own virtual environment. Both full audits run
with B = 2,000 bootstrap replicates, alternating, each in a fresh process whose wall time and peak
resident memory (``wait4``) are recorded. Prints JSON with the ratio and each tool's conclusions.

    python benchmarks/bench_peer.py [--items 20000 50000] [--runs 2] [--out FILE]

With several ``--items`` sizes, each size is one entry of ``sizes``. Each entry also holds ``profile``: one more
judgecal audit of the same workspace, step by step (seconds and peak memory after each step). ``floor`` is each
tool's peak memory for the same audit of 100 items: what its process holds whatever the data (imports, buffers).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import audit_profile, fresh, launched_peak_mb, machine  # noqa: E402

from judgecal.data.records import Candidate, Consensus, Item, Judgment  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PEER_VENV = ROOT / ".venv" / "peer-judgecal"
JUDGE = "openai/gpt-4o"  # family openai; its "own" responses are written by gpt-4o
SELF, OTHER = ("judge-self", "gpt-4o", "openai"), ("model-x", "llama-2-13b", "meta")
# planted effects on the judge's logit for "the first shown wins"
QUALITY, POSITION, LENGTH, SELF_PREF, TEMPLATE_SD, TIE_BAND, INVALID = 4.0, 0.6, 0.8, 0.7, 0.8, 0.35, 0.005
TEMPLATES = ("tpl:default", "tpl:v1", "tpl:v2", "tpl:v3", "tpl:v4")
PAD_RATIO = 1.6


def ensure_peer() -> Path:
    exe = PEER_VENV / "bin" / "judgecal"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        subprocess.run([str(PEER_VENV / "bin" / "pip"), "install", "-q", "judgecal==0.1.0"], check=True)
    return exe


def generate(n: int, seed: int = 0) -> dict[str, Any]:
    """Items and the verdicts of every condition, in presented coordinates (first / second)."""
    rng = np.random.default_rng(seed)
    q = rng.random((n, 2))
    gap = q[:, 0] - q[:, 1]
    label = np.where(np.abs(gap) < 0.05, "tie", np.where(gap > 0, "A", "B"))
    lens = np.maximum(60, rng.lognormal(np.log(400), 0.5, (n, 2))).astype(np.int64)
    own = rng.choice(3, n, p=[0.25, 0.25, 0.5])  # 0: A is the judge's own, 1: B is, 2: neither
    self_ab = np.column_stack([own == 0, own == 1]).astype(np.float64)
    tpl_offset = rng.normal(0, TEMPLATE_SD, (n, len(TEMPLATES)))
    tpl_offset[:, 0] = 0.0

    def verdicts(first: int, q1: np.ndarray | None = None, q2: np.ndarray | None = None,
                 l1: np.ndarray | None = None, l2: np.ndarray | None = None, offset: float | np.ndarray = 0.0,
                 self_diff: np.ndarray | None = None) -> np.ndarray:
        second = 1 - first
        q1 = q[:, first] if q1 is None else q1
        q2 = q[:, second] if q2 is None else q2
        l1 = lens[:, first] if l1 is None else l1
        l2 = lens[:, second] if l2 is None else l2
        sd = self_ab[:, first] - self_ab[:, second] if self_diff is None else self_diff
        z = (QUALITY * (q1 - q2) + POSITION + LENGTH * np.log(l1 / l2) + SELF_PREF * sd + offset
             + rng.logistic(size=n))
        v = np.where(z > TIE_BAND, "first", np.where(z < -TIE_BAND, "second", "tie"))
        return np.where(rng.random(n) < INVALID, "invalid", v)

    padded_len = np.rint(lens[:, 0] * PAD_RATIO).astype(np.int64)
    zero = np.zeros(n)
    cond: dict[tuple[str, str, int], np.ndarray] = {}
    for probe in ("position", "self_preference"):
        cond[(probe, "orig", 0)] = verdicts(0)
        cond[(probe, "swap", 0)] = verdicts(1)
    cond[("verbosity", "pad_second", 0)] = verdicts(0, q[:, 0], q[:, 0], lens[:, 0], padded_len, self_diff=zero)
    cond[("verbosity", "pad_first", 0)] = verdicts(0, q[:, 0], q[:, 0], padded_len, lens[:, 0], self_diff=zero)
    for t, tpl in enumerate(TEMPLATES):
        cond[("template", tpl, 0)] = verdicts(0, offset=tpl_offset[:, t])
    for r in range(5):
        cond[("stability", "rep", r)] = verdicts(0)
    return {"n": n, "q": q, "label": label, "lens": lens, "padded_len": padded_len, "own": own, "cond": cond}


def _label_first(label: np.ndarray, first_is_a: bool) -> np.ndarray:
    flip = {"A": "second", "B": "first", "tie": "tie"} if not first_is_a else {"A": "first", "B": "second", "tie": "tie"}
    return np.vectorize(flip.get)(label)


def write_peer(data: dict[str, Any], path: Path) -> int:
    n, q, lens, own = data["n"], data["q"], data["lens"], data["own"]
    authors = np.array([[SELF[0] if own[i] == s else OTHER[0] for s in (0, 1)] for i in range(n)])
    rows = 0
    with path.open("w") as fh:
        for (probe, condition, rep), v in data["cond"].items():
            padded = probe == "verbosity"
            first_is_a = condition != "swap"
            f, s = (0, 1) if first_is_a else (1, 0)
            if padded:
                lf, ls = ((lens[:, 0], data["padded_len"]) if condition == "pad_second"
                          else (data["padded_len"], lens[:, 0]))
                af = as_ = authors[:, 0]
                qf = qs = q[:, 0]
                lab = np.full(n, "tie")
            else:
                lf, ls, af, as_, qf, qs = lens[:, f], lens[:, s], authors[:, f], authors[:, s], q[:, f], q[:, s]
                lab = _label_first(data["label"], first_is_a)
            tpl = condition if probe == "template" else "tpl:default"
            for i in range(n):
                meta = {"probe": probe, "condition": condition, "item_id": f"item{i}", "repeat": rep,
                        "first_is_a": first_is_a, "first_len": int(lf[i]), "second_len": int(ls[i]),
                        "first_author": str(af[i]), "second_author": str(as_[i]), "first_latent_q": float(qf[i]),
                        "second_latent_q": float(qs[i]), "label_first": str(lab[i]), "template_id": tpl}
                verdict = str(v[i])
                raw = {"first": "[[A]]", "second": "[[B]]", "tie": "[[C]]"}.get(verdict, "no verdict")
                fh.write(json.dumps({"custom_id": f"{probe}|{condition}|{rep}|item{i}", "verdict": verdict,
                                     "raw_text": raw, "meta": meta}) + "\n")
                rows += 1
    return rows


def _text(n_chars: int) -> str:
    """Filler with about one word per six characters (judgecal measures length in words)."""
    return " ".join(["word"] * max(1, int(n_chars) // 6))


def write_judgecal(data: dict[str, Any], folder: Path) -> int:
    """The same verdicts as judgecal records: position / self-preference / repeats / default template are
    samples of the unmutated prompt, the other templates mutations, the padding pairs probe items."""
    n, lens, own = data["n"], data["lens"], data["own"]
    who = [SELF, OTHER]
    items, pads, cons = [], [], []
    for i in range(n):
        ca = Candidate(_text(lens[i, 0]), who[int(own[i] != 0)][1], who[int(own[i] != 0)][2])
        cb = Candidate(_text(lens[i, 1]), who[int(own[i] != 1)][1], who[int(own[i] != 1)][2])
        items.append(Item(f"item{i}", "Prompt", [ca, cb], source="synthetic"))
        pads.append(Item(f"item{i}#pad", "Prompt", [ca, Candidate(_text(data["padded_len"][i]), ca.model, ca.family)],
                         source="probe:padding", metadata={"base_item": f"item{i}", "padded": "B"}))
        cons.append(Consensus(f"item{i}", "gold", str(data["label"][i])))
    where = {("position", "orig", 0): ("", "AB", 0, "none"), ("position", "swap", 0): ("", "BA", 0, "none"),
             ("self_preference", "orig", 0): ("", "AB", 1, "none"),
             ("self_preference", "swap", 0): ("", "BA", 1, "none"),
             ("verbosity", "pad_second", 0): ("#pad", "AB", 0, "none"),
             ("verbosity", "pad_first", 0): ("#pad", "BA", 0, "none"),
             ("template", "tpl:default", 0): ("", "AB", 2, "none")}
    where.update({("template", t, 0): ("", "AB", 0, t) for t in TEMPLATES[1:]})
    where.update({("stability", "rep", r): ("", "AB", 3 + r, "none") for r in range(5)})
    to_item = {"AB": {"first": "A", "second": "B"}, "BA": {"first": "B", "second": "A"}}
    ws = Workspace(folder)
    ws.items_repo.add_items(items + pads)
    ws.annotations_repo.set_consensus(cons, "gold")
    rows = 0
    for key, v in data["cond"].items():
        suffix, order, sample, mutation = where[key]
        batch = []
        for i in range(n):
            shown = str(v[i])
            verdict = to_item[order].get(shown, shown)
            batch.append(Judgment(key=f"{key}|{i}", item_id=f"item{i}{suffix}", judge=JUDGE, spec_hash="bench",
                                  order=order, mutation=mutation, sample=sample, raw=shown, verdict=verdict,
                                  status="invalid" if shown == "invalid" else "ok", prompt_tokens=600,
                                  completion_tokens=4, latency_s=0.8, cost_usd=0.0016))
        rows += ws.judgments_repo.add_judgments(batch)
    ws.close()
    return rows


def timed(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """``cmd``'s wall seconds and its own peak memory (started by :func:`_common.fresh`)."""
    t0 = time.perf_counter()
    res = subprocess.run(fresh(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed: {res.stderr[-2000:]}")
    return {"seconds": round(wall, 2), "peak_rss_mb": launched_peak_mb(res.stderr)}


def peer_conclusions(card: Path) -> dict[str, Any]:
    doc = json.loads(card.read_text())
    out: dict[str, Any] = {"flags": doc.get("overall_flags", [])}
    for probe in doc["probes"]:
        for m in probe["metrics"]:
            out[m["name"]] = {k: m.get(k) for k in ("estimate", "ci_low", "ci_high", "p_value", "q_value")}
    return out


# planted effect -> (the peer's flag, judgecal's flag)
EFFECTS = {"position": ("position_bias_detected", "position_bias:first"),
           "verbosity (padding)": ("verbosity_bias_detected", "verbosity_bias:padding"),
           "self-preference": ("self_preference_detected", "self_preference:more_than_humans"),
           "run-to-run instability": ("instability_high", "unstable")}


def same_conclusions(peer: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    out = {name: {"peer": pf in peer["flags"], "judgecal": of in ours["flags"]} for name, (pf, of) in EFFECTS.items()}
    for v in out.values():
        v["agree"] = v["peer"] == v["judgecal"]
    # the peer reports template sensitivity descriptively (kappa, max flip), without a test or flag
    out["template sensitivity"] = {"peer": "descriptive only", "judgecal": "prompt_sensitive" in ours["flags"]}
    return out


def our_conclusions(report: Path) -> dict[str, Any]:
    j = json.loads(report.read_text())["judges"][JUDGE]
    keep = ("first_position_rate", "position_consistency", "flip_rate", "pad_pick_rate", "prefer_longer_rate",
            "verbosity_excess", "lc_win_rate", "self_preference_excess", "prompt_flip_rate", "instability_rate")
    out = {k: {f: j["metrics"][k].get(f) for f in ("estimate", "ci_low", "ci_high", "p", "q")}
           for k in keep if k in j["metrics"]}
    out["flags"] = j["flags"]
    out["fleiss_kappa_across_templates"] = j["prompt_sensitivity"]["fleiss_kappa_across_templates"]
    return out


def prepare(items: int, t: Path) -> tuple[int, int]:
    """The same ``items`` written into ``t`` for both tools; the judgments each holds."""
    data = generate(items)
    return write_peer(data, t / "judgments.jsonl"), write_judgecal(data, t / "ws")


def audits(t: Path, n_boot: int, peer: Path) -> dict[str, list[str]]:
    """Each tool's full audit of what :func:`prepare` wrote into ``t``."""
    ours = Path(sys.executable).parent / "judgecal"
    return {"peer": [str(peer), "analyze", "--judgments", str(t / "judgments.jsonl"), "--judge", JUDGE,
                     "-o", str(t / "peer"), "--n-boot", str(n_boot)],
            "judgecal": [str(ours), "audit", "-w", str(t / "ws"), "--consensus", "gold", "--out", str(t / "ours"),
                         "--n-boot", str(n_boot)]}


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "JUDGECAL_WORKSPACE"}


def one_size(items: int, runs_wanted: int, n_boot: int, peer: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        t0 = time.perf_counter()
        n_peer, n_ours = prepare(items, t)
        prep = time.perf_counter() - t0
        env, cmds = _env(), audits(t, n_boot, peer)
        runs: dict[str, list[dict[str, Any]]] = {"peer": [], "judgecal": []}
        load = [round(x, 2) for x in os.getloadavg()]
        # judgecal's first audit of a workspace reads the judgments out of SQLite, draws its bootstrap weights and
        # leaves both in cache/; a later audit (the same judgments) reads them back. Both are reported, each the
        # best of as many runs as the peer's, all alternating so that each sees the same machine load.
        firsts: list[dict[str, Any]] = []
        for _ in range(runs_wanted):
            shutil.rmtree(t / "ws" / "cache", ignore_errors=True)  # nothing kept from an earlier audit
            firsts.append(timed(cmds["judgecal"], env))
            for tool, runs_of in runs.items():
                runs_of.append(timed(cmds[tool], env))
        best = {k: {"seconds": min(r["seconds"] for r in v), "peak_rss_mb": max(r["peak_rss_mb"] for r in v)}
                for k, v in {**runs, "first": firsts}.items()}
        first = best.pop("first")
        peer_c, our_c = peer_conclusions(t / "peer" / "card.json"), our_conclusions(t / "ours" / "audit.json")
        profile = audit_profile(str(t / "ws"), "gold", n_boot)
        return {
            "items": items, "judgments_per_item": 16, "judgments": {"peer": n_peer, "judgecal": n_ours},
            "runs": runs, "best": best, "load_average_at_start": load,
            "speedup": round(best["peer"]["seconds"] / best["judgecal"]["seconds"], 2),
            "memory_ratio": round(best["peer"]["peak_rss_mb"] / best["judgecal"]["peak_rss_mb"], 2),
            "judgecal_first_audit": first, "judgecal_first_audit_runs": firsts,
            "first_audit_speedup": round(best["peer"]["seconds"] / first["seconds"], 2),
            "first_audit_memory_ratio": round(best["peer"]["peak_rss_mb"] / first["peak_rss_mb"], 2),
            "same_conclusions": same_conclusions(peer_c, our_c),
            "conclusions": {"peer": peer_c, "judgecal": our_c},
            "profile": profile,
            "data_preparation_s": round(prep, 1),
        }


def floor(n_boot: int, peer: Path, items: int = 100) -> dict[str, Any]:
    """Each tool's peak memory for the same audit of ``items`` items: what a process of it holds before data
    counts (its imports and its fixed buffers), against which the memory ratios above are read."""
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        prepare(items, t)
        env, cmds = _env(), audits(t, n_boot, peer)
        runs: dict[str, list[dict[str, Any]]] = {"peer": [], "judgecal": []}
        for _ in range(2):  # the second judgecal audit reads the columnar copy the first one left
            for tool, runs_of in runs.items():
                runs_of.append(timed(cmds[tool], env))
    return {"items": items, "judgments": items * 16, "runs": runs,
            "peak_rss_mb": {k: min(r["peak_rss_mb"] for r in v) for k, v in runs.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, nargs="+", default=[20_000, 50_000])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    peer = ensure_peer()
    result = {
        "benchmark": "full audit, judgecal vs PyPI judgecal==0.1.0",
        "n_boot": args.n_boot,
        "targets": {"speedup": ">= 20", "memory_ratio": ">= 5"},
        "planted": {"position_logit": POSITION, "log_length_logit": LENGTH, "self_logit": SELF_PREF,
                    "template_offset_sd": TEMPLATE_SD, "logistic_noise_per_call": 1.0},
        "sizes": [one_size(n, args.runs, args.n_boot, peer) for n in args.items],
        "floor": floor(args.n_boot, peer),
        "machine": machine(),
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
