"""Fixtures for the TUI tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def truecolor_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every app under test draws for a truecolor terminal with colour on, whatever terminal
    runs the tests: what the screen shows depends on the colour depth (the diff's palette).
    A test of another depth sets TERM / COLORTERM / NO_COLOR itself."""
    monkeypatch.setenv("COLORTERM", "truecolor")
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small project (two modules and a README) in a home of its own, for the snapshots."""
    monkeypatch.setenv("HOME", str(tmp_path))
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text('def greet(name):\n    return "Hello, " + name\n')
    (root / "src" / "util.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "README.md").write_text("# project\n")
    return root
