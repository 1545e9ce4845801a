"""An installed (non-editable) gossamer holds every file its code reads: each data file under
``src/gossamer`` (Lua scripts, the dashboard's and the rule editor's pages) matches a
``package-data`` pattern of pyproject.toml, which is what setuptools copies into a wheel."""

from __future__ import annotations

import glob
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "gossamer"


def shipped() -> set[str]:
    """The files the ``package-data`` patterns take, relative to the package."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["gossamer"]
    return {name for pattern in patterns for name in glob.glob(pattern, root_dir=PACKAGE)}


def data_files() -> set[str]:
    """Every file of the package but Python sources, their caches and the C parts (their
    sources and the modules built from them, which setup.py's extensions ship)."""
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file()
        and path.suffix not in (".py", ".pyc", ".c", ".h", ".so")
        and "__pycache__" not in path.parts
    }


def test_every_data_file_is_shipped() -> None:
    assert data_files() - shipped() == set()


def test_the_scripts_are_where_their_loaders_read_them() -> None:
    assert "frontier/redis/lua/claim.lua" in shipped()
    assert "digests/lua/exact.lua" in shipped()
