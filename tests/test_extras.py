"""A command whose optional dependency is missing says in one line which extra installs it (exit 2, no
traceback): `judgecal app` before it hands over to Streamlit's server, and any other command through the one
mapping at the command line. The module is made unimportable in a real subprocess by a finder that refuses it,
as an environment without it would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from judgecal.errors import EXTRAS, MissingExtraError, missing_extra, require

# runs the command line with the modules named in argv[1] unimportable (argv[2:]: the command)
SHIM = """
import sys
from importlib.abc import MetaPathFinder

BLOCKED = set(sys.argv[1].split(","))


class Refuse(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Refuse())
from judgecal.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _run(tmp_path: Path, blocked: str, *argv: str) -> subprocess.CompletedProcess[str]:
    shim = tmp_path / "shim.py"
    shim.write_text(SHIM)
    return subprocess.run([sys.executable, str(shim), blocked, *argv], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def test_app_without_streamlit_names_the_app_extra_in_one_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    res = _run(tmp_path, "streamlit", "app", "-w", str(ws), "--port", "1")
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        "judgecal app: needs the 'app' extra (streamlit is not installed): pip install 'judgecal-toolkit[app]'"]
    assert res.stdout == ""


def test_app_without_plotly_names_the_app_extra_too(tmp_path: Path) -> None:
    res = _run(tmp_path, "plotly", "app", "-w", str(tmp_path))
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1
    assert "'app' extra (plotly is not installed)" in res.stderr


def test_a_missing_module_met_inside_a_command_is_mapped_to_its_extra_once(tmp_path: Path) -> None:
    """`judgecal serve` looks for uvicorn itself; the refusal reaches the command line's one mapping."""
    res = _run(tmp_path, "uvicorn", "serve", "--port", "1")
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        "judgecal serve: needs the 'server' extra (uvicorn is not installed): pip install 'judgecal-toolkit[server]'"]
    assert "Traceback" not in res.stderr


def test_only_known_optional_modules_are_mapped() -> None:
    assert isinstance(missing_extra(ModuleNotFoundError("x", name="weasyprint.css")), MissingExtraError)
    assert missing_extra(ModuleNotFoundError("x", name="judgecal.data.store")) is None  # a broken install
    assert missing_extra(ImportError("cannot import name 'x'", name="streamlit")) is None  # installed, broken
    assert missing_extra(ValueError("streamlit")) is None
    with pytest.raises(MissingExtraError, match=r"'ray' extra"):
        require("json", "ray.surely_not_a_module")


def test_every_extra_named_exists_in_pyproject() -> None:
    import tomllib

    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert set(EXTRAS.values()) <= set(extras)
