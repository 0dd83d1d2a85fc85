"""MCP prompts, resources and elicitation in the TUI, against a real MCP server (tests/mcp_kit.py)
and the loopback Messages server."""

from __future__ import annotations

from pathlib import Path

from agent_tui.engine import events as ev
from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from agent_tui.tui.app import AgentApp
from agent_tui.tui.elicitation import ElicitationScreen
from agent_tui.tui.widgets.prompt_input import CompletionMenu
from tests.loopback import reply, tool_use
from tests.mcp_kit import kit_server

from .helpers import finished, last_user_blocks, screen_text, type_prompt, wait_until


def kit_app(api, cwd: Path) -> tuple[AgentApp, list[ev.Event]]:
    session = Session(
        model=AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test"),
        tools=default_tools(cwd),
        cwd=cwd,
        policy=PermissionPolicy(allow=["mcp__kit"], cwd=cwd, local_settings_path=cwd / "settings.local.json"),
        options=SessionOptions(mcp_servers={"kit": kit_server(cwd)}),
    )
    recorded: list[ev.Event] = []
    session.bus.add_listener(recorded.append)
    return AgentApp(session), recorded


async def connected(pilot, app: AgentApp) -> None:
    await wait_until(pilot, lambda: app.session.mcp_prompts(), timeout=60)


async def test_an_elicitation_is_a_form_whose_accepted_values_reach_the_server(api, tmp_path):
    api.push(reply(tool_use("mcp__kit__book", {}, id="t_book")), reply("Booked."))
    app, recorded = kit_app(api, tmp_path)
    async with app.run_test(size=(110, 40)) as pilot:
        await type_prompt(pilot, "book a table")
        await wait_until(pilot, lambda: isinstance(app.screen, ElicitationScreen), timeout=60)
        await wait_until(pilot, lambda: "Booking details, please" in screen_text(app))
        shown = screen_text(app)
        assert "MCP server kit asks:" in shown and "Booking details, please" in shown
        assert "Name * — Your name" in shown and "Guests * — How many guests" in shown
        await pilot.press(*"Ann", "enter")  # Enter moves on to the next field
        await pilot.press("ctrl+s")  # guests is still empty: not sent
        await wait_until(pilot, lambda: "Guests is required" in screen_text(app))
        await pilot.press(*"30")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: "Guests must be between 1 and 12" in screen_text(app))
        await pilot.press("backspace", "tab", "space")  # 3 guests; tick Vegan
        await pilot.click("#elicitation-accept")
        await wait_until(pilot, finished(recorded), timeout=60)
    [result] = [b for b in last_user_blocks(api.requests[1].body) if b.get("type") == "tool_result"]
    assert result["content"] == "booked: Ann, 3 guests, vegan=True, room=garden"
    assert [e.action for e in recorded if isinstance(e, ev.ElicitationResolved)] == ["accept"]


async def test_escape_cancels_the_form(api, tmp_path):
    api.push(reply(tool_use("mcp__kit__book", {}, id="t_book")), reply("Cancelled."))
    app, recorded = kit_app(api, tmp_path)
    async with app.run_test(size=(110, 40)) as pilot:
        await type_prompt(pilot, "book a table")
        await wait_until(pilot, lambda: isinstance(app.screen, ElicitationScreen), timeout=60)
        await pilot.press("escape")
        await wait_until(pilot, finished(recorded), timeout=60)
        assert not isinstance(app.screen, ElicitationScreen)
    [result] = [b for b in last_user_blocks(api.requests[1].body) if b.get("type") == "tool_result"]
    assert result["content"] == "booking cancel"


async def test_mcp_prompts_are_slash_commands_and_expand_into_the_prompt(api, tmp_path):
    api.push(reply("Reviewed."))
    app, recorded = kit_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await connected(pilot, app)
        await pilot.press(*"/mcp__kit__r")
        menu = app.screen.query_one(CompletionMenu)
        await wait_until(pilot, lambda: menu.display and menu.option_count == 1)
        assert "<language> [focus] Review code in a language. (MCP)" in screen_text(app)
        await pilot.press("tab", *'"Python 3"', "enter")
        await wait_until(pilot, finished(recorded), timeout=60)
        assert '/mcp__kit__review "Python 3"' in screen_text(app)
    assert last_user_blocks(api.requests[0].body)[-1]["text"] == "Review the Python 3 code, focusing on style."


async def test_a_prompt_missing_its_argument_is_not_sent(api, tmp_path):
    app, recorded = kit_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await connected(pilot, app)
        await type_prompt(pilot, "/mcp__kit__review")
        await wait_until(pilot, lambda: "Not sent: /mcp__kit__review needs language" in screen_text(app))
    assert api.requests == []


async def test_at_completion_offers_resources_and_a_mention_attaches_one(api, tmp_path):
    api.push(reply("Otter food."))
    app, recorded = kit_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await connected(pilot, app)
        await pilot.press(*"read @kit:kit://n")
        menu = app.screen.query_one(CompletionMenu)
        await wait_until(pilot, lambda: menu.display and menu.option_count == 1)
        assert "@kit:kit://notes/today today" in screen_text(app)
        await pilot.press("tab", "enter")
        await wait_until(pilot, finished(recorded), timeout=60)
    call, result, typed = last_user_blocks(api.requests[0].body)
    assert "Buy otter food." in result["text"] and typed["text"] == "read @kit:kit://notes/today "


async def test_an_interrupted_turn_closes_the_form(api, tmp_path):
    api.push(reply(tool_use("mcp__kit__book", {}, id="t_book")))
    app, recorded = kit_app(api, tmp_path)
    async with app.run_test(size=(110, 40)) as pilot:
        await type_prompt(pilot, "book a table")
        await wait_until(pilot, lambda: isinstance(app.screen, ElicitationScreen), timeout=60)
        await pilot.press("ctrl+c")  # Esc belongs to the form while it is open
        await wait_until(pilot, finished(recorded), timeout=60)
        await wait_until(pilot, lambda: not isinstance(app.screen, ElicitationScreen))
    assert [e.action for e in recorded if isinstance(e, ev.ElicitationResolved)] == ["cancel"]
    assert [e.terminal_reason for e in recorded if isinstance(e, ev.QueryFinished)] == ["aborted_tools"]


async def test_slash_mcp_lists_the_servers_prompts_and_resources(api, tmp_path):
    app, recorded = kit_app(api, tmp_path)
    async with app.run_test(size=(130, 40)) as pilot:
        await connected(pilot, app)
        await type_prompt(pilot, "/mcp")
        await wait_until(pilot, lambda: "(prompt)" in screen_text(app))
        shown = screen_text(app)
        assert "/mcp__kit__review <language> [focus] — Review code in a language. (prompt)" in shown
        assert "2 resources: @kit:kit://notes/today, @kit:kit://data/config.json" in shown
