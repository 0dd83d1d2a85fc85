"""A custom command's ``!`command` `` line that needs approval asks in the TUI before its prompt is sent."""

from __future__ import annotations

from agent_tui.engine import events as ev
from tests.loopback import reply
from tests.test_claude_project import write
from tests.test_command_shell_lines import prompt_text

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_armed, wait_until


async def test_a_line_that_asks_runs_once_approved_and_its_output_is_sent(api, tmp_path):
    write(tmp_path / ".claude" / "commands" / "mk.md", "Made: !`touch made.txt && echo done`\nSay so.")
    api.push(reply("It is made."))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "/mk")
        await wait_armed(pilot, app)
        assert "touch made.txt && echo done" in screen_text(app)
        assert api.requests == [] and not (tmp_path / "made.txt").exists()
        await pilot.press("y")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
    assert (tmp_path / "made.txt").exists()
    assert "Made: done\nSay so." in prompt_text(api)
    asked = [e for e in recorded if isinstance(e, ev.PermissionRequested)]
    assert [e.input["command"] for e in asked] == ["touch made.txt && echo done"]


async def test_a_line_refused_in_the_tui_sends_nothing_and_says_why(api, tmp_path):
    write(tmp_path / ".claude" / "commands" / "mk.md", "Made: !`touch made.txt`")
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "/mk")
        await wait_armed(pilot, app)
        await pilot.press("n")
        await wait_until(pilot, lambda: "/mk: !`touch made.txt` was not run: permission denied" in screen_text(app))
    assert api.requests == [] and not (tmp_path / "made.txt").exists()
    assert not any(isinstance(e, ev.UserMessage) for e in recorded)
