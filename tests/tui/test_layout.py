"""The layout at the sizes people use: the timeline folds into a strip on narrow
terminals, Ctrl+T hides and shows it, and a permission prompt always shows its keys."""

from __future__ import annotations

import pytest

from agent_tui.tui.widgets.permission import PermissionPrompt
from tests.loopback import reply, text, tool_use

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_armed, wait_until

LONG_FILE = "\n".join(f"line {i:02d} of a file long enough to need scrolling" for i in range(60)) + "\n"


async def _asked(pilot, app, prompt: str) -> PermissionPrompt:
    """Send `prompt`; the permission prompt, once it shows a request."""
    await type_prompt(pilot, prompt)
    asking = app.query_one(PermissionPrompt)
    await wait_until(pilot, lambda: asking.current is not None)
    await wait_armed(pilot, app, always=True)
    return asking


def _one_tool_turn(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "ls"}, id="toolu_ls")), reply(text("One file.")))
    return make_app(api, tmp_path, allow=["Bash"])


async def test_at_60_columns_the_transcript_gets_the_width_and_the_timeline_is_a_strip(api, tmp_path):
    app, recorded = _one_tool_turn(api, tmp_path)
    async with app.run_test(size=(60, 20)) as pilot:
        await type_prompt(pilot, "list")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        assert not app.timeline.display
        assert app.transcript.outer_size.width == 60
        assert app.timeline_strip.display
        strip = [line for line in screen_text(app).splitlines() if "timeline" in line]
        assert len(strip) == 1 and "turn 2" in strip[0] and "ctrl+t" in strip[0]


async def test_the_strip_shows_the_tools_of_the_latest_turn(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "ls"}, id="toolu_ls")), reply(text("Done.")))
    app, recorded = make_app(api, tmp_path, allow=["Bash"])
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "list")
        await wait_until(pilot, lambda: "toolu_ls" in app.conversation.tool_records and app.conversation.tool_records["toolu_ls"].finished)
        await pilot.pause(0.05)
        rendered = str(app.timeline_strip.render())
        assert "◆ turn" in rendered and "● Bash" in rendered
        await wait_until(pilot, finished(recorded))


async def test_before_any_turn_a_narrow_screen_spends_no_line_on_the_strip(api, tmp_path):
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.timeline.display and not app.timeline_strip.display


async def test_resizing_below_100_columns_collapses_the_timeline_and_widening_restores_it(api, tmp_path):
    app, recorded = _one_tool_turn(api, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await type_prompt(pilot, "list")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        assert app.timeline.display and not app.timeline_strip.display
        assert app.transcript.size.width < 160 - 40

        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.05)
        assert not app.timeline.display and app.timeline_strip.display
        assert app.transcript.outer_size.width == 80

        await pilot.resize_terminal(160, 48)
        await pilot.pause(0.05)
        assert app.timeline.display and not app.timeline_strip.display


