"""The wheel as a user gets it: built from a clean export of the working tree (the files git tracks or would
track), installed (not editable) into a fresh virtual environment outside the checkout, then every module
imported from there, the example audit of ``data/`` run with the installed ``judgecal`` and the explorer served
to its first paint. An editable install finds every module in the checkout, so only this catches a package or a
data file the wheel leaves out.

The fresh environment reuses the dependencies already installed for the tests (a ``.pth`` file naming their
site-packages folders: the folders are put on the path, their own ``.pth`` files, among them the checkout's
editable finder, are not run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from explorer_browser import Browser, serve

REPO = Path(__file__).resolve().parents[1]
# the top-level folders that ship inside the package, as pyproject.toml maps them
MAPPED = {"judgecal": "judgecal", "apps": "judgecal.apps", "rubrics": "judgecal.rubrics",
          "annotation": "judgecal.annotation_assets"}
# the explorer's Streamlit script runs its page when imported (it is served below instead); the settings
# extension is loaded by Label Studio's server, in that server's own environment
NOT_IMPORTED = {"judgecal.apps.explorer", "judgecal.cli.__main__", "judgecal.annotation_assets.ls_extension"}

# run by the fresh environment's interpreter: where judgecal comes from, and every module imported
CHECK = r"""
import importlib, importlib.util, json, pkgutil, sys
import judgecal
from judgecal.errors import EXTRAS

skip = set(sys.argv[1].split(","))
walked, imported, missing, failed = [], [], {}, {}
for mod in pkgutil.walk_packages(judgecal.__path__, "judgecal.", onerror=lambda n: failed.setdefault(n, "walk")):
    walked.append(mod.name)
    if mod.name in skip:
        continue
    try:
        importlib.import_module(mod.name)
        imported.append(mod.name)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top in EXTRAS and importlib.util.find_spec(top) is None:  # an extra that is not installed
            missing[mod.name] = top
        else:
            failed[mod.name] = f"ModuleNotFoundError: {exc}"
    except Exception as exc:
        failed[mod.name] = f"{type(exc).__name__}: {exc}"
finders = [type(f).__module__ + "." + type(f).__qualname__ for f in sys.meta_path]
print(json.dumps({"file": judgecal.__file__, "walked": walked, "imported": imported, "missing": missing,
                  "failed": failed, "finders": finders, "prefix": sys.prefix}))
