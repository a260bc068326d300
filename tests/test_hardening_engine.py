"""Hardened judge calls and writes: secrets never leave the backend, malformed replies are recorded
errors, Retry-After is capped and the timeout set, concurrent judge runs never pay twice and
concurrent imports never overwrite each other, a bad batch file is a one-line error.

A scripted OpenAI-compatible HTTP server on 127.0.0.1 stands in for the paid vendor API; everything
else (the openai SDK, the engine, the store, the CLI, separate processes) is real.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from judgecal.cli import build_parser, main, make_engine
from judgecal.data.records import Candidate, Item
from judgecal.data.store import RunOwner, Workspace
from judgecal.judges.base import redact
from judgecal.judges.engine import Engine
from judgecal.judges.registry import make_backend
from judgecal.judges.rubric import load_rubric

REPO = Path(__file__).resolve().parents[1]


def completion(content: Any = "[[A]]", **choice: Any) -> dict[str, Any]:
    msg = {"role": "assistant", "content": content}
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": msg, "finish_reason": "stop", "logprobs": None, **choice}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13}}


class Vendor(ThreadingHTTPServer):
    """A chat-completions endpoint answering by ``script(prompt_text, headers, n_seen_for_prompt)``.

    ``script`` returns (status, headers, body): a dict body is sent as JSON, bytes as they are.
    Every request is counted per prompt; ``gate`` (when set up) holds requests until opened."""

    daemon_threads = True

    def __init__(self, script: Any, delay: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script, self.delay = script, delay
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.gate: threading.Event | None = None
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client closing its pooled connection
            super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def total(self) -> int:
        with self.lock:
            return sum(self.counts.values())


class _Handler(BaseHTTPRequestHandler):
    server: Vendor
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = json.dumps(body["messages"], sort_keys=True)
        with self.server.lock:
            self.server.counts[prompt] += 1
            n = self.server.counts[prompt]
        if self.server.gate is not None:
            self.server.gate.wait(120)
        time.sleep(self.server.delay)
        code, headers, out = self.server.script(prompt, self.headers, n)
        data = json.dumps(out).encode() if isinstance(out, dict) else out
        self.send_response(code)
        self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def vendor():
    servers: list[Vendor] = []

    def start(script: Any, delay: float = 0.0) -> Vendor:
        servers.append(Vendor(script, delay))
        return servers[-1]

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def _write_items(path: Path, n: int, marker: str = "", text: str = "answer") -> Path:
    """Pairwise items with three human labels each (enough for a consensus and an audit)."""
    rows = [{"id": f"q{i}", "prompt": f"{marker if i == 0 else ''}Question {i}: which is better?",
             "response_a": f"{text} {i} a", "response_b": f"{text} {i} b",
             "model_a": "m1", "model_b": "m2", "human_labels": {"h1": "A", "h2": "A", "h3": "B" if i % 3 else "A"}}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# -- 1. secrets --------------------------------------------------------------------------------
def test_redact_values_and_credential_shapes():
    key = "JCK" + secrets.token_hex(12)
    text = (f"Error code: 401 - {{'error': {{'message': 'bad key {key}', 'headers': {{'authorization': "
            f"'Bearer sk-proj-abc123DEF456', 'x-api-key': 'zz-9f8e7d6c5b'}}}}}}; \"api_key\": \"q1w2e3r4t5\"")
    out = redact(text, (key,))
    for leaked in (key, "sk-proj-abc123DEF456", "zz-9f8e7d6c5b", "q1w2e3r4t5"):
        assert leaked not in out
    assert "Error code: 401" in out and "bad key [REDACTED]" in out and "Bearer [REDACTED]" in out
    # a model's answer keeps its text; only the key values themselves are removed there
    assert redact("Bearer of good news: A", (key,), shapes=False) == "Bearer of good news: A"


def test_key_echoed_by_a_401_reaches_no_database_log_report_or_export(tmp_path, vendor, monkeypatch, capsys,
                                                                     caplog):
    import logging

    key = "JCK" + secrets.token_hex(16)  # not sk- shaped: it is removed as a value, not by a pattern
    monkeypatch.setenv("OPENAI_API_KEY", key)
    caplog.set_level(logging.DEBUG)

    def script(prompt: str, headers: Any, n: int):
        if "ECHO" in prompt:
            auth = headers["Authorization"]
            return 401, {}, {"error": {"message": f"Incorrect API key provided. You sent Authorization: {auth}",
                                       "type": "invalid_request_error", "code": "invalid_api_key",
                                       "received": {"authorization": auth, "x-api-key": key}}}
        return 200, {}, completion("[[A]]")

    srv = vendor(script)
    ws = tmp_path / "ws"
    assert main(["import", str(_write_items(tmp_path / "items.jsonl", 8, marker="ECHO ")), "-w", str(ws)]) == 0
    assert main(["judge", "--judge", "openai/m", "--base-url", srv.url, "--quiet", "-w", str(ws)]) == 1
    assert main(["audit", "--n-boot", "50", "-w", str(ws)]) == 0
    out = tmp_path / "judgments.jsonl"
    assert main(["export", "judgments", str(out), "-w", str(ws)]) == 0
    captured = capsys.readouterr()

    with Workspace(ws) as w:
        df = w.judgments_repo.judgments_frame()
    errors = df[df["status"] == "error"]
    assert len(errors) == 2 and len(df) == 16  # the 401 was recorded, the other items judged
    assert all("HTTP 401" in r and "[REDACTED]" in r for r in errors["raw"])
    assert "HTTP 401" in captured.err  # the error is shown ...
    files = [p for p in ws.rglob("*") if p.is_file()] + [out]
    assert any(p.name == "audit.json" for p in files) and any(p.suffix == ".sqlite" for p in files)
    for p in files:  # ... but the key is nowhere: database (and its WAL), reports, export
        assert key.encode() not in p.read_bytes(), p
    assert key not in captured.out and key not in captured.err
    assert key not in caplog.text


def test_anthropic_key_echo_is_redacted(tmp_path, vendor, monkeypatch):
    key = "sk-ant-" + secrets.token_hex(16)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)

    def script(prompt: str, headers: Any, n: int):
        return 401, {}, {"type": "error", "error": {"type": "authentication_error",
                                                    "message": f"invalid x-api-key: {headers['x-api-key']}"}}

    srv = vendor(script)
    w = Workspace(tmp_path / "ws")
    w.items_repo.add_items([Item("q", "2+2?", [Candidate("4"), Candidate("5")])])
    backend = make_backend("anthropic/claude-x", base_url=srv.url.removesuffix("/v1"))
    eng = Engine(w, backend, load_rubric("pairwise"), progress=False)
    st = eng.run(eng.plan(w.items_repo.items(), orders=("AB",)))
    assert st.errors == 1 and "HTTP 401" in st.error_messages[0]
    assert key not in st.error_messages[0]
    w._db.conn.execute("PRAGMA wal_checkpoint(FULL)")
    assert key.encode() not in (tmp_path / "ws" / "judgecal.sqlite").read_bytes()


# -- 2. malformed replies --------------------------------------------------------------------------
MALFORMED: dict[str, tuple[str, Any]] = {
    "NONJSON": ("text/html", b"<html><body>502 bad gateway, said with a 200</body></html>"),
    "BADJSON": ("application/json", b'{"choices": [{"message": '),
    "NOCHOICES": ("application/json", {"id": "c", "object": "chat.completion", "choices": []}),
    "NOMESSAGE": ("application/json", {"id": "c", "object": "chat.completion",
                                       "choices": [{"index": 0, "finish_reason": "stop"}]}),
    "NULLCONTENT": ("application/json", completion(None)),
    "LISTBODY": ("application/json", b"[1, 2, 3]"),
}


def test_malformed_replies_are_recorded_errors_and_the_run_goes_on(tmp_path, vendor):
    def script(prompt: str, headers: Any, n: int):
        for marker, (ctype, body) in MALFORMED.items():
            if marker in prompt:
                return 200, {"Content-Type": ctype}, body
        if "RAMBLE" in prompt:
            return 200, {}, completion("I cannot decide between them.")
        return 200, {}, completion("[[B]]")

    srv = vendor(script)
    w = Workspace(tmp_path / "ws")
    markers = [*MALFORMED, "RAMBLE", "GOOD1", "GOOD2"]
    w.items_repo.add_items([Item(m, f"{m}: which answer is right?", [Candidate("x"), Candidate("y")]) for m in markers])
    eng = Engine(w, make_backend("openai/m", base_url=srv.url), load_rubric("pairwise"), progress=False,
                 backoff_base=0.001)
    st = eng.run(eng.plan(w.items_repo.items(), orders=("AB",)))
    assert (st.done, st.errors, st.invalid) == (9, 6, 1)
    df = w.judgments_repo.judgments_frame().set_index("item_id")
    for m in MALFORMED:
        assert df.loc[m, "status"] == "error", m
        assert df.loc[m, "raw"].startswith("BackendError:"), df.loc[m, "raw"]
    assert "malformed reply: no choices" in df.loc["NOCHOICES", "raw"]
    assert "no message content" in df.loc["NULLCONTENT", "raw"]
    assert (df.loc["RAMBLE", "status"], df.loc["RAMBLE", "verdict"]) == ("invalid", "invalid")
    assert df.loc[["GOOD1", "GOOD2"], "verdict"].tolist() == ["B", "B"]
    # errors are not cached: a re-run (a new event loop, the same backend) asks again for those six only
    before = srv.total()
    again = eng.run(eng.plan(w.items_repo.items(), orders=("AB",)))
    assert (again.done, again.errors) == (6, 6) and srv.total() - before == 6
    assert all(m.startswith("BackendError: malformed reply") for m in again.error_messages), again.error_messages


# -- 3. Retry-After cap and timeout ------------------------------------------------------------------
def test_retry_after_is_capped_with_a_message(tmp_path, vendor, capsys):
    def script(prompt: str, headers: Any, n: int):
        if n == 1:
            return 429, {"Retry-After": "86400"}, {"error": {"message": "slow down", "type": "rate_limit"}}
        return 200, {}, completion("[[A]]")

    srv = vendor(script)
    ws = tmp_path / "ws"
    main(["import", str(_write_items(tmp_path / "items.jsonl", 3)), "-w", str(ws)])
    t0 = time.perf_counter()
    rc = main(["judge", "--judge", "openai/m", "--base-url", srv.url, "--quiet", "--max-retry-after", "0.3",
               "-w", str(ws)])
    elapsed = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert rc == 0 and elapsed < 20
    assert "asked to wait 86400 s (Retry-After); waiting 0.3 s instead" in err
    assert err.count("Retry-After") == 1  # said once per run, not once per call
    assert srv.total() == 12  # 6 prompts, each refused once then answered
    with Workspace(ws) as w:
        assert set(w.judgments_repo.judgments_frame()["status"]) == {"ok"}


def test_default_retry_after_cap_is_sixty_seconds_and_options_reach_engine_and_sdk(tmp_path):
    w = Workspace(tmp_path / "ws")
    backend = make_backend("openai/m", base_url="http://127.0.0.1:9/v1")
    assert Engine(w, backend, load_rubric("pairwise"), progress=False).max_retry_after == 60.0
    args = build_parser().parse_args(["judge", "--judge", "openai/m", "--base-url", "http://127.0.0.1:9/v1",
                                      "--timeout", "7.5", "--max-retry-after", "3", "-w", str(tmp_path / "ws")])
    eng = make_engine(w, args)
    assert (eng.timeout_s, eng.max_retry_after) == (7.5, 3.0)
    assert eng.backend.client.timeout == 7.5
    for bad in ("0", "-1", "soon", "inf"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["judge", "--judge", "openai/m", "--timeout", bad])


def test_timeout_ends_a_call_that_hangs(tmp_path, vendor):
    srv = vendor(lambda prompt, headers, n: (200, {}, completion("[[A]]")), delay=3.0)
    w = Workspace(tmp_path / "ws")
    w.items_repo.add_items([Item("q", "2+2?", [Candidate("4"), Candidate("5")])])
    eng = Engine(w, make_backend("openai/m", base_url=srv.url, timeout_s=0.3), load_rubric("pairwise"),
                 progress=False, timeout_s=0.3, max_retries=1, backoff_base=0.001)
    t0 = time.perf_counter()
    st = eng.run(eng.plan(w.items_repo.items(), orders=("AB",)))
    assert time.perf_counter() - t0 < 2.5
    assert (st.errors, st.retries) == (1, 1)
    assert "Timeout" in w.judgments_repo.judgments_frame()["raw"].iloc[0]


# -- 4. concurrent writers ----------------------------------------------------------------------------
def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(REPO)
    return env


def _cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "judgecal.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)


def test_two_judge_runs_at_once_make_each_call_once(tmp_path, vendor):
    srv = vendor(lambda prompt, headers, n: (200, {}, completion("[[A]]")), delay=0.02)
    srv.gate = threading.Event()
    ws = tmp_path / "ws"
    main(["import", str(_write_items(tmp_path / "items.jsonl", 10)), "-w", str(ws)])
    judge = ("judge", "--judge", "openai/m", "--base-url", srv.url, "--quiet", "--concurrency", "4",
             "-w", str(ws))
    first = _cli(*judge)
    deadline = time.monotonic() + 60
    while srv.total() == 0 and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.05)
    assert srv.total() > 0, "the first run never called"
    second = _cli(*judge)  # starts while the first run's calls are held at the server
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(second.stderr or []), daemon=True)
    reader.start()
    while not any("waiting for its answers" in ln for ln in lines) and time.monotonic() < deadline:
        assert second.poll() is None or lines, "the second run ended without waiting"
        time.sleep(0.05)
    srv.gate.set()
    out1, err1 = first.communicate(timeout=120)
    out2, _ = second.communicate(timeout=120)
    reader.join(5)
    assert first.returncode == 0 and second.returncode == 0, (err1, lines)
    assert any(f"pid {first.pid}" in ln and "waiting for its answers" in ln for ln in lines), lines
    assert len(srv.counts) == 20 and set(srv.counts.values()) == {1}  # every distinct prompt exactly once
    assert "20 planned, 0 cached, 20 run" in out1
    assert "20 planned, 20 cached, 0 run" in out2
    with Workspace(ws) as w:
        assert w.judgments_repo.count_judgments() == 20 and set(w.judgments_repo.judgments_frame()["status"]) == {"ok"}
        assert w._db.conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0  # released at the end


def test_two_judge_runs_started_together_split_the_calls(tmp_path, vendor):
    srv = vendor(lambda prompt, headers, n: (200, {}, completion("[[B]]")), delay=0.05)
    ws = tmp_path / "ws"
    main(["import", str(_write_items(tmp_path / "items.jsonl", 12)), "-w", str(ws)])
    judge = ("judge", "--judge", "openai/m", "--base-url", srv.url, "--quiet", "--concurrency", "2",
             "-w", str(ws))
    procs = [_cli(*judge), _cli(*judge)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert len(srv.counts) == 24 and set(srv.counts.values()) == {1}
    with Workspace(ws) as w:
        assert w.judgments_repo.count_judgments() == 24


def test_claims_of_a_dead_or_silent_run_are_taken_over(tmp_path):
    w = Workspace(tmp_path / "ws")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    here = RunOwner.here()
    gone = RunOwner("gone", int(dead.stdout), here.host)  # same host, process ended
    silent = RunOwner("silent", 1, "another-host")  # another host: only its heartbeat tells
    assert w.claims_repo.claim(["k1", "k2"], gone).mine == {"k1", "k2"}
    assert w.claims_repo.claim(["k3"], silent).mine == {"k3"}
    me = RunOwner.here()
    c = w.claims_repo.claim(["k1", "k2", "k3", "k4"], me, stale_s=60)
    assert c.mine == {"k1", "k2", "k4"} and c.held == {"k3"} and c.holders == ["pid 1 on another-host"]
    w._db.conn.execute("UPDATE runs SET heartbeat = heartbeat - 120 WHERE owner = 'silent'")
    assert w.claims_repo.claim(["k3"], me, stale_s=60).mine == {"k3"}
    # a live run's claims hold; an answered key is nobody's to claim
    other = RunOwner("other", os.getpid(), here.host)
    assert w.claims_repo.claim(["k1", "k5"], other).mine == {"k5"}
    w.claims_repo.release(me)
    assert w.claims_repo.claim(["k1"], other).mine == {"k1"}


def test_two_imports_of_the_same_ids_at_once_never_overwrite(tmp_path):
    n = 3000
    a = _write_items(tmp_path / "a.jsonl", n, text="first file's answer")
    b = _write_items(tmp_path / "b.jsonl", n, text="second file's answer")
    ws = tmp_path / "ws"
    procs = {f: _cli("import", str(f), "--name", "shared", "-w", str(ws)) for f in (a, b)}
    res = {f: (p.wait(timeout=180), *p.communicate()) for f, p in procs.items()}
    codes = sorted(rc for rc, _, _ in res.values())
    assert codes == [0, 2], res
    loser = next(f for f, (rc, _, _) in res.items() if rc == 2)
    winner = a if loser == b else b
    err = res[loser][2].strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"{loser}:1: id 'q0' is already in the workspace with a different candidates" in err
    assert f"(and {n - 1} more)" in err
    with Workspace(ws) as w:
        texts = {it.item_id: it.candidates[0].text for it in w.items_repo.items()}
        ann = w.annotations_repo.annotations_frame()
    want = "first file's answer" if winner == a else "second file's answer"
    assert len(texts) == n and all(t.startswith(want) for t in texts.values())
    assert len(ann) == 3 * n
    # the winner's file again (even two at once) is idempotent
    again = [_cli("import", str(winner), "--name", "shared", "-w", str(ws)) for _ in range(2)]
    assert [p.wait(timeout=180) for p in again] == [0, 0]
    with Workspace(ws) as w:
        assert len(w.items_repo.item_ids()) == n and len(w.annotations_repo.annotations_frame()) == 3 * n


def test_a_writer_that_cannot_get_the_lock_stops_with_a_clear_message(tmp_path, monkeypatch, capsys):
    import sqlite3

    from judgecal.data.store import _db

    Workspace(tmp_path / "ws").close()
    holder = sqlite3.connect(tmp_path / "ws" / "judgecal.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process in the middle of a long write
    monkeypatch.setattr(_db, "BUSY_TIMEOUT_S", 0.3)
    items = _write_items(tmp_path / "items.jsonl", 2)
    t0 = time.perf_counter()
    assert main(["import", str(items), "-w", str(tmp_path / "ws")]) == 2
    assert time.perf_counter() - t0 < 5
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "another judgecal process kept the workspace locked for 0.3 s; try again when it has finished" in err
    holder.execute("ROLLBACK")
    assert main(["import", str(items), "-w", str(tmp_path / "ws")]) == 0  # once free, the same import works
    holder.close()


# -- 5. batch import -------------------------------------------------------------------------------------
def test_import_batch_with_a_bad_file_is_one_line_naming_file_and_line(tmp_path, capsys):
    ws = tmp_path / "ws"
    main(["import", str(_write_items(tmp_path / "items.jsonl", 2)), "-w", str(ws)])
    manifest = tmp_path / "batch.jsonl"
    base = ["judge", "--judge", "openai/m", "--base-url", "http://127.0.0.1:9/v1", "--quiet", "-w", str(ws)]
    assert main([*base, "--export-batch", str(manifest)]) == 0
    ids = [json.loads(x)["custom_id"] for x in manifest.read_text().splitlines()]
    good = {"custom_id": ids[0], "response": {"status_code": 200, "body": completion("[[A]]")}}
    cases = {
        "bad.jsonl": (json.dumps(good) + "\n{oops\n", "bad.jsonl:2: not a JSON line"),
        "array.jsonl": ("\n[1, 2]\n", "array.jsonl:2: expected a JSON object, got list"),
        "noid.jsonl": (json.dumps({"response": {}}) + "\n", "noid.jsonl:1: custom_id: missing or not a string"),
        "latin1.jsonl": (None, "latin1.jsonl:1: not a JSON line (UnicodeDecodeError"),
    }
    for name, (text, want) in cases.items():
        path = tmp_path / name
        if text is None:
            path.write_bytes(b'{"custom_id": "caf\xe9"}\n')
        else:
            path.write_text(text)
        capsys.readouterr()
        assert main([*base, "--import-batch", str(manifest), str(path)]) == 2, name
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and want in err and str(tmp_path) in err, err
    assert main([*base, "--import-batch", str(manifest), str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl: cannot read (No such file or directory)" in capsys.readouterr().err
    assert main([*base, "--import-batch", str(tmp_path / "nope.jsonl"), str(tmp_path / "bad.jsonl")]) == 2
    assert "nope.jsonl.plan.jsonl: cannot read" in capsys.readouterr().err
    assert main([*base, "--import-batch", str(manifest), str(tmp_path)]) == 2
    assert "cannot read (Is a directory)" in capsys.readouterr().err
    with Workspace(ws) as w:
        assert w.judgments_repo.count_judgments() == 0  # a bad line stores nothing
    # a malformed body is a recorded error; the good line is stored
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps(good) + "\n" + json.dumps(
        {"custom_id": ids[1], "response": {"status_code": 200, "body": {"choices": []}}}) + "\n")
    assert main([*base, "--import-batch", str(manifest), str(mixed)]) == 0
    assert "stored=1 already=0 unknown=0 failed=1" in capsys.readouterr().out
    with Workspace(ws) as w:
        st = w.judgments_repo.judgments_frame().set_index("key")["status"]
    assert st[ids[0]] == "ok" and st[ids[1]] == "error"
