"""The session's front door beside `submit`: `set_permission_mode`, `set_model`, `set_mcp_servers`
and `interrupt`, each with the event every front end renders."""

from __future__ import annotations

import asyncio

import pytest

from agent_tui.engine import events as ev
from tests.engine_helpers import Recorder, make_session, system_text
from tests.loopback import hang, reply, text, tool_use
from tests.test_mcp import offered_tools, probe  # noqa: F401  (the fixture)


async def test_set_permission_mode_takes_effect_and_publishes_mode_changed(api, tmp_path):
    api.push(reply(tool_use("Write", {"file_path": str(tmp_path / "a.txt"), "content": "x"}, id="w1")), reply("ok"))
    session = make_session(api.url, tmp_path)
    recorder = Recorder(session)

    session.set_permission_mode("acceptEdits")
    await session.submit("write a.txt")
    await session.aclose()

    assert (tmp_path / "a.txt").read_text() == "x"
    assert [(e.previous, e.mode) for e in recorder.of(ev.ModeChanged)] == [("default", "acceptEdits")]
    assert not recorder.of(ev.PermissionRequested)


def test_an_unknown_permission_mode_is_refused_and_nothing_changes(tmp_path):
    session = make_session("http://127.0.0.1:9", tmp_path)
    recorder = Recorder(session)
    with pytest.raises(ValueError, match="unknown permission mode 'yolo'"):
        session.set_permission_mode("yolo")
    assert session.policy.mode == "default" and not recorder.of(ev.ModeChanged)


def test_cycle_permission_mode_goes_default_accept_edits_plan(tmp_path):
    session = make_session("http://127.0.0.1:9", tmp_path)
    recorder = Recorder(session)
    assert [session.cycle_permission_mode() for _ in range(3)] == ["acceptEdits", "plan", "default"]
    assert [e.mode for e in recorder.of(ev.ModeChanged)] == ["acceptEdits", "plan", "default"]


async def test_set_model_names_the_new_model_in_requests_and_the_system_prompt(api, tmp_path):
    api.push(reply("one"), reply("two"))
    session = make_session(api.url, tmp_path)
    recorder = Recorder(session)

    await session.submit("first")
    session.set_model("claude-opus-4-6")
    await session.submit("second")
    await session.aclose()

    first, second = (r.body for r in api.requests)
    assert first["model"] == "claude-sonnet-4-6" and "Model: claude-sonnet-4-6\n</env>" in system_text(first)
    assert second["model"] == "claude-opus-4-6" and "Model: claude-opus-4-6\n</env>" in system_text(second)
    assert "claude-sonnet-4-6" not in system_text(second)
    assert [(e.previous, e.model) for e in recorder.of(ev.ModelChanged)] == [("claude-sonnet-4-6", "claude-opus-4-6")]
    assert [e.model for e in recorder.of(ev.RequestStarted)] == ["claude-sonnet-4-6", "claude-opus-4-6"]


async def test_interrupt_stops_the_stream_and_the_next_prompt_works(api, tmp_path):
    api.push(hang(after=5, of=reply(text("partial answer"))), reply("second answer"))
    session = make_session(api.url, tmp_path)
    recorder = Recorder(session)

    async def interrupt_when_streaming() -> None:
        while not recorder.of(ev.TextDelta):
            await asyncio.sleep(0.01)
        session.interrupt()

    interrupter = asyncio.ensure_future(interrupt_when_streaming())
    first = await session.submit("first")
    await interrupter
    second = await session.submit("second")
    await session.aclose()

    assert first.reason.value == "aborted_streaming" and recorder.of(ev.Interrupted)
    assert second.result == "second answer"
    session.interrupt()  # idle: harmless


async def test_set_mcp_servers_after_they_connected_replaces_their_tools(api, tmp_path, probe):  # noqa: F811
    api.push(reply("one"), reply("two"))
    session = make_session(api.url, tmp_path, mcp_servers={"probe": probe})
    recorder = Recorder(session)

    await session.submit("first")
    session.set_mcp_servers({"words": probe})
    await session.submit("second")
    await session.aclose()

    first, second = (offered_tools(r.body) for r in api.requests)
    assert "mcp__probe__lookup" in first and "mcp__words__lookup" not in first
    assert "mcp__words__lookup" in second and not any(name.startswith("mcp__probe__") for name in second)
    assert system_text(api.requests[1].body).count("Probe answers questions about words.") == 1
    assert [e.servers for e in recorder.of(ev.McpServersChanged)] == [["words"]]
    assert [s.name for s in session.mcp.servers()] == ["words"]


async def test_set_mcp_servers_before_the_first_prompt_is_what_connects(api, tmp_path, probe):  # noqa: F811
    api.push(reply("one"))
    session = make_session(api.url, tmp_path)
    session.set_mcp_servers({"probe": probe})
    await session.submit("first")
    await session.aclose()
    assert "mcp__probe__lookup" in offered_tools(api.requests[0].body)
