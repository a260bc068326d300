"""Dataset registry: pinned commits, checksums, the mirror, the cache and the offline message."""

import json
import shutil

import pytest

from judgecal.data import registry
from judgecal.data.registry import DatasetError, RemoteFile, fetch, fetch_file


def test_every_shared_file_has_a_pinned_checksum(mirror):
    known = registry._known_checksums()
    for name in ("pandalm", "prometheus/mt-bench", "llmbar/Natural", "llmbar/Processed/MT-Bench"):
        paths = fetch(name)
        for path, local in paths.items():
            repo = next(r for r in known if str(local).startswith(str(mirror / r)))
            assert known[repo][path] == registry._sha256(local)


def test_urls_are_pinned_and_quoted():
    f = RemoteFile("princeton-nlp/LLMBar", "Dataset/Processed/LLMEval^2/dataset.json")
    assert f.url == ("https://raw.githubusercontent.com/princeton-nlp/LLMBar/"
                     "900616bff90b6c6c8e1681f7d079250637c55992/Dataset/Processed/LLMEval%5E2/dataset.json")


def test_corrupted_mirror_file_is_refused(tmp_path, mirror, monkeypatch):
    dst = tmp_path / "WeOpenML" / "PandaLM" / "data"
    dst.mkdir(parents=True)
    for f in (mirror / "WeOpenML" / "PandaLM" / "data").iterdir():
        shutil.copy(f, dst / f.name)
    with open(dst / "testset-v1.json", "a") as fh:
        fh.write(" ")
    monkeypatch.setenv("JUDGECAL_DATA_MIRROR", str(tmp_path))
    with pytest.raises(DatasetError, match="does not match the pinned"):
        fetch("pandalm")


def test_offline_without_mirror_or_cache_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv("JUDGECAL_DATA_MIRROR")
    monkeypatch.setenv("JUDGECAL_CACHE_DIR", str(tmp_path / "empty"))
    with pytest.raises(DatasetError) as info:
        fetch("pandalm", offline=True)
    msg = str(info.value)
    assert "connect to the internet" in msg and "JUDGECAL_DATA_MIRROR" in msg
    assert msg.count("\n") == 0


def test_unpinned_checksum_is_recorded_at_first_use_and_checked_after(tmp_path, monkeypatch):
    """A file whose checksum was not known in advance (e.g. LLMBar Adversarial) is trusted on first use."""
    f = RemoteFile("princeton-nlp/LLMBar", "Dataset/LLMBar/Adversarial/Manual/dataset.json")
    mirror = tmp_path / "m"
    (mirror / f.repo / f.path).parent.mkdir(parents=True)
    (mirror / f.repo / f.path).write_text(json.dumps([{"input": "x", "output_1": "a", "output_2": "b", "label": 1}]))
    monkeypatch.setenv("JUDGECAL_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("JUDGECAL_CACHE_DIR", str(tmp_path / "cache"))
    assert registry.expected_checksum(f) is None
    fetch_file(f)
    assert registry.expected_checksum(f) == registry._sha256(mirror / f.repo / f.path)
    (mirror / f.repo / f.path).write_text("[]")
    with pytest.raises(DatasetError, match="does not match"):
        fetch_file(f)


def test_cli_lists_every_dataset(capsys):
    from judgecal.cli import main

    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("pandalm", "llmbar/Natural", "llmbar/Adversarial/Neighbor", "llmbar/Processed/FairEval",
                 "prometheus/mt-bench"):
        assert name in out


def test_prometheus_scores_become_three_samples(mirror):
    from judgecal.data.datasets import load

    ds = load("prometheus/mt-bench")
    assert len(ds.items) == 320 and len(ds.judgments) == 960
    assert {j.sample for j in ds.judgments} == {0, 1, 2}
    assert all(1 <= j.score <= 5 for j in ds.judgments)
    assert all(it.task == "pointwise" and it.reference for it in ds.items)
    assert not ds.annotations
