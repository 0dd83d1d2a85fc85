"""What the wheel ships: every package, one version, the themes."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import agent_tui

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_under_agent_tui_is_listed_for_the_wheel():
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "agent_tui").rglob("__init__.py")}
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert found - listed == set()
    assert listed - found == {"agent_tui.themes"}  # kept at the top level, mapped into the package


def test_the_version_has_one_source():
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert "version" not in PYPROJECT["project"]
    assert importlib.metadata.version("agent-tui") == agent_tui.__version__


def test_the_built_in_themes_install_with_the_package():
    from importlib.resources import files

    names = sorted(p.name for p in files("agent_tui.themes").iterdir() if p.name.endswith(".toml"))
    assert names == ["agent-dark.toml", "agent-high-contrast.toml", "agent-light.toml"]