"""


@dataclass
class Installed:
    venv: Path
    export: Path
    run: Path  # the folder the commands run in: outside the checkout and the export
    env: dict[str, str]

    def judgecal(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.venv / "bin" / "judgecal"), *argv], cwd=self.run, env=self.env,
                              capture_output=True, text=True, timeout=timeout)


def _sh(*cmd: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    res = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res.stdout


def _export(dest: Path) -> list[str]:
    """Copy the files git tracks or would track (not ignored) into ``dest``; their paths."""
    listed = _sh("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO).split("\0")
    files = [f for f in listed if f and (REPO / f).is_file()]
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, dest / f)
    return files


def _dependency_dirs() -> list[str]:
    """This interpreter's site-packages folders (where the tests' dependencies are installed)."""
    return list(dict.fromkeys(p for p in sys.path if p and Path(p).is_dir()
                              and Path(p).name in ("site-packages", "dist-packages")))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: nothing to export")
    tmp = tmp_path_factory.mktemp("wheel")
    export, dist, venv, run = tmp / "export", tmp / "dist", tmp / "venv", tmp / "run"
    for d in (export, dist, run):
        d.mkdir()
    _export(export)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["JUDGECAL_CACHE_DIR"] = str(tmp / "cache")
    # no build isolation: the build needs nothing but the setuptools this environment has (no network)
    _sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
        "-w", dist, export, cwd=tmp, env=env)
    wheels = sorted(dist.glob("judgecal_toolkit-*.whl"))
    assert len(wheels) == 1, wheels
    _sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp, env=env)
    # pip of this environment installs into the fresh one, which sees nothing else yet (nothing to uninstall)
    _sh(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--no-deps", "--no-index",
        "-q", wheels[0], cwd=tmp, env=env)
    purelib = _sh(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                  cwd=run, env=env).strip()
    (Path(purelib) / "zz_test_dependencies.pth").write_text("\n".join(_dependency_dirs()) + "\n")
    yield Installed(venv, export, run, env)


def _expected_modules(export: Path) -> set[str]:
    """The modules of the checkout's package folders, as the package names them."""
    out = set()
    for folder, package in MAPPED.items():
        for f in (export / folder).rglob("*.py"):
            rel = f.relative_to(export / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if (f.parent / "__init__.py").is_file() and all(
                    (export / folder / Path(*rel.parts[:i]) / "__init__.py").is_file() for i in range(len(rel.parts))):
                out.add(".".join([package, *parts]))
    return out - {"judgecal"}


def test_every_module_imports_from_the_installed_wheel(installed: Installed) -> None:
    out = _sh(installed.venv / "bin" / "python", "-c", CHECK, ",".join(sorted(NOT_IMPORTED)), cwd=installed.run,
              env=installed.env)
    res = json.loads(out.strip().splitlines()[-1])
    assert Path(res["file"]).is_relative_to(installed.venv), res["file"]  # not the checkout's
    assert Path(res["prefix"]) == installed.venv
    assert not [f for f in res["finders"] if "editable" in f.lower()], res["finders"]
    assert res["failed"] == {}
    assert set(res["walked"]) == _expected_modules(installed.export)  # no package left out of the wheel
    assert len(res["imported"]) >= 150
    import importlib.util

    # a module left unimported only for an extra this environment lacks as well
    assert all(importlib.util.find_spec(top) is None for top in res["missing"].values()), res["missing"]


def test_the_wheel_holds_every_asset_of_the_checkout(installed: Installed) -> None:
    site = Path(_sh(installed.venv / "bin" / "python", "-c",
                    "import judgecal, pathlib; print(pathlib.Path(judgecal.__file__).parent)",
                    cwd=installed.run, env=installed.env).strip())
    assets = [f for folder in MAPPED for f in (installed.export / folder).rglob("*")
              if f.is_file() and f.suffix not in (".py", ".pyc") and "__pycache__" not in f.parts]
    assert any(f.name == "checksums.json" for f in assets) and any(f.suffix == ".yaml" for f in assets)
    for f in assets:
        folder = f.relative_to(installed.export).parts[0]
        target = site.joinpath(*MAPPED[folder].split(".")[1:], *f.relative_to(installed.export / folder).parts)
        assert target.is_file(), f"{f.relative_to(installed.export)} is not in the wheel"
    meta = _sh(installed.venv / "bin" / "python", "-c", "import importlib.metadata as m; "
               "d = m.distribution('judgecal-toolkit'); print(d.metadata['License-Expression']); "
               "print(sorted(str(f) for f in d.files if 'LICENSE' in str(f)))", cwd=installed.run, env=installed.env)
    assert meta.splitlines()[0] == "Apache-2.0" and "LICENSE" in meta.splitlines()[1]


def test_the_installed_judgecal_audits_the_examples_and_serves_the_explorer(installed: Installed) -> None:
    data = installed.export / "data"
    steps = [("import", str(data / "items.jsonl"), "-w", "ws", "--quiet"),
             ("import", str(data / "verdicts.jsonl"), "--as", "judgments", "--spec", str(data / "judge.yaml"),
              "-w", "ws", "--quiet"),
             ("aggregate", "-w", "ws"),
             ("audit", "-w", "ws", "--n-boot", "200", "--quiet")]
    for argv in steps:
        res = installed.judgecal(*argv)
        assert res.returncode == 0, (argv, res.stdout[-2000:], res.stderr[-2000:])
        assert "warning" not in res.stderr  # no other distribution of the judgecal import package
    assert "example/acme-judge" in res.stdout
    report = json.loads((installed.run / "ws" / "reports" / "audit.json").read_text("utf-8"))
    assert list(report["judges"]) == ["example/acme-judge"]
    with serve(installed.run / "ws", judgecal=[str(installed.venv / "bin" / "judgecal")], cwd=installed.run) as url:
        b = Browser(url)
        try:
            text = b.text()
            assert "example/acme-judge" in text
            assert b.errors == [] and b.external == []
        finally:
            b.close()
