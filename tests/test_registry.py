"""The built-in tool set."""

from pathlib import Path

import pytest

from agent_tui.tools.base import tools_by_name, with_tools
from agent_tui.tools.registry import default_tools


def test_the_model_sees_claude_codes_tool_names_in_order():
    assert [t.name for t in default_tools()] == [
        "Read", "Glob", "Grep", "Bash", "Edit", "MultiEdit", "Write", "NotebookEdit", "TodoWrite", "Agent", "KillShell",
        "ExitPlanMode",
        "AskUserQuestion", "Skill", "WebFetch", "WebSearch"]


def test_file_tools_summarize_paths_relative_to_the_session_directory(tmp_path):
    tools = tools_by_name(default_tools(tmp_path))
    for name in ("Edit", "MultiEdit", "Write"):
        assert tools[name].summarize({"file_path": str(tmp_path / "src" / "app.py")}) == str(Path("src/app.py"))


def test_a_server_tool_never_shadows_a_built_in_or_an_earlier_server_tool(tmp_path):
    built_in = default_tools(tmp_path)
    read, first, second = built_in[0], built_in[1], built_in[2]
    merged, shadowed = with_tools(built_in[1:], [read, first, second])
    assert [t.name for t in merged] == [t.name for t in built_in[1:]] + ["Read"]
    assert shadowed == [first.name, second.name]
    assert tools_by_name(merged)["Glob"] is first


def test_two_tools_of_one_name_are_a_bug_the_look_up_refuses(tmp_path):
    tools = default_tools(tmp_path)
    with pytest.raises(ValueError, match="two tools are named 'Read'"):
        tools_by_name([*tools, tools[0]])
