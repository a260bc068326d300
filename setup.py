"""The wheel's packages: every package under ``judgecal/``, found (a new subpackage cannot be left out), plus
the top-level folders people edit that ship inside it, as ``[tool.setuptools.package-dir]`` in pyproject.toml
maps them (``rubrics/`` as ``judgecal.rubrics``, ``apps/`` as ``judgecal.apps``, ``annotation/`` as
``judgecal.annotation_assets``). Everything else about the package is in pyproject.toml."""

import tomllib
from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
MAPPED = [name for name in tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
          ["package-dir"] if name]

setup(packages=sorted({*find_packages(str(ROOT), include=["judgecal", "judgecal.*"]), *MAPPED}))
