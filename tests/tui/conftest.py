"""Fixtures for the TUI tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def truecolor_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every app under test draws for a truecolor terminal with colour on, whatever terminal
    runs the tests: what the screen shows depends on the colour depth (the diff's palette).
    A test of another depth sets TERM / COLORTERM / NO_COLOR itself."""
    monkeypatch.setenv("COLORTERM", "truecolor")
    monkeypatch.delenv("NO_COLOR", raising=False)