async def test_ctrl_t_hides_the_strip_on_a_narrow_screen_and_the_choice_sticks_across_a_resize(api, tmp_path):
    app, recorded = _one_tool_turn(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await type_prompt(pilot, "list")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await pilot.press("ctrl+t")
        await pilot.pause(0.05)
        # Too narrow for the pane: Ctrl+T hides what is there, the strip, and opens nothing.
        assert not app.timeline.display and not app.timeline_strip.display

        await pilot.resize_terminal(160, 48)
        await pilot.pause(0.05)
        # The choice sticks across a resize until Ctrl+T is pressed again.
        assert not app.timeline.display and not app.timeline_strip.display
        await pilot.press("ctrl+t")
        await pilot.pause(0.05)
        assert app.timeline.display and "model · turn 1" in screen_text(app)


async def test_at_80_by_24_a_long_diff_scrolls_and_the_answer_keys_stay_on_screen(api, tmp_path):
    target = tmp_path / "long.txt"
    api.push(
        reply(tool_use("Write", {"file_path": str(target), "content": LONG_FILE}, id="toolu_write")),
        reply(text("Written.")),
    )
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        prompt = await _asked(pilot, app, "write a long file")
        shown = screen_text(app)
        assert "y yes" in shown and "n no" in shown and "e no, and" in shown
        assert "+line 00" in shown and "+line 59" not in shown
        body = prompt.query_one("#permission-body")
        assert body.max_scroll_y > 0

        await pilot.press("pagedown", "pagedown")
        await pilot.pause(0.05)
        assert body.scroll_y > 0
        shown = screen_text(app)
        assert "+line 00" not in shown and "y yes" in shown

        await pilot.press("y")
        await wait_until(pilot, finished(recorded))
    assert target.read_text() == LONG_FILE


async def test_a_long_rule_keeps_whole_answers_in_shorter_words_when_the_full_ones_take_three_rows(api, tmp_path):
    command = "npm run build && npm test"
    api.push(reply(tool_use("Bash", {"command": command}, id="toolu_npm")), reply(text("Built.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        prompt = await _asked(pilot, app, "build and test")
        rule = prompt.current.suggested_rule
        assert rule and len(rule) > 30
        full = ["y yes", f"a yes, and don't ask again for {rule}", "n no", "e no, and tell the model why"]
        rows = str(prompt.query_one("#permission-keys").render()).split("\n")
        # Full words on two rows at 120 columns, broken between answers.
        assert len(rows) == 2 and all(len(row) <= 120 - 6 for row in rows)
        assert [answer for row in rows for answer in row.split("   ")] == full

        # At 80 columns they would take three rows: shorter words, the rule `a` saves still whole.
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.1)
        short = ["y yes", f"a always {rule}", "n no", "e say why"]
        rows = str(prompt.query_one("#permission-keys").render()).split("\n")
        assert [answer for row in rows for answer in row.split("  ")] == short
        assert all(len(row) <= 80 - 6 for row in rows)
        shown = screen_text(app).splitlines()
        for answer in short:
            assert any(answer in line for line in shown), answer

        # Narrower still (the rule would make it three rows): the short words alone, on one row.
        await pilot.resize_terminal(60, 24)
        await pilot.pause(0.1)
        rows = str(prompt.query_one("#permission-keys").render()).split("\n")
        assert rows == ["y yes  a always  n no  e say why"]
        assert any("e say why" in line for line in screen_text(app).splitlines())

        await pilot.press("y")
        await wait_until(pilot, finished(recorded))


@pytest.mark.parametrize("size", [(80, 24), (40, 12)])
async def test_an_edit_prompt_starts_at_its_first_changed_line_and_keeps_every_answer_in_view(api, tmp_path, size):
    target = tmp_path / "shapes.py"
    target.write_text("".join(f"WIDTH_{n} = {n}\n" for n in range(1, 41)))
    edit = {"file_path": str(target), "old_string": "WIDTH_21 = 21\n", "new_string": "WIDTH_21 = 210\n" * 12}
    api.push(reply(tool_use("Read", {"file_path": str(target)}, id="toolu_read")),
             reply(tool_use("Edit", edit, id="toolu_edit")), reply(text("Done.")))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=size) as pilot:
        prompt = await _asked(pilot, app, "widen")
        await pilot.pause(0.1)
        lines = screen_text(app).splitlines()
        top = next(n for n, line in enumerate(lines) if line.lstrip().startswith("╭") and "Edit" in lines[n + 1])
        box = lines[top:next(n for n in range(top, len(lines)) if lines[n].lstrip().startswith("╰")) + 1]
        assert "shapes.py" in box[1]  # the file in the title, not a body row
        assert box[2].split("│")[1].split() == ["21", "-WIDTH_21", "=", "21"], box  # no ---/+++, no context first
        keys = str(prompt.query_one("#permission-keys").render()).split("\n")
        assert all(key in "\n".join(keys) for key in ("y yes", "a ", "n no", "e ")), keys
        assert all(any(row in line for line in box) for row in keys), box  # every answer row on screen
        assert "more lines (↓ scrolls)" in box[-1]
        hidden = int(box[-1].split("─", 1)[1].split()[0])
        await pilot.press("pagedown", "pagedown")
        await pilot.pause(0.1)
        assert "more line" not in screen_text(app) and hidden > 0
        assert prompt.query_one("#permission-body").scroll_y > 0
        await pilot.press("n")
        await wait_until(pilot, finished(recorded))
