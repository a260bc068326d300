"""A write that finds the disk full is one line saying so, naming the workspace, exit 2, the workspace as it was:
on a real full file system (a small tmpfs, as root) and on SQLite's own "database or disk is full" (a page cap)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess

import pytest

from judgecal.cli import main
from judgecal.data.importers import import_file
from judgecal.data.store import Workspace


def _pairs(path, n, start=0, width=300):
    with open(path, "w") as fh:
        for i in range(start, start + n):
            fh.write(json.dumps({"id": f"i{i}", "prompt": "p" * width + str(i), "response_a": "a" * width,
                                 "response_b": "b" * width, "human_labels": {"x": "A"}}) + "\n")
    return path


def _state(ws):
    with Workspace(ws, create=False) as w:
        return len(w.items_repo.items()), len(w.annotations_repo.annotations_frame())


@contextlib.contextmanager
def _small_disk(path, size="700k"):
    """A ``size`` tmpfs mounted on ``path`` (root only; skipped where mounting is not allowed)."""
    path.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=True)


def test_import_onto_a_full_disk_is_one_line_and_changes_nothing(tmp_path, capsys):
    small = _pairs(tmp_path / "small.jsonl", 5)
    big = _pairs(tmp_path / "big.jsonl", 3000, start=100)
    with _small_disk(tmp_path / "disk") as disk:
        ws = disk / "ws"
        assert main(["import", str(small), "-w", str(ws), "--quiet"]) == 0
        before = _state(ws)
        capsys.readouterr()
        assert main(["import", str(big), "-w", str(ws), "--quiet"]) == 2
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert "Traceback" not in err and "rollback" not in err
        assert f"judgecal import: {ws}: the disk is full" in lines[0], lines[0]
        assert _state(ws) == before == (5, 5)  # the workspace is as it was, and still opens


def test_sqlite_full_is_a_disk_full_error_and_rolls_back(tmp_path):
    from judgecal.data.store.errors import DiskFullError

    ws = tmp_path / "ws"
    with Workspace(ws) as w:
        import_file(w, _pairs(tmp_path / "small.jsonl", 5))
        pages = w._db.conn.execute("PRAGMA page_count").fetchone()[0]
        w._db.conn.execute(f"PRAGMA max_page_count = {pages + 20}")  # SQLite's own SQLITE_FULL, well before the disk
        with pytest.raises(DiskFullError) as info:
            import_file(w, _pairs(tmp_path / "big.jsonl", 2000, start=100))
        assert str(info.value).startswith(f"{ws}: the disk is full")
        assert "\n" not in str(info.value)
        assert len(w.items_repo.items()) == 5 and len(w.annotations_repo.annotations_frame()) == 5
        w._db.conn.execute(f"PRAGMA max_page_count = {2**30}")
        import_file(w, _pairs(tmp_path / "more.jsonl", 3, start=9000))  # the connection still writes
        assert len(w.items_repo.items()) == 8
