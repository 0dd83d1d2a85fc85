"""A Claude Code project works unchanged: `.mcp.json`, `.claude/settings*.json`,
`.claude/commands/*.md` and `.claude/agents/*.md`, through the installed `agent-tui -p`
against the loopback API and a real stdio MCP server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agent_tui.config import load_settings
from agent_tui.engine.claude_files import (
    find_command,
    load_agents,
    load_commands,
    load_mcp_json,
    record_mcp_json_choice,
    split_front_matter,
    split_mcp_json,
)
from tests.loopback import reply, tool_use
from tests.test_print_mode import env_for, run

TICKETS_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("tickets")


@server.tool()
def find_ticket(key: str) -> str:
    """Look a ticket up by its key."""
    return f"{key}: the login page times out after 5s"


if __name__ == "__main__":
    server.run()
'''

TRIAGE_COMMAND = """\
---
description: Triage a ticket
argument-hint: KEY
allowed-tools: mcp__tickets__find_ticket
---
Look up ticket $ARGUMENTS with the tickets tool, then ask the fixer agent for a fix.
"""

FIXER_AGENT = """\
---
name: fixer
description: Proposes the smallest fix for a bug report
tools: Read, Grep
model: haiku
---
You are the fixer. Propose the smallest fix, in one sentence.
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def claude_project(root: Path, *, approved: bool = True) -> Path:
    """A project with only Claude Code's files (and the MCP server's script)."""
    write(root / "tools" / "tickets_server.py", TICKETS_SERVER)
    write(root / ".mcp.json", json.dumps(
        {"mcpServers": {"tickets": {"command": sys.executable, "args": [str(root / "tools" / "tickets_server.py")]}}}))
    write(root / ".claude" / "commands" / "triage.md", TRIAGE_COMMAND)
    write(root / ".claude" / "agents" / "fixer.md", FIXER_AGENT)
    write(root / ".claude" / "settings.json", json.dumps(
        {"permissions": {"deny": ["Bash(rm:*)"]}, "includeCoAuthoredBy": False}))
    if approved:
        write(root / ".claude" / "settings.local.json", json.dumps({"enabledMcpjsonServers": ["tickets"]}))
    return root


def tool_names(request) -> list[str]:
    return [t["name"] for t in request.body["tools"]]


def test_a_claude_code_project_runs_its_command_mcp_tool_and_agent_end_to_end(api, tmp_path):
    project = claude_project(tmp_path)
    api.push(
        reply(tool_use("mcp__tickets__find_ticket", {"key": "BUG-7"}, id="toolu_mcp")),
        reply(tool_use("Agent", {"description": "fix BUG-7", "prompt": "The login page times out after 5s.",
                                 "subagent_type": "fixer"}, id="toolu_agent")),
        reply("Raise the login timeout to 30s."),
        reply("BUG-7: the fixer suggests raising the login timeout to 30s."),
    )

    out = run(["-p", "/triage BUG-7", "--output-format", "stream-json", "--verbose"], project, env_for(api.url))

    assert out.returncode == 0, out.stderr
    first, after_mcp, subagent, last = api.requests
    # The custom command: its body with $ARGUMENTS filled in is the prompt.
    prompt = first.body["messages"][0]["content"]
    assert "Look up ticket BUG-7 with the tickets tool, then ask the fixer agent for a fix." in json.dumps(prompt)
    # The .mcp.json server (approved in .claude/settings.local.json) serves its tool.
    assert "mcp__tickets__find_ticket" in tool_names(first)
    mcp_result = after_mcp.body["messages"][-1]["content"][0]
    assert mcp_result["tool_use_id"] == "toolu_mcp" and not mcp_result.get("is_error")
    assert "the login page times out after 5s" in json.dumps(mcp_result["content"])
    # The custom agent: offered in the Agent tool's description, run with its prompt, tools and model.
    agent_tool = next(t for t in first.body["tools"] if t["name"] == "Agent")
    assert "- fixer: Proposes the smallest fix for a bug report (Tools: Read, Grep)" in agent_tool["description"]
    assert "You are the fixer. Propose the smallest fix" in json.dumps(subagent.body["system"])
    assert tool_names(subagent) == ["Read", "Grep"]
    assert subagent.body["model"].startswith("claude-haiku")
    assert subagent.body["messages"][0]["role"] == "user"
    assert "The login page times out after 5s." in json.dumps(subagent.body["messages"][0]["content"])
    assert "Raise the login timeout to 30s." in json.dumps(last.body["messages"][-1])
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    init = lines[0]
    assert init["mcp_servers"] == [{"name": "tickets", "status": "connected"}]
    assert "triage" in init["slash_commands"] and "fixer" in init["agents"]
    assert lines[-1]["result"] == "BUG-7: the fixer suggests raising the login timeout to 30s."
    assert out.stderr == ""


