"""The built-in tool set."""

from pathlib import Path

from agent_tui.tools.registry import default_tools, tools_by_name


def test_the_model_sees_claude_codes_tool_names_in_order():
    assert [t.name for t in default_tools()] == [
        "Read", "Glob", "Grep", "Bash", "Edit", "MultiEdit", "Write", "TodoWrite", "Agent"]


def test_file_tools_summarize_paths_relative_to_the_session_directory(tmp_path):
    tools = tools_by_name(default_tools(tmp_path))
    for name in ("Edit", "MultiEdit", "Write"):
        assert tools[name].summarize({"file_path": str(tmp_path / "src" / "app.py")}) == str(Path("src/app.py"))
