"""Where the timeline goes: a side pane only when the transcript keeps at least 100
columns beside it, else the one-line strip; Ctrl+T hides and shows whichever is there;
nothing is drawn before the first turn; and the pane follows the newest turn."""

from __future__ import annotations

import pytest

from agent_tui.tui.app import MIN_TRANSCRIPT
from tests.loopback import reply, text, tool_use

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_until


def _one_tool_turn(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "ls"}, id="toolu_ls")), reply(text("One file.")))
    return make_app(api, tmp_path, allow=["Bash"])


async def _after_one_turn(pilot, app, recorded) -> None:
    await type_prompt(pilot, "list")
    await wait_until(pilot, finished(recorded))
    await settle(pilot, app)


async def test_at_80_columns_ctrl_t_hides_and_shows_the_strip_and_never_opens_a_pane(api, tmp_path):
    app, recorded = _one_tool_turn(api, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await _after_one_turn(pilot, app, recorded)
        assert app.timeline_strip.display and not app.timeline.display
        await pilot.press("ctrl+t")
        await pilot.pause(0.05)
        assert not app.timeline_strip.display and not app.timeline.display
        assert app.transcript.outer_size.width == 80
        assert not any("timeline" in line and "ctrl+t" in line for line in screen_text(app).splitlines())
        await pilot.press("ctrl+t")
        await pilot.pause(0.05)
        assert app.timeline_strip.display and not app.timeline.display
        assert "model · turn" not in screen_text(app)


async def test_at_160_columns_ctrl_t_hides_and_shows_the_pane(api, tmp_path):
    app, recorded = _one_tool_turn(api, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _after_one_turn(pilot, app, recorded)
        assert app.timeline.display and not app.timeline_strip.display
        assert app.transcript.outer_size.width >= MIN_TRANSCRIPT
        assert "model · turn 1" in screen_text(app)
        await pilot.press("ctrl+t")
        await pilot.pause(0.05)
        assert not app.timeline.display and not app.timeline_strip.display
        assert app.transcript.outer_size.width == 160
        await pilot.press("ctrl+t")
        await pilot.pause(0.05)
        assert app.timeline.display and "model · turn 1" in screen_text(app)


async def test_at_120_columns_the_transcript_keeps_the_width_and_the_timeline_is_a_strip(api, tmp_path):
    app, recorded = _one_tool_turn(api, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _after_one_turn(pilot, app, recorded)
        assert not app.timeline.display and app.timeline_strip.display
        assert app.transcript.outer_size.width == 120
        # Wide enough for the pane and 100 columns of transcript: the pane.
        await pilot.resize_terminal(150, 40)
        await pilot.pause(0.05)
        assert app.timeline.display and app.transcript.outer_size.width >= MIN_TRANSCRIPT


async def test_before_the_first_turn_a_wide_screen_draws_no_empty_pane(api, tmp_path):
    app, recorded = _one_tool_turn(api, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.1)
        assert not app.timeline.display and not app.timeline_strip.display
        assert app.transcript.outer_size.width == 160
        # Ctrl+T has nothing to hide yet, and does not keep the first turn's timeline away.
        await pilot.press("ctrl+t")
        await pilot.pause(0.05)
        assert "The timeline shows once the first turn starts." in [n.message for n in app._notifications]
        await _after_one_turn(pilot, app, recorded)
        assert app.timeline.display


@pytest.mark.parametrize("hidden_first", [False, True], ids=["shown", "opened-after"])
async def test_the_pane_follows_the_newest_turn_of_a_long_run(api, tmp_path, hidden_first):
    """With the pane on screen throughout, or opened (by widening the terminal) after the run."""
    turns = 100

    def answer(body, index):
        if index < turns - 1:
            return reply(tool_use("Glob", {"pattern": f"*.{index}"}, id=f"toolu_{index:03d}"))
        return reply(text("Done after a hundred turns."))

    api.handler = answer
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(120 if hidden_first else 160, 48)) as pilot:
        await type_prompt(pilot, "keep going")
        if hidden_first:
            # Half the run with the pane on screen, the rest with only the strip.
            await wait_until(pilot, lambda: app.gauge.turns >= turns // 2, timeout=120)
            await pilot.resize_terminal(160, 48)
            await pilot.pause(0.1)
            await pilot.resize_terminal(120, 48)
        await wait_until(pilot, finished(recorded), timeout=120)
        await settle(pilot, app)
        if hidden_first:
            assert not app.timeline.display
            await pilot.resize_terminal(160, 48)
        await pilot.pause(0.2)
        shown = screen_text(app)
        assert f"model · turn {turns}" in shown
        assert "model · turn 80 " not in shown
        timeline = app.timeline
        assert timeline.scroll_y == timeline.max_scroll_y > 0
