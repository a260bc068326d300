"""Another distribution that installs the import package ``judgecal`` (as the unrelated ``judgecal`` on the
package index does) is named in one line at the command line's start-up, with how to resolve it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from judgecal.cli.shadow import other_providers


def _site(tmp_path: Path, name: str, listing: str, record: str) -> Path:
    site = tmp_path / "site"
    meta = site / f"{name}-0.1.0.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    if listing:
        (meta / "top_level.txt").write_text(listing)
    (meta / "RECORD").write_text(record)
    return site


def _cli(site: Path | None, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "judgecal.cli", "--version"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)


def test_another_distribution_of_judgecal_is_named_once_at_start_up(tmp_path: Path) -> None:
    site = _site(tmp_path, "judgecal", "", "judgecal/__init__.py,sha256=x,10\njudgecal/core.py,sha256=y,20\n")
    res = _cli(site, tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("judgecal ")
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert "the distribution judgecal 0.1.0" in lines[0] and str(site) in lines[0]
    assert "pip uninstall judgecal" in lines[0] and "judgecal-toolkit" in lines[0]


def test_no_line_without_another_distribution(tmp_path: Path) -> None:
    unrelated = _site(tmp_path, "judgecal_extras", "judgecal_extras\n", "judgecal_extras/__init__.py,,\n")
    assert other_providers([str(unrelated)]) == []
    res = _cli(unrelated, tmp_path)
    assert res.returncode == 0 and res.stderr == ""
    assert other_providers() == []  # this test environment: judgecal-toolkit alone


def test_top_level_listing_and_egg_info_count_too(tmp_path: Path) -> None:
    site = _site(tmp_path, "judgecal", "judgecal\n", "")
    egg = site / "judgecal_fork.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Name: judgecal-fork\nVersion: 2.0\n")
    (egg / "top_level.txt").write_text("judgecal\n")
    found = {(name, version) for name, version, _ in other_providers([str(site)])}
    assert found == {("judgecal", "0.1.0"), ("judgecal_fork", "2.0")}
