"""Dataset registry: public human-labelled evaluation sets, downloaded at pinned commits.

Each file is fetched from ``https://raw.githubusercontent.com/<owner>/<repo>/<commit>/<path>``,
checked against a sha256 and cached in the user cache dir. ``JUDGECAL_DATA_MIRROR`` points at a
folder laid out as ``<owner>/<repo>/<path>`` to read instead. Files whose checksum could not be
recorded in advance are pinned by commit and their checksum is recorded at first download
(and checked on every later use).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import platformdirs

from judgecal.errors import UserError

MIRROR_ENV = "JUDGECAL_DATA_MIRROR"
CACHE_ENV = "JUDGECAL_CACHE_DIR"

COMMITS = {
    "WeOpenML/PandaLM": "3871806e72b4832f815ecafd24d3503c73403f48",
    "princeton-nlp/LLMBar": "900616bff90b6c6c8e1681f7d079250637c55992",
    "prometheus-eval/prometheus-eval": "dcfb44272d5d0414832f5dbb8c2a05ebc2614234",
    "vectara/FaithBench": "cf89797d82812c23b5d5e5c121f1d9b8983bbbce",
    "salesforce/summary-of-a-haystack": "43531729bc39fdc301bcc9ff7b26c5e6ce3fbf57",
    "ncsoft/offsetbias": "0bd16e4ac935315999ed23480c69673b675884b0",
    "Y0oMu/LLM-Judge-Bias-Dataset": "f6248e9f9a93c20c2059bbb46ce3096ca414ad19",
}
LICENSES = {
    "WeOpenML/PandaLM": "Apache-2.0",
    "princeton-nlp/LLMBar": "MIT",
    "prometheus-eval/prometheus-eval": "Apache-2.0",
    "vectara/FaithBench": "CC BY-NC-SA 4.0",
    "salesforce/summary-of-a-haystack": "Apache-2.0",
    "ncsoft/offsetbias": "BSD-3-Clause",
    "Y0oMu/LLM-Judge-Bias-Dataset": "none declared (each record's data_resource keeps its source's terms)",
}
# CALM's base sets and published rewrites (read by judgecal.data.calm)
CALM_REPO = "Y0oMu/LLM-Judge-Bias-Dataset"
CALM_SETS: tuple[str, ...] = ("alignment", "fact", "refinement")  # its base sets, as `judgecal import calm --set` names them
CALM_FILES: tuple[str, ...] = (
    "base_datasets/alignment_dataset.json", "base_datasets/fact_related_dataset.json",
    "base_datasets/refinement_aware_dataset.json", "bias_datasets/authority_bias_standardized.json",
    "bias_datasets/sentiment_bias_standardized.json", "bias_datasets/fallacy_oversight_bias_standardized.json",
    "bias_datasets/verbosity_bias_standardized.json", "bias_datasets/refinement_bias_standardized.json",
)
# FaithBench releases batches 1-16 except 13.
FAITHBENCH_BATCHES: tuple[int, ...] = tuple(b for b in range(1, 17) if b != 13)

# Evaluator x strategy folders, as the LLMBar authors spell them. The same in every LLMBar
# subset, and the same across the Processed subsets.
LLMBAR_EVALUATORS: dict[str, tuple[str, ...]] = {
    "GPT-4": (
        "CoT", "Metrics", "Metrics_Reference", "Rating", "Rating_Metrics", "Rating_Metrics_Reference",
        "Rating_NoRules", "Rating_Reference", "Reference", "Swap", "Swap_CoT", "Vanilla",
        "Vanilla_1shot", "Vanilla_2shot", "Vanilla_NoRules",
    ),
    "ChatGPT": (
        "CoT", "Metrics", "Metrics_Reference", "Rating", "Rating_NoRules", "Reference", "Swap",
        "Swap_CoT", "Vanilla", "Vanilla_1shot", "Vanilla_2shot", "Vanilla_NoRules",
    ),
    "ChatGPT-0301": (
        "CoT", "Metrics", "Metrics_Reference", "Reference", "Swap", "Swap_CoT", "Vanilla",
        "Vanilla_1shot", "Vanilla_2shot", "Vanilla_NoRules",
    ),
    "LLaMA2": (
        "CoT", "Metrics", "Metrics_Reference", "Reference", "Swap", "Swap_CoT", "Vanilla",
        "Vanilla_1shot", "Vanilla_2shot", "Vanilla_NoRules",
    ),
    "PaLM2": (
        "CoT", "Metrics", "Metrics_Reference", "Reference", "Swap", "Swap_CoT", "Vanilla",
        "Vanilla_NoRules",
    ),
    "Falcon": (
        "CoT", "Metrics", "Metrics_Reference", "Reference", "Swap", "Swap_CoT", "Vanilla",
        "Vanilla_1shot", "Vanilla_2shot", "Vanilla_NoRules",
    ),
}
PROCESSED_EVALUATORS: dict[str, tuple[str, ...]] = {
    e: ("Metrics_Reference", "Vanilla_NoRules") for e in ("GPT-4", "ChatGPT", "LLaMA2", "PaLM2")
}
LLMBAR_SUBSETS: dict[str, str] = {
    "llmbar/Natural": "Dataset/LLMBar/Natural",
    "llmbar/Adversarial/Neighbor": "Dataset/LLMBar/Adversarial/Neighbor",
    "llmbar/Adversarial/GPTInst": "Dataset/LLMBar/Adversarial/GPTInst",
    "llmbar/Adversarial/GPTOut": "Dataset/LLMBar/Adversarial/GPTOut",
    "llmbar/Adversarial/Manual": "Dataset/LLMBar/Adversarial/Manual",
    "llmbar/Processed/MT-Bench": "Dataset/Processed/MT-Bench",
    "llmbar/Processed/LLMEval^2": "Dataset/Processed/LLMEval^2",
    "llmbar/Processed/FairEval": "Dataset/Processed/FairEval",
}


class DatasetError(UserError, RuntimeError):
    """A dataset that cannot be found, fetched or verified."""


@dataclass(frozen=True)
class RemoteFile:
    repo: str
    path: str

    @property
    def commit(self) -> str:
        return COMMITS[self.repo]

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{quote(self.path)}"


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    description: str
    files: tuple[RemoteFile, ...]


def llmbar_evaluators(name: str) -> dict[str, tuple[str, ...]]:
    return PROCESSED_EVALUATORS if name.startswith("llmbar/Processed/") else LLMBAR_EVALUATORS


def _llmbar_spec(name: str, root: str) -> DatasetSpec:
    files = [RemoteFile("princeton-nlp/LLMBar", f"{root}/dataset.json")]
    for ev, strategies in llmbar_evaluators(name).items():
        for st in strategies:
            files.append(RemoteFile("princeton-nlp/LLMBar", f"{root}/evaluators/{ev}/{st}/result.json"))
            files.append(RemoteFile("princeton-nlp/LLMBar", f"{root}/evaluators/{ev}/{st}/statistics.json"))
    return DatasetSpec(name, f"LLMBar {name.split('/', 1)[1]}: gold label + recorded judges", tuple(files))


def registry() -> dict[str, DatasetSpec]:
    pandalm = "WeOpenML/PandaLM"
    specs = {
        "pandalm": DatasetSpec(
            "pandalm",
            "PandaLM testset-v1: 999 pairs, 3 human annotators, GPT-3.5 and PandaLM-7B verdicts",
            (
                RemoteFile(pandalm, "data/testset-v1.json"),
                RemoteFile(pandalm, "data/gpt-3.5-turbo-testset-v1.json"),
                RemoteFile(pandalm, "data/pandalm-7b-testset-v1.json"),
            ),
        ),
        "prometheus/mt-bench": DatasetSpec(
            "prometheus/mt-bench",
            "Prometheus MT-Bench: 320 responses scored 1-5 by GPT-4 three times",
            (RemoteFile("prometheus-eval/prometheus-eval", "eval/benchmark/data/mt_bench_eval.json"),),
        ),
    }
    for name, root in LLMBAR_SUBSETS.items():
        specs[name] = _llmbar_spec(name, root)
    specs["faithbench"] = DatasetSpec(
        "faithbench",
        "FaithBench: 750 summaries, annotators' hallucination spans, 8 detectors' summary-level predictions",
        tuple(RemoteFile("vectara/FaithBench", f"data_for_release/batch_{b}.json") for b in FAITHBENCH_BATCHES),
    )
    specs["summary-of-a-haystack"] = DatasetSpec(
        "summary-of-a-haystack",
        "Summary of a Haystack: 200 summaries x 1,419 key facts, a person's coverage labels, 6 LLM judges",
        (RemoteFile("salesforce/summary-of-a-haystack", "data/eval_benchmark_data.json"),),
    )
    specs["evalbiasbench"] = DatasetSpec(
        "evalbiasbench",
        "EvalBiasBench (OffsetBias): 80 hand-built pairs in six traps, the better response known",
        (RemoteFile("ncsoft/offsetbias", "data/evalbiasbench/biasbench.json"),),
    )
    specs["calm"] = DatasetSpec(
        "calm",
        "CALM (Justice or Prejudice?): 1,089 pairs, the chosen one known, with published sentiment, fallacy, "
        "authority, verbosity and refinement rewrites",
        tuple(RemoteFile(CALM_REPO, f) for f in CALM_FILES),
    )
    return specs


def _known_checksums() -> dict[str, dict[str, str]]:
    text = resources.files("judgecal.data").joinpath("checksums.json").read_text("utf-8")
    data: dict[str, dict[str, str]] = json.loads(text)
    return data


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or platformdirs.user_cache_dir("judgecal")) / "datasets"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _recorded_path() -> Path:
    return cache_dir() / "recorded-checksums.json"


def expected_checksum(f: RemoteFile) -> str | None:
    known = _known_checksums().get(f.repo, {}).get(f.path)
    if known:
        return known
    rec = _recorded_path()
    if rec.exists():
        value: str | None = json.loads(rec.read_text("utf-8")).get(f"{f.repo}@{f.commit}/{f.path}")
        return value
    return None


def _record_checksum(f: RemoteFile, digest: str) -> None:
    rec = _recorded_path()
    data = json.loads(rec.read_text("utf-8")) if rec.exists() else {}
    data[f"{f.repo}@{f.commit}/{f.path}"] = digest
    rec.parent.mkdir(parents=True, exist_ok=True)
    tmp = rec.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), "utf-8")
    tmp.replace(rec)


def _verify(f: RemoteFile, path: Path) -> None:
    want = expected_checksum(f)
    got = _sha256(path)
    if want is None:
        _record_checksum(f, got)
    elif got != want:
        raise DatasetError(f"{path}: sha256 {got} does not match the pinned {want} for {f.repo}/{f.path}")


def fetch_file(f: RemoteFile, *, offline: bool = False) -> Path:
    """Return a local, verified path for one remote file (mirror, then cache, then download)."""
    mirror = os.environ.get(MIRROR_ENV)
    if mirror:
        p = Path(mirror) / f.repo / f.path
        if p.exists():
            _verify(f, p)
            return p
    cached = cache_dir() / f.repo / f.commit / f.path
    if cached.exists():
        _verify(f, cached)
        return cached
    if offline:
        raise DatasetError(_offline_message(f, "offline mode"))
    import httpx

    try:
        resp = httpx.get(f.url, timeout=60, follow_redirects=True)
        resp.raise_for_status()
    except httpx.HTTPError as exc:
        raise DatasetError(_offline_message(f, str(exc) or type(exc).__name__)) from None
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_name(cached.name + ".part")
    tmp.write_bytes(resp.content)
    try:
        _verify(f, tmp)
    except DatasetError:
        tmp.unlink()
        raise
    tmp.replace(cached)
    return cached


def _offline_message(f: RemoteFile, why: str) -> str:
    return (
        f"Cannot get {f.repo}/{f.path} ({why}): connect to the internet so judgecal can download it "
        f"from {f.url}, or set {MIRROR_ENV} to a folder laid out as <owner>/<repo>/<path>."
    )


def fetch(name: str, *, offline: bool = False, progress: bool = False) -> dict[str, Path]:
    """Fetch every file of a registered dataset; returns ``{path-in-repo: local path}``.

    Files of LLMBar evaluator folders that the pinned commit does not hold are skipped when a
    download answers 404; all other failures raise :class:`DatasetError`.
    """
    specs = registry()
    if name not in specs:
        raise DatasetError(f"unknown dataset {name!r}; `judgecal datasets list` shows the names")
    out: dict[str, Path] = {}
    files = specs[name].files
    judge_file = ("result.json", "statistics.json")
    for f in _progress(files, f"fetching {name}") if progress else files:
        if f.path.endswith(judge_file) and _mirror_lacks_judge(f):
            continue
        try:
            out[f.path] = fetch_file(f, offline=offline)
        except DatasetError as exc:
            if f.path.endswith(judge_file) and "404" in str(exc):
                continue
            raise
    return out


def _mirror_lacks_judge(f: RemoteFile) -> bool:
    """A mirror that holds the subset's dataset.json but not this judge's folder."""
    mirror = os.environ.get(MIRROR_ENV)
    if not mirror or (Path(mirror) / f.repo / f.path).exists():
        return False
    root = f.path.split("/evaluators/")[0]
    return (Path(mirror) / f.repo / root / "dataset.json").exists()


def _progress(files: tuple[RemoteFile, ...], label: str) -> Iterable[RemoteFile]:
    from judgecal.progress import Bar

    with Bar(label, len(files)) as bar:
        for f in files:
            yield f
            bar()
