"""/export asks (clipboard or a file) instead of writing into the project; /theme marks the
current theme and remembers a new one; /help's keys take one line each."""

from __future__ import annotations

import json

from agent_tui.tui.commands import KEYS

from .helpers import make_app, screen_text, type_prompt, wait_until


async def test_export_without_a_file_asks_and_writes_nothing_and_clipboard_copies(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await type_prompt(pilot, "/export")
        await wait_until(pilot, lambda: "/export clipboard" in screen_text(app))
        assert "/export FILE" in screen_text(app)
        assert not list(tmp_path.glob("agent-tui-*.md"))
        await type_prompt(pilot, "/export clipboard")
        await wait_until(pilot, lambda: "copied to the clipboard" in screen_text(app))
        assert app.clipboard.startswith("# agent-tui session")
        assert not list(tmp_path.glob("*.md"))


async def test_theme_lists_the_themes_marking_the_current_one_and_remembers_a_new_one(api, tmp_path, monkeypatch):
    config = tmp_path / "config"
    monkeypatch.setenv("AGENT_TUI_CONFIG_DIR", str(config))
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(100, 40)) as pilot:
        await type_prompt(pilot, "/theme")
        await wait_until(pilot, lambda: "(current)" in screen_text(app))
        assert any("● agent-dark (current)" in line for line in screen_text(app).splitlines())
        await type_prompt(pilot, "/theme agent-light")
        await wait_until(pilot, lambda: app.theme == "agent-light" and "remembered in" in screen_text(app))
    assert json.loads((config / "settings.json").read_text())["theme"] == "agent-light"


async def test_help_gives_each_key_one_line_at_80_columns(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(80, 60)) as pilot:
        await type_prompt(pilot, "/help")
        await wait_until(pilot, lambda: "**Commands**" in screen_text(app) or "Commands" in screen_text(app))
        lines = screen_text(app).splitlines()
        start = next(n for n, line in enumerate(lines) if "Keys" in line)
        end = next(n for n in range(start + 1, len(lines)) if "Commands" in lines[n] and "palette" not in lines[n])
        keys = [line for line in lines[start + 1:end] if line.strip(" █")]
        assert len(keys) == len(KEYS), "\n".join(keys)  # one row each, none wrapped
