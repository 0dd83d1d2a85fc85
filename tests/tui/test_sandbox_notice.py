"""The app tells the person, at start, when Bash cannot be sandboxed (bwrap missing from PATH)."""

from __future__ import annotations

from tests.tui.helpers import make_app, screen_text, wait_until


async def test_the_app_says_bash_is_unsandboxed_when_bwrap_is_missing(api, tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    app, _ = make_app(api, tmp_path, sandbox=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: "Bash runs unsandboxed" in screen_text(app))
        assert "bubblewrap (bwrap) is not installed" in screen_text(app)
