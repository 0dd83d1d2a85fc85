"""A background agent in the TUI: its Agent row keeps running after the turn ended, turns done when
the agent reports, and with nothing running a turn of its own gives the model the report."""

from __future__ import annotations

from agent_tui.engine import events as ev
from agent_tui.tui.state import ToolStatus
from tests.loopback import gated, reply, text, tool_use
from tests.test_subagent import route

from .helpers import finished, make_app, screen_text, type_prompt, wait_until

SURVEY = {"description": "Survey the TODOs", "prompt": "count the TODOs", "run_in_background": True}


async def test_the_agent_row_runs_on_after_the_turn_and_ends_when_the_agent_reports(api, tmp_path):
    report, release = gated(reply(text("Found 3 TODOs.")))
    seen = route(api, [reply(tool_use("Agent", SURVEY, id="toolu_bg")), reply(text("It is working on it.")),
                       reply(text("The survey found 3 TODOs."))], **{"count the TODOs": [report]})
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await type_prompt(pilot, "survey in the background")
        await wait_until(pilot, finished(recorded))
        record = app.conversation.tool_records["toolu_bg"]
        await wait_until(pilot, lambda: "It is working on it." in screen_text(app))
        assert record.status is ToolStatus.RUNNING and "running…" in screen_text(app)

        release.set()
        await wait_until(pilot, lambda: 'Agent "Survey the TODOs" finished' in screen_text(app))
        assert record.status is ToolStatus.DONE
        # Nothing was running: a turn of its own gives the model the report, and the answer shows.
        await wait_until(pilot, lambda: "The survey found 3 TODOs." in screen_text(app))
        assert "A background agent reported" in screen_text(app)
        assert [e.status for e in recorded if isinstance(e, ev.BackgroundTask)] == ["running", "completed"]
    last = seen["parent"][-1]["messages"][-1]
    assert len(last["content"]) == 1 and "<task-notification>" in last["content"][0]["text"]
    assert "Found 3 TODOs." in last["content"][0]["text"]
