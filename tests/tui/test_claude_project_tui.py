"""Claude Code project files in the TUI: custom commands in the menu and /help, custom
agents for the Agent tool, the `.mcp.json` approval, `/init`, and notifications when away."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from textual import events

from agent_tui.config import Settings
from agent_tui.engine import events as ev
from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.models.demo.model import DemoModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from agent_tui.tui.app import AgentApp
from agent_tui.tui.notify import osc777
from agent_tui.tui.screens import McpApprovalScreen
from agent_tui.tui.widgets.permission import PermissionPrompt
from agent_tui.tui.widgets.prompt_input import CompletionMenu
from tests.loopback import reply, tool_use
from tests.test_claude_project import FIXER_AGENT, TICKETS_SERVER, TRIAGE_COMMAND, write

from .helpers import finished, make_app, screen_text, settle, type_prompt, wait_armed, wait_until


def app_for(api_or_model, cwd: Path, *, settings: Settings | None = None, **app_options) -> tuple[AgentApp, list]:
    model = api_or_model if isinstance(api_or_model, DemoModel) else AnthropicModel(
        "claude-sonnet-4-6", base_url=api_or_model.url, api_key="test")
    settings = settings or Settings()
    session = Session(
        model=model,
        tools=default_tools(cwd),
        cwd=cwd,
        policy=PermissionPolicy(mode="default", cwd=cwd, local_settings_path=cwd / ".agent-tui" / "settings.local.json"),
        # What the command line passes the session of the settings (the app keeps the rest).
        options=SessionOptions(hooks=settings.hooks, env=settings.env, settings_problems=settings.problems),
    )
    recorded: list[ev.Event] = []
    session.bus.add_listener(recorded.append)
    return AgentApp(session, settings=settings, **app_options), recorded


# ---------------------------------------------------------------- custom commands


async def test_project_commands_are_offered_in_the_slash_menu_and_listed_by_help(api, tmp_path):
    write(tmp_path / ".claude" / "commands" / "triage.md", TRIAGE_COMMAND)
    app, _ = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("/", "t", "r", "i")
        menu = app.screen.query_one(CompletionMenu)
        await wait_until(pilot, lambda: menu.display and menu.option_count == 1)
        assert "/triage" in screen_text(app) and "KEY Triage a ticket (project)" in screen_text(app)
        app.prompt_input.clear()
        await type_prompt(pilot, "/help")
        await wait_until(pilot, lambda: "Keys" in screen_text(app))  # from its first line
        await pilot.press("end")
        await wait_until(pilot, lambda: "Project commands" in screen_text(app))
        assert "/triage" in screen_text(app)


async def test_a_project_command_sends_its_prompt_and_allows_its_tools_while_it_runs(api, tmp_path):
    write(tmp_path / ".claude" / "commands" / "mk.md",
          "---\ndescription: Make a file\nallowed-tools: Bash(touch:*)\n---\nCreate the file $ARGUMENTS with touch.")
    api.push(reply(tool_use("Bash", {"command": "touch made.txt"})), reply("Made it."))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "/mk made.txt")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
    assert "Create the file made.txt with touch." in json.dumps(api.requests[0].body["messages"][0])
    assert (tmp_path / "made.txt").exists()
    assert not any(isinstance(e, ev.PermissionRequested) for e in recorded)
    # The command's rule lasted as long as its prompt.
    assert "Bash(touch:*)" not in app.session.policy.allow


# ---------------------------------------------------------------- custom agents


async def test_the_agent_tool_runs_a_project_agent_with_its_prompt_and_tools(api, tmp_path):
    write(tmp_path / ".claude" / "agents" / "fixer.md", FIXER_AGENT)
    api.push(reply(tool_use("Agent", {"description": "fix it", "prompt": "Fix the timeout.", "subagent_type": "fixer"})),
             reply("Raise it to 30s."), reply("The fixer says: raise it to 30s."))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "get a fix")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        assert "The fixer says: raise it to 30s." in screen_text(app)
    subagent = api.requests[1].body
    assert "You are the fixer." in json.dumps(subagent["system"])
    assert [t["name"] for t in subagent["tools"]] == ["Read", "Grep"]
    assert subagent["model"].startswith("claude-haiku")


# ---------------------------------------------------------------- .mcp.json approval


def tickets_mcp_json(root: Path) -> dict[str, dict]:
    write(root / "tickets_server.py", TICKETS_SERVER)
    return {"tickets": {"command": sys.executable, "args": [str(root / "tickets_server.py")]}}


async def test_approving_mcp_json_servers_starts_them_and_remembers_the_answer(api, tmp_path):
    app, _ = app_for(api, tmp_path, mcp_json_pending=tickets_mcp_json(tmp_path))
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(pilot, lambda: "New MCP server found in .mcp.json" in screen_text(app))
        assert "tickets" in screen_text(app)
        await wait_until(pilot, lambda: not app.screen.query_one("#mcp-approval-arming").display)
        await pilot.press("y")
        # The tools join the session after the server reports itself connected: wait for them.
        await wait_until(pilot, lambda: any(t.name.startswith("mcp__") for t in app.session.tools), timeout=30)
        assert app.session.mcp is not None and app.session.mcp.servers()[0].state == "connected"
        assert [t.name for t in app.session.tools if t.name.startswith("mcp__")] == ["mcp__tickets__find_ticket"]
    local = json.loads((tmp_path / ".agent-tui" / "settings.local.json").read_text())
    assert local == {"enabledMcpjsonServers": ["tickets"]}


async def test_rejecting_mcp_json_servers_keeps_them_off_and_remembers_it(api, tmp_path):
    app, _ = app_for(api, tmp_path, mcp_json_pending=tickets_mcp_json(tmp_path))
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(pilot, lambda: "New MCP server found in .mcp.json" in screen_text(app))
        await pilot.press("n")
        await wait_until(pilot, lambda: "Not using the .mcp.json server(s) tickets" in screen_text(app))
        assert app.session.mcp is None
    local = json.loads((tmp_path / ".agent-tui" / "settings.local.json").read_text())
    assert local == {"disabledMcpjsonServers": ["tickets"]}


async def test_keys_typed_as_the_mcp_json_question_appears_do_not_approve_it(api, tmp_path, monkeypatch):
    """The servers run programs: a `y` or `a` already on its way (typed before the question could be
    read) is not an answer; after a quiet moment the same key is."""
    # A quiet moment longer than a loaded machine's delay in seeing the question and typing the keys.
    monkeypatch.setattr(McpApprovalScreen, "arm_quiet", 2.0)
    app, _ = app_for(api, tmp_path, mcp_json_pending=tickets_mcp_json(tmp_path))
    async with app.run_test(size=(110, 32)) as pilot:
        await wait_until(pilot, lambda: "New MCP server found in .mcp.json" in screen_text(app))
        screen = app.screen
        for key in "ayay":
            await pilot.press(key)
            await pilot.pause(0.1)
        assert app.screen is screen and screen.query_one("#mcp-approval-arming").display
        assert not (tmp_path / ".agent-tui" / "settings.local.json").exists()
        await wait_until(pilot, lambda: not screen.query_one("#mcp-approval-arming").display)
        await pilot.press("y")
        await wait_until(pilot, lambda: app.screen is not screen)
    local = json.loads((tmp_path / ".agent-tui" / "settings.local.json").read_text())
    assert local == {"enabledMcpjsonServers": ["tickets"]}


# ---------------------------------------------------------------- /init


async def test_init_with_the_demo_model_writes_an_agents_md_about_the_repository(tmp_path):
    (tmp_path / "README.md").write_text("# Widgets\n\nWidgets turns CSV files into charts.\n\n## Install\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'widgets'\n")
    write(tmp_path / "src" / "widgets" / "__init__.py", "")
    write(tmp_path / "tests" / "test_widgets.py", "def test(): pass\n")
    app, recorded = app_for(DemoModel(speed=0), tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "/init")
        prompt = app.query_one(PermissionPrompt)
        await wait_until(pilot, lambda: prompt.display and prompt.current is not None, timeout=15)
        assert "Write" in screen_text(app) and "AGENTS.md" in screen_text(app)
        await wait_armed(pilot, app)
        await pilot.press("y")
        await wait_until(pilot, finished(recorded), timeout=15)
        await settle(pilot, app)
    agents_md = (tmp_path / "AGENTS.md").read_text()
    assert agents_md.startswith("# AGENTS.md\n")
    assert "Widgets turns CSV files into charts." in agents_md
    assert "- `src/` (1 files)" in agents_md and "- `tests/` (1 files)" in agents_md
    assert "`python -m pytest`" in agents_md
    used = [e.name for e in recorded if isinstance(e, ev.ToolFinished)]
    assert sorted(used[:2]) == ["Glob", "Read"] and used[2:] == ["Write"]


async def test_init_asks_the_model_to_analyse_the_repository_and_write_agents_md(api, tmp_path):
    api.push(reply("I will look around first."))
    app, recorded = make_app(api, tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await type_prompt(pilot, "/init")
        await wait_until(pilot, finished(recorded))
    sent = json.dumps(api.requests[0].body["messages"][0])
    assert "analyze this codebase and create an AGENTS.md file" in sent
    assert "# AGENTS.md" in sent


# ---------------------------------------------------------------- notifications


async def blur(pilot, app: AgentApp) -> None:
    app.post_message(events.AppBlur())
    await wait_until(pilot, lambda: not app.app_focus)


async def test_a_turn_that_ends_while_the_terminal_is_unfocused_notifies(api, tmp_path, monkeypatch):
    monkeypatch.delenv("TMUX", raising=False)  # inside tmux the sequence is wrapped for passthrough
    api.push(reply("All done here."))
    app, recorded = app_for(api, tmp_path, settings=Settings(preferred_notif_channel="ghostty"))
    written: list[str] = []
    app.notifier.write = written.append
    async with app.run_test(size=(110, 32)) as pilot:
        await blur(pilot, app)
        app.submit_prompt("finish up")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
    assert written == [osc777("agent-tui", "All done here.") + "\x07"]


async def test_a_permission_waiting_while_unfocused_notifies_and_a_focused_turn_does_not(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "touch x"})), reply("ok"), reply("second"))
    app, recorded = app_for(api, tmp_path, settings=Settings(preferred_notif_channel="terminal_bell"))
    written: list[str] = []
    app.notifier.write = written.append
    async with app.run_test(size=(110, 32)) as pilot:
        await blur(pilot, app)
        app.submit_prompt("make x")
        prompt = app.query_one(PermissionPrompt)
        await wait_until(pilot, lambda: prompt.display and prompt.current is not None)
        assert written == ["\x07"]
        app.post_message(events.AppFocus())
        await wait_until(pilot, lambda: app.app_focus)
        await wait_armed(pilot, app)
        await pilot.press("n")
        await wait_until(pilot, finished(recorded))
        await settle(pilot, app)
        await type_prompt(pilot, "again")
        await wait_until(pilot, finished(recorded, 2))
        await settle(pilot, app)
    assert written == ["\x07"]
