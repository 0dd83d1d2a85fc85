"""Escape sequences in model text, tool input and tool output never reach the terminal:
the screen shows them as visible control pictures (ESC as ␛) instead."""

from __future__ import annotations

from agent_tui.engine import events as ev
from agent_tui.tui.safe_text import terminal_safe
from tests.loopback import reply, text, tool_use

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_armed, wait_until

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\x9b31m\x1bPq#0\x1b\\\x08done"
# What a terminal would act on: ESC, BEL, backspace and the C1 controls (8-bit CSI, OSC, ST).
ACTIVE = ("\x1b", "\x07", "\x08", "\x9b", "\x9d", "\x9c")


def assert_inert(shown: str) -> None:
    assert not [c for c in ACTIVE if c in shown], repr(shown)


def test_control_sequences_become_visible_pictures_and_colours_are_dropped():
    assert terminal_safe("\x1b[31mred\x1b[0m plain") == "red plain"
    assert terminal_safe("\x1b]0;pwned\x07") == "␛]0;pwned␇"
    assert terminal_safe("a\r\nb\tc\rd") == "a\nb\tcd"
    assert terminal_safe("\x9b2J\x7f") == "\ufffd2J\u2421"
    assert terminal_safe("plain text, ünïcode ✓") == "plain text, ünïcode ✓"


async def test_streamed_model_text_with_escape_sequences_is_drawn_inert(api, tmp_path):
    api.push(reply(text(f"Title: {HOSTILE}\n\nSecond paragraph {HOSTILE}"), chunk=7))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await type_prompt(pilot, "say something")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        shown = screen_text(app)
    assert_inert(shown)
    assert "␛]0;pwned␇␛[2J" in shown and "Second paragraph" in shown


async def test_a_command_and_its_output_with_escape_sequences_are_drawn_inert(api, tmp_path):
    command = "printf '\x1b]0;pwned\x07 \\033[2J \\033[31mRED\\033[0m \\033]0;out\\007 WORD2\\n'"
    api.push(reply(tool_use("Bash", {"command": command}, id="toolu_esc")), reply(text("Ran it.")))
    app, recorded = make_app(api, tmp_path, mode="bypassPermissions")
    async with app.run_test(size=(140, 30)) as pilot:
        await type_prompt(pilot, "run it")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        row_and_timeline = screen_text(app)
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: "WORD2" in screen_text(app))
        expanded = screen_text(app)
    output = next(e for e in recorded if isinstance(e, ev.ToolFinished)).preview
    assert "\x1b[31mRED" in output  # the engine and the model get the real bytes
    assert_inert(row_and_timeline)
    assert_inert(expanded)
    assert "␛]0;out␇" in expanded and "RED" in expanded


async def test_a_permission_prompt_shows_escape_sequences_instead_of_obeying_them(api, tmp_path):
    target = tmp_path / "notes.txt"
    api.push(reply(tool_use("Write", {"file_path": str(target), "content": f"hello {HOSTILE}\n"})), reply("ok"))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await type_prompt(pilot, "write it")
        await wait_until(pilot, lambda: any(isinstance(e, ev.PermissionRequested) for e in recorded))
        await wait_until(pilot, lambda: "pwned" in screen_text(app))
        shown = screen_text(app)
        await wait_armed(pilot, app)
        await pilot.press("n")
        await wait_until(pilot, finished(recorded))
    assert_inert(shown)
    assert "␛]0;pwned␇" in shown