def test_an_unapproved_mcp_json_server_does_not_start_in_print_mode(api, tmp_path):
    project = claude_project(tmp_path, approved=False)
    api.push(reply("ok"))

    out = run(["-p", "hi", "--output-format", "stream-json", "--verbose"], project, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert "mcp__tickets__find_ticket" not in tool_names(api.requests[0])
    assert json.loads(out.stdout.splitlines()[0])["mcp_servers"] == []
    assert "not approved" in out.stderr and "tickets" in out.stderr


def test_claude_settings_are_a_layer_below_agent_tui_settings(tmp_path):
    write(tmp_path / ".claude" / "settings.json", json.dumps(
        {"model": "claude-from-claude", "maxTurns": 3, "permissions": {"allow": ["Read"]}, "cleanupPeriodDays": 30}))
    write(tmp_path / ".claude" / "settings.local.json", json.dumps({"maxTurns": 4}))
    write(tmp_path / ".agent-tui" / "settings.json", json.dumps({"model": "claude-from-agent-tui"}))

    settings = load_settings(tmp_path, environ={})

    assert settings.model == "claude-from-agent-tui"
    assert settings.max_turns == 4 and "Claude Code local" in settings.sources["maxTurns"]
    assert settings.permissions["allow"] == ["Read"]
    assert [layer[0] for layer in settings.permission_layers] == ["claude-project"]
    # Keys of Claude Code's that agent-tui does not use are no problem.
    assert settings.problems == []


def test_mcp_json_approval_is_remembered_in_local_settings(tmp_path):
    write(tmp_path / ".mcp.json", json.dumps({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}))
    local = tmp_path / ".agent-tui" / "settings.local.json"

    record_mcp_json_choice(local, ["a"], "approve")
    record_mcp_json_choice(local, ["b"], "reject")

    approved, pending = split_mcp_json(load_mcp_json(tmp_path), load_settings(tmp_path, environ={}))
    assert list(approved) == ["a"] and pending == {}
    assert json.loads(local.read_text()) == {"enabledMcpjsonServers": ["a"], "disabledMcpjsonServers": ["b"]}


def test_enable_all_project_mcp_servers_approves_every_server(tmp_path):
    write(tmp_path / ".mcp.json", json.dumps({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}))
    record_mcp_json_choice(tmp_path / ".agent-tui" / "settings.local.json", ["a"], "all")

    approved, pending = split_mcp_json(load_mcp_json(tmp_path), load_settings(tmp_path, environ={}))

    assert list(approved) == ["a", "b"] and pending == {}


def test_command_arguments_fill_placeholders_or_follow_the_body(tmp_path):
    write(tmp_path / ".claude" / "commands" / "fix.md", "Fix issue $1 in $2 ($ARGUMENTS).")
    write(tmp_path / ".claude" / "commands" / "frontend" / "lint.md", "# Lint the frontend\nRun the linter.")

    commands = load_commands(tmp_path)

    fix, arguments = find_command(commands, "/fix 12 app.py")
    assert fix.expand(arguments) == "Fix issue 12 in app.py (12 app.py)."
    lint, arguments = find_command(commands, "/frontend:lint src/ui")
    assert lint.description == "Lint the frontend"
    assert lint.expand(arguments) == "# Lint the frontend\nRun the linter.\n\nARGUMENTS: src/ui"
    assert find_command(commands, "/nothing here") is None


def test_an_agent_without_a_description_is_reported_and_skipped(tmp_path):
    write(tmp_path / ".claude" / "agents" / "vague.md", "---\nname: vague\n---\nDo things.")
    problems: list[str] = []

    assert load_agents(tmp_path, problems) == {}
    assert "description" in problems[0] and "vague.md" in problems[0]


def test_front_matter_lists_blocks_and_quotes():
    meta, body = split_front_matter(
        "---\ndescription: \"Review: code\"\ntools:\n  - Read\n  - Grep\nnote: |\n  one\n  two\n---\nBody\n")

    assert meta == {"description": "Review: code", "tools": ["Read", "Grep"], "note": "one\ntwo"}
    assert body == "Body"
