"""The input's newline keys and hint: Ctrl+J is named; Shift+Enter only once the terminal
reports the kitty keyboard protocol (then it is told apart from Enter)."""

from __future__ import annotations

from agent_tui.tui.terminal_driver import KittyKeyboard, take_keyboard_report
from tests.loopback import reply, text

from .helpers import finished, make_app, wait_until


def test_the_keyboard_flags_report_is_taken_out_of_the_input_and_read():
    assert take_keyboard_report("ab\x1b[?9ucd") == ("abcd", 9)
    assert take_keyboard_report("\x1b[?0u") == ("", 0)
    assert take_keyboard_report("plain \x1b[13;2u") == ("plain \x1b[13;2u", None)  # a key, not a report


async def test_the_hint_names_ctrl_j_and_shift_enter_only_once_the_terminal_reports_it(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(100, 24)) as pilot:
        hint = app.prompt_input.placeholder
        assert "Ctrl+J newline" in hint and "Shift+Enter" not in hint
        app.post_message(KittyKeyboard())
        await wait_until(pilot, lambda: "Shift+Enter newline" in app.prompt_input.placeholder)


async def test_ctrl_j_and_backslash_enter_insert_newlines_and_enter_sends_them(api, tmp_path):
    api.push(reply(text("Three lines.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.press(*"one", "ctrl+j", *"two\\", "enter")
        await pilot.pause(0.05)
        assert app.prompt_input.text == "one\ntwo\n" and not api.requests
        await pilot.press(*"three", "enter")
        await wait_until(pilot, finished(recorded))
    assert api.requests[0].body["messages"][-1]["content"][0]["text"] == "one\ntwo\nthree"
