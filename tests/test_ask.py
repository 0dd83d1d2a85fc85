"""`agent_tui.ask()`: the engine's events of one prompt, then the Result, for scripts and tests."""

from __future__ import annotations

import agent_tui
from agent_tui.engine import Result, events
from tests.loopback import reply, tool_use
from tests.test_print_mode import env_for


async def test_ask_yields_the_events_of_the_run_then_the_result(api, tmp_path, monkeypatch):
    for key, value in env_for(api.url).items():
        monkeypatch.setenv(key, value)
    (tmp_path / "notes.md").write_text("otters hold hands\n")
    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "notes.md")}, id="r1")), reply("They hold hands."))

    items = [item async for item in agent_tui.ask("what do otters do?", cwd=tmp_path)]

    kinds = [type(item) for item in items]
    assert kinds[0] is events.SessionStarted and kinds[-2] is events.QueryFinished
    result = items[-1]
    assert isinstance(result, Result) and not result.is_error
    assert (result.result, result.terminal_reason, result.num_turns) == ("They hold hands.", "completed", 2)
    finished = [i for i in items if isinstance(i, events.ToolFinished)]
    assert [(f.name, f.is_error) for f in finished] == [("Read", False)]
    assert "otters hold hands" in str(api.requests[1].body["messages"][-1])


async def test_ask_denies_undecided_calls_unless_can_use_tool_answers(api, tmp_path, monkeypatch):
    for key, value in env_for(api.url).items():
        monkeypatch.setenv(key, value)
    target = tmp_path / "a.txt"
    write = tool_use("Write", {"file_path": str(target), "content": "x"}, id="w1")
    api.push(reply(write), reply("Not allowed."), reply(write), reply("Written."))

    denied = [item async for item in agent_tui.ask("write a.txt", cwd=tmp_path)]
    assert [d["tool_name"] for d in denied[-1].permission_denials] == ["Write"] and not target.exists()
    asked: list[str] = []

    async def can_use_tool(name, input):
        asked.append(name)
        return True

    allowed = [item async for item in agent_tui.ask("write a.txt", cwd=tmp_path, can_use_tool=can_use_tool)]

    assert asked == ["Write"] and target.read_text() == "x" and allowed[-1].result == "Written."


async def test_ask_with_a_json_schema_gives_the_structured_output(api, tmp_path, monkeypatch):
    for key, value in env_for(api.url).items():
        monkeypatch.setenv(key, value)
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    api.push(reply(tool_use("StructuredOutput", {"answer": 42}, id="s1")), reply("42."))

    items = [item async for item in agent_tui.ask("the answer?", cwd=tmp_path, json_schema=schema)]

    assert items[-1].structured_output == {"answer": 42} and not items[-1].is_error
