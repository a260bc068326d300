"""The environment fingerprint on the real embedded judge, its hash cache, and the named diff."""

import hashlib
import json
from pathlib import Path

from judgecal.judges import fingerprint as fp


def test_fingerprint_of_the_embedded_judge(local_backend):
    env = fp.fingerprint(local_backend)
    assert env["backend"] == "local" and env["backend_versions"]["llama_cpp_python"]
    assert env["quantisation"] == "q8_0" and env["model_file"].endswith(".gguf")
    digest = hashlib.sha256(Path(local_backend.model_file).read_bytes()).hexdigest()
    assert env["model_sha256"] == digest[:16]
    assert env["batch_size"] == local_backend.n_batch and env["deterministic"] is False
    assert env["cpu"]["count"] >= 1 and isinstance(env["cpu"]["flags"], list)
    assert "numpy_blas" in env["blas"]
    # stored as sorted JSON, the form every judgment's env column holds
    assert json.loads(fp.fingerprint_json(local_backend)) == json.loads(json.dumps(env, default=str))


def test_model_hash_is_cached_by_path_size_and_mtime(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGECAL_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "m.gguf"
    f.write_bytes(b"weights-1")
    first = fp.file_sha256(f)
    assert first == hashlib.sha256(b"weights-1").hexdigest()
    cache = fp._hash_cache_path()
    assert first in json.loads(cache.read_text()).values()
    f.write_bytes(b"weights-2, longer")  # new size and mtime: hashed again
    assert fp.file_sha256(f) == hashlib.sha256(b"weights-2, longer").hexdigest()


def test_diff_names_what_changed():
    a = {"backend": "local", "dtype": None, "cpu": {"flags": ["avx2"], "model": "X"}, "deterministic": False}
    b = {"backend": "hf", "dtype": "float32", "cpu": {"flags": ["avx2", "avx512f"], "model": "X"},
         "deterministic": False}
    changes = fp.diff(json.dumps(a), b)
    assert [c["field"] for c in changes] == ["backend", "cpu.flags", "dtype"]
    assert changes[0] == {"field": "backend", "before": "local", "after": "hf"}
    assert "backend: local -> hf" in fp.describe(changes)
    assert fp.diff(a, a) == [] and fp.describe([]) == "no change in the environment"
    assert fp.diff("not json", None) == []
