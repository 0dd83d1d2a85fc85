"""Plan mode ends in a plan: ExitPlanMode shows it, and the person approves it (asking before edits,
or auto-accepting them) or keeps planning, through the real session, policy and executor."""

from __future__ import annotations

import pytest

from agent_tui.engine import events as ev
from tests.loopback import reply, text, tool_use

from .helpers import finished, make_app, screen_text, type_prompt, wait_armed, wait_until

PLAN = "# Fix the parser\n\n1. Add a failing test for empty input\n2. Return [] early in `parse()`\n"


def _plan_then_edit(api, tmp_path) -> None:
    (tmp_path / "parser.py").write_text("def parse(s):\n    return s.split()\n")
    api.push(
        reply(text("Here is my plan."), tool_use("ExitPlanMode", {"plan": PLAN}, id="toolu_plan")),
        reply(tool_use("Write", {"file_path": str(tmp_path / "notes.md"), "content": "done\n"}, id="toolu_w")),
        reply(text("Done.")),
    )


@pytest.mark.parametrize(("key", "mode", "write_asks"), [("a", "acceptEdits", False), ("y", "default", True)])
async def test_approving_the_plan_leaves_plan_mode_and_the_turn_goes_on(api, tmp_path, key, mode, write_asks):
    _plan_then_edit(api, tmp_path)
    app, recorded = make_app(api, tmp_path, mode="plan")
    async with app.run_test(size=(100, 36)) as pilot:
        await type_prompt(pilot, "fix the parser")
        await wait_armed(pilot, app, always=True)
        shown = screen_text(app)
        assert "Plan ready" in shown and "Return [] early in `parse()`" in shown
        assert "approve, auto-accept edits" in shown and "keep planning" in shown
        await pilot.press(key)
        if write_asks:
            await wait_until(pilot, lambda: len([e for e in recorded if isinstance(e, ev.PermissionRequested)]) == 2)
            await wait_armed(pilot, app)
            await pilot.press("y")
        await wait_until(pilot, finished(recorded))
        assert app.session.policy.mode == mode
    asked = [e.tool_name for e in recorded if isinstance(e, ev.PermissionRequested)]
    assert asked == (["ExitPlanMode", "Write"] if write_asks else ["ExitPlanMode"])
    assert (tmp_path / "notes.md").read_text() == "done\n"
    changes = [e.mode for e in recorded if isinstance(e, ev.ModeChanged)]
    assert changes == [mode]
    result = next(e for e in recorded if isinstance(e, ev.ToolFinished) and e.tool_use_id == "toolu_plan")
    assert not result.is_error


async def test_keeping_on_planning_stays_in_plan_mode_with_the_persons_feedback(api, tmp_path):
    (tmp_path / "parser.py").write_text("x\n")
    api.push(reply(text("Plan:"), tool_use("ExitPlanMode", {"plan": PLAN}, id="toolu_plan")), reply(text("Revised.")))
    app, recorded = make_app(api, tmp_path, mode="plan")
    async with app.run_test(size=(100, 36)) as pilot:
        await type_prompt(pilot, "fix the parser")
        await wait_armed(pilot, app)
        await pilot.press("e")
        await pilot.press(*"also handle None")
        await pilot.press("enter")
        await wait_until(pilot, finished(recorded))
        assert app.session.policy.mode == "plan"
    [result] = [e for e in recorded if isinstance(e, ev.ToolFinished) and e.tool_use_id == "toolu_plan"]
    assert result.is_error
    body = api.requests[1].body["messages"][-1]["content"]
    assert "also handle None" in str(body)
