"""TodoWrite: Claude Code's schema and result text, the plan kept in session state and published on the bus."""

from __future__ import annotations

import io
import json

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.printer import run_print
from agent_tui.tools.todo import RESULT_TEXT
from tests.engine_helpers import Recorder, make_session, tool_results
from tests.loopback import reply, text, tool_use

PLAN = [
    {"content": "Read the failing test", "status": "completed", "activeForm": "Reading the failing test"},
    {"content": "Fix the parser", "status": "in_progress", "activeForm": "Fixing the parser"},
    {"content": "Run the test suite", "status": "pending", "activeForm": "Running the test suite", "id": "3"},
]


async def test_todowrite_publishes_the_plan_and_answers_like_claude_code(api, tmp_path):
    api.push(reply(text("Planning."), tool_use("TodoWrite", {"todos": PLAN}, id="t_todo")), reply("On it."))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("fix the parser")

    assert terminal.reason is TerminalReason.COMPLETED
    [result] = tool_results(api.requests[1].body)
    assert result["content"] == RESULT_TEXT and not result.get("is_error")
    assert RESULT_TEXT.startswith("Todos have been modified successfully.")
    [update] = rec.of(ev.TodoUpdated)
    assert update.todos == PLAN and update.parent_tool_use_id is None
    assert update.to_dict()["type"] == "todo_updated"
    assert session.todos == PLAN
    assert rec.of(ev.PermissionRequested) == []


async def test_each_todowrite_replaces_the_whole_list(api, tmp_path):
    second = [dict(PLAN[1], status="completed"), dict(PLAN[2], status="in_progress")]
    api.push(
        reply(tool_use("TodoWrite", {"todos": PLAN})),
        reply(tool_use("TodoWrite", {"todos": second})),
        reply("Done."),
    )
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    await session.submit("go")

    assert [u.todos for u in rec.of(ev.TodoUpdated)] == [PLAN, second]
    assert session.todos == second
    finished = [e for e in rec.of(ev.ToolFinished) if e.name == "TodoWrite"]
    assert finished[1].data == {"old_todos": PLAN, "todos": second}


async def test_todowrite_runs_in_plan_mode_without_asking(api, tmp_path):
    api.push(reply(tool_use("TodoWrite", {"todos": PLAN})), reply("Here is the plan."))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="plan"))
    rec = Recorder(session)

    await session.submit("plan it")

    assert not tool_results(api.requests[1].body)[0].get("is_error")
    assert rec.of(ev.PermissionRequested) == [] and len(rec.of(ev.TodoUpdated)) == 1


@pytest.mark.parametrize(
    ("todos", "expected"),
    [
        ([{"content": "x", "status": "doing", "activeForm": "x-ing"}], "must be one of"),
        ([{"content": "x", "status": "pending"}], "activeForm"),
        ([{"content": "  ", "status": "pending", "activeForm": "x-ing"}], "todos[0].content must not be empty"),
        ([{"content": "x", "status": "pending", "activeForm": "x-ing", "priority": "high"}], "priority"),
        (
            [
                {"content": "a", "status": "pending", "activeForm": "a-ing", "id": "1"},
                {"content": "b", "status": "pending", "activeForm": "b-ing", "id": "1"},
            ],
            "todos[1].id '1' is used by another todo",
        ),
    ],
)
async def test_invalid_todos_are_an_input_error_and_change_nothing(api, tmp_path, todos, expected):
    api.push(reply(tool_use("TodoWrite", {"todos": todos})), reply("ok"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    await session.submit("go")

    [result] = tool_results(api.requests[1].body)
    assert result["is_error"] is True
    assert result["content"].startswith("InputValidationError") and expected in result["content"]
    assert rec.of(ev.TodoUpdated) == [] and session.todos == []


async def test_clear_forgets_the_plan(api, tmp_path):
    api.push(reply(tool_use("TodoWrite", {"todos": PLAN})), reply("ok"))
    session = make_session(api.url, tmp_path)
    await session.submit("go")

    session.clear()

    assert session.todos == []


async def test_stream_events_prints_the_todo_event(api, tmp_path):
    api.push(reply(tool_use("TodoWrite", {"todos": PLAN})), reply("Planned."))
    session = make_session(api.url, tmp_path)
    out = io.StringIO()

    code = await run_print(session, "plan", "stream-events", out=out)

    assert code == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    [todo] = [line for line in lines if line["type"] == "todo_updated"]
    assert todo["todos"] == PLAN and "parent_tool_use_id" not in todo
