"""The Agent tool: a subagent with its own history, the parent's tools minus Agent, and
its events on the parent's bus tagged with the Agent tool_use id."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import deque
from typing import Any

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from agent_tui.tools.agent import AgentTool
from tests.engine_helpers import Recorder, auto_answer, make_session, tagged_pids, tool_results, uncached
from tests.loopback import LoopbackServer, Response, reply, text, tool_use


def route(api: LoopbackServer, parent: list[Response], **subagents: list[Response]) -> dict[str, list[dict]]:
    """Serve the parent's requests and each subagent's (keyed by its prompt) from their own scripts.

    Returns the request bodies each one sent, under "parent" and the subagent prompts.
    """
    queues = {"parent": deque(parent), **{prompt: deque(script) for prompt, script in subagents.items()}}
    seen: dict[str, list[dict]] = {key: [] for key in queues}

    def handler(body: dict[str, Any], _index: int) -> Response | None:
        key = "parent"
        if "subagent of agent-tui" in json.dumps(body.get("system", "")):
            key = body["messages"][0]["content"][0]["text"]
        seen[key].append(body)
        return queues[key].popleft() if queues[key] else None

    api.handler = handler
    return seen


def agent_call(prompt: str, id: str, description: str = "Look something up") -> Any:
    return tool_use("Agent", {"description": description, "prompt": prompt}, id=id)


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body["tools"]]


async def test_subagent_events_reach_the_bus_tagged_with_the_agent_tool_use_id(api, tmp_path):
    (tmp_path / "handler.py").write_text("def handle():\n    return 42\n")
    seen = route(
        api,
        parent=[reply(text("Delegating."), agent_call("Where is handle defined?", "t_agent")), reply("Found it.")],
        **{
            "Where is handle defined?": [
                reply(text("Reading."), tool_use("Read", {"file_path": str(tmp_path / "handler.py")}, id="t_sub")),
                reply("handle() is defined in handler.py and returns 42."),
            ]
        },
    )
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("find handle")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "Found it."
    [result] = tool_results(seen["parent"][1])
    assert result["tool_use_id"] == "t_agent" and not result.get("is_error")
    assert result["content"] == "handle() is defined in handler.py and returns 42."
    sub_events = [e for _, e in rec.events if e.parent_tool_use_id == "t_agent"]
    kinds = {type(e) for e in sub_events}
    assert {ev.RequestStarted, ev.TextDelta, ev.ToolQueued, ev.ToolStarted, ev.ToolFinished, ev.Usage} <= kinds
    assert [e.tool_use_id for e in sub_events if isinstance(e, ev.ToolFinished)] == ["t_sub"]
    agent_done = [e for e in rec.of(ev.ToolFinished) if e.tool_use_id == "t_agent"]
    assert agent_done[0].parent_tool_use_id is None
    assert agent_done[0].data["terminal_reason"] == "completed" and agent_done[0].data["tool_uses"] == 1
    assert len(rec.of(ev.QueryFinished)) == 1
    assert check_history(session.history) == []
    assert "t_sub" not in json.dumps(session.history)


async def test_subagent_has_a_fresh_history_and_the_parent_tools_minus_agent_and_exit_plan_mode(api, tmp_path):
    seen = route(
        api,
        parent=[reply(agent_call("Summarise the repo", "t_agent")), reply("ok")],
        **{"Summarise the repo": [reply("A tiny repo.")]},
    )
    session = make_session(api.url, tmp_path)

    await session.submit("what is here?")

    [sub_request] = seen["Summarise the repo"]
    assert "Agent" in tool_names(seen["parent"][0])
    assert tool_names(sub_request) == [n for n in tool_names(seen["parent"][0]) if n not in ("Agent", "ExitPlanMode")]
    assert uncached(sub_request["messages"]) == [{"role": "user", "content": [{"type": "text", "text": "Summarise the repo"}]}]


async def test_a_subagent_cannot_start_another_agent(api, tmp_path):
    seen = route(
        api,
        parent=[reply(agent_call("Nest", "t_agent")), reply("ok")],
        Nest=[reply(agent_call("Deeper", "t_nested")), reply("Could not nest.")],
    )
    session = make_session(api.url, tmp_path)

    await session.submit("go")

    [nested] = tool_results(seen["Nest"][1])
    assert nested["is_error"] is True and nested["content"] == "Error: No such tool available: Agent"
    assert tool_results(seen["parent"][1])[0]["content"] == "Could not nest."


async def test_parallel_agents_run_at_the_same_time(api, tmp_path):
    slow = [reply(text("Thinking it over, slowly. " * 4, delay_before=0.5))]
    route(
        api,
        parent=[reply(agent_call("First task", "t_a1"), agent_call("Second task", "t_a2")), reply("Both done.")],
        **{"First task": list(slow), "Second task": list(slow)},
    )
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("do both")

    assert terminal.reason is TerminalReason.COMPLETED
    assert AgentTool().is_concurrency_safe({}) and AgentTool().is_read_only({})
    assert rec.times(ev.ToolStarted, "t_a2") < rec.times(ev.ToolFinished, "t_a1")
    assert rec.times(ev.ToolStarted, "t_a1") < rec.times(ev.ToolFinished, "t_a2")


async def test_subagent_tools_ask_the_same_policy_and_the_request_is_tagged(api, tmp_path):
    seen = route(
        api,
        parent=[reply(agent_call("Make a file", "t_agent")), reply("ok")],
        **{"Make a file": [reply(tool_use("Bash", {"command": "touch made.txt"}, id="t_touch")), reply("Made it.")]},
    )
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="default"))
    rec = Recorder(session)
    auto_answer(session, PermissionAnswer("allow"))

    await session.submit("make a file")

    [request] = rec.of(ev.PermissionRequested)
    assert request.tool_use_id == "t_touch" and request.parent_tool_use_id == "t_agent"
    assert (tmp_path / "made.txt").exists()
    assert tool_results(seen["parent"][1])[0]["content"] == "Made it."


async def test_a_denied_subagent_tool_is_reported_to_the_subagent_only(api, tmp_path):
    seen = route(
        api,
        parent=[reply(agent_call("Delete things", "t_agent")), reply("ok")],
        **{"Delete things": [reply(tool_use("Bash", {"command": "touch nope.txt"}, id="t_x")), reply("Denied.")]},
    )
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="default", interactive=False))

    await session.submit("go")

    assert tool_results(seen["Delete things"][1])[0]["is_error"] is True
    assert not (tmp_path / "nope.txt").exists()
    assert [d.tool_use_id for d in session.permission_denials] == ["t_x"]
    assert tool_results(seen["parent"][1])[0]["content"] == "Denied."


async def test_abort_stops_the_subagent_and_its_tools_and_keeps_history_valid(api, tmp_path):
    pid_file = tmp_path / "sleeper.pid"
    tag = f"{secrets.randbelow(10**8):08d}"  # pids inside the sandbox are its PID namespace's: find it by tag
    command = f"echo $$ > {pid_file}; sleep 600.{tag}"
    route(
        api,
        parent=[reply(agent_call("Wait a long time", "t_agent"))],
        **{"Wait a long time": [reply(tool_use("Bash", {"command": command}, id="t_sleep"))]},
    )
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)

    async def abort_when_sleeping() -> None:
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.02)
        session.abort()

    aborter = asyncio.create_task(abort_when_sleeping())
    terminal = await asyncio.wait_for(session.submit("wait"), 120)  # not the sleep's 600 s
    await aborter

    assert terminal.reason is TerminalReason.ABORTED_TOOLS
    assert check_history(session.history) == []
    sub_done = [e for e in rec.of(ev.ToolFinished) if e.tool_use_id == "t_sleep"]
    assert sub_done and sub_done[0].is_error and sub_done[0].parent_tool_use_id == "t_agent"
    assert tagged_pids(tag) == []


async def test_a_subagent_that_fails_is_an_error_result(api, tmp_path):
    seen = route(api, parent=[reply(agent_call("Fail", "t_agent")), reply("It failed.")], Fail=[])
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("go")

    assert terminal.reason is TerminalReason.COMPLETED
    [result] = tool_results(seen["parent"][1])
    assert result["is_error"] is True
    assert result["content"].startswith("The agent stopped before finishing (model_error)")


async def test_unknown_subagent_type_is_refused(api, tmp_path):
    api.push(
        reply(tool_use("Agent", {"description": "x", "prompt": "y", "subagent_type": "wizard"}, id="t_agent")),
        reply("ok"),
    )
    session = make_session(api.url, tmp_path)

    await session.submit("go")

    [result] = tool_results(api.requests[1].body)
    assert result["is_error"] is True
    assert result["content"] == "Agent type 'wizard' not found. Available agents: general-purpose"


async def test_subagent_keeps_its_own_plan(api, tmp_path):
    plan = [{"content": "Search", "status": "in_progress", "activeForm": "Searching"}]
    route(
        api,
        parent=[reply(agent_call("Plan and search", "t_agent")), reply("ok")],
        **{"Plan and search": [reply(tool_use("TodoWrite", {"todos": plan})), reply("Searched.")]},
    )
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    await session.submit("go")

    [update] = rec.of(ev.TodoUpdated)
    assert update.todos == plan and update.parent_tool_use_id == "t_agent"
    assert session.todos == []


async def test_subagent_may_edit_a_file_the_parent_read(api, tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("colour\n")
    route(
        api,
        parent=[
            reply(tool_use("Read", {"file_path": str(target)})),
            reply(agent_call("Fix the spelling", "t_agent")),
            reply("ok"),
        ],
        **{
            "Fix the spelling": [
                reply(tool_use("Edit", {"file_path": str(target), "old_string": "colour", "new_string": "color"})),
                reply("Fixed."),
            ]
        },
    )
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="acceptEdits"))

    await session.submit("fix it")

    assert target.read_text() == "color\n"


async def test_a_subagent_asks_for_thinking_and_caching_as_the_session_does(api, tmp_path):
    seen = route(
        api,
        parent=[reply(agent_call("Count the files.", "t_agent")), reply("Done.")],
        **{"Count the files.": [reply("There are none.")]},
    )
    session = make_session(api.url, tmp_path, model="claude-opus-4-6", thinking="off", effort="low")

    await session.submit("delegate")

    [sub_request] = seen["Count the files."]
    parent_request = seen["parent"][0]
    for body in (parent_request, sub_request):
        assert "thinking" not in body
        assert body["output_config"] == {"effort": "low"}
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


async def test_what_a_subagent_spends_counts_in_the_session_cost(api, tmp_path):
    route(
        api,
        parent=[reply(agent_call("Count the files.", "t_agent"), usage={"input_tokens": 100, "output_tokens": 10}),
                reply("Done.", usage={"input_tokens": 200, "output_tokens": 20})],
        **{"Count the files.": [reply("There are none.", usage={"input_tokens": 1_000, "output_tokens": 100})]},
    )
    session = make_session(api.url, tmp_path)

    await session.submit("delegate")

    assert session.usage_totals["input_tokens"] == 1_300
    assert session.usage_totals["output_tokens"] == 130
    assert session.usage_by_model["claude-sonnet-4-6"]["output_tokens"] == 130
    assert session.cost_usd == pytest.approx((1_300 * 3 + 130 * 15) / 1e6)


async def test_a_subagent_started_after_a_fallback_uses_the_fallback_model(api, tmp_path):
    from tests.loopback import status

    overloaded = status(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"})
    seen = route(
        api,
        parent=[overloaded, overloaded, overloaded,
                reply(text("Delegating."), agent_call("Summarise the repo", "t_agent")), reply("Summarised.")],
        **{"Summarise the repo": [reply("It is a small repo.")]},
    )
    session = make_session(api.url, tmp_path, fallback_model="claude-haiku-4-5")

    terminal = await session.submit("summarise")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "Summarised."
    assert [b["model"] for b in seen["parent"]] == ["claude-sonnet-4-6"] * 3 + ["claude-haiku-4-5"] * 2
    assert [b["model"] for b in seen["Summarise the repo"]] == ["claude-haiku-4-5"]
    assert "Model: claude-haiku-4-5" in json.dumps(seen["Summarise the repo"][0]["system"])


async def test_no_to_a_subagent_tool_ends_the_whole_turn(api, tmp_path):
    seen = route(
        api,
        parent=[reply(agent_call("Create the file.", "t_agent")), reply("never sent")],
        **{"Create the file.": [reply(tool_use("Bash", {"command": "touch made.txt"}, id="t_sub")),
                                reply("never sent either")]},
    )
    session = make_session(api.url, tmp_path)
    auto_answer(session, PermissionAnswer("deny"))

    terminal = await session.submit("delegate")

    assert terminal.reason is TerminalReason.ABORTED_TOOLS
    assert len(seen["parent"]) == 1 and len(seen["Create the file."]) == 1
    assert not (tmp_path / "made.txt").exists()
    assert check_history(session.history) == []


async def test_the_subagent_inherits_the_token_budget(api, tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    read = tool_use("Read", {"file_path": str(tmp_path / "a.txt")}, id="t_read")
    route(
        api,
        [reply(agent_call("dig", "t_agent")), reply("The agent ran out.")],
        dig=[reply(read, usage={"output_tokens": 500}), reply("never asked for")],
    )
    session = make_session(api.url, tmp_path, max_budget_tokens=100)

    await session.submit("go")
    await session.aclose()

    (result,) = [b for m in session.history if m["role"] == "user" for b in m["content"]
                 if isinstance(b, dict) and b.get("tool_use_id") == "t_agent"]
    assert result["is_error"] and "(token_budget)" in json.dumps(result["content"])
