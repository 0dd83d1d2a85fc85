"""Prompt caching through a Session against the loopback API: the request bodies carry the breakpoints."""

from __future__ import annotations

import json
from typing import Any

from agent_tui.engine import events as ev
from agent_tui.engine.models.caching import MAX_BREAKPOINTS, count_breakpoints
from tests.engine_helpers import Recorder, make_session, system_text, uncached
from tests.loopback import reply, status, tool_use

EPHEMERAL = {"type": "ephemeral"}


def marked_blocks(body: dict[str, Any]) -> list[tuple[int, int]]:
    """(message index, block index) of every message block with a cache_control."""
    return [
        (m, b)
        for m, message in enumerate(body["messages"])
        if isinstance(message["content"], list)
        for b, block in enumerate(message["content"])
        if "cache_control" in block
    ]


async def test_a_three_turn_session_caches_the_prefix_and_the_newest_message(api, tmp_path):
    (tmp_path / "AGENTS.md").write_text("Answer briefly.")
    api.push(reply("one"), reply("two"), reply("three"))
    session = make_session(api.url, tmp_path)

    for prompt in ("first", "second", "third"):
        await session.submit(prompt)

    bodies = [r.body for r in api.requests]
    assert len(bodies) == 3
    for n, body in enumerate(bodies):
        # The static prefix: the last tool, the static system prompt, and the memory block.
        assert body["tools"][-1]["cache_control"] == EPHEMERAL
        assert all("cache_control" not in t for t in body["tools"][:-1])
        static, memory = body["system"]
        assert static["cache_control"] == EPHEMERAL and "Working directory:" in static["text"]
        assert memory["cache_control"] == EPHEMERAL and "Answer briefly." in memory["text"]
        # The moving breakpoint: only on the newest message's last block.
        newest = len(body["messages"]) - 1
        assert marked_blocks(body) == [(newest, len(body["messages"][newest]["content"]) - 1)]
        assert body["messages"][newest]["content"][-1]["text"] == ("first", "second", "third")[n]
        assert count_breakpoints(body) <= MAX_BREAKPOINTS
    # The conversation itself is unchanged by the markers.
    assert uncached(bodies[2]["messages"][:4]) == [
        {"role": "user", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "one"}]},
        {"role": "user", "content": [{"type": "text", "text": "second"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "two"}]},
    ]
    assert all("cache_control" not in json.dumps(m) for m in session.history)


async def test_the_breakpoint_moves_to_the_tool_results_within_a_prompt(api, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "a.txt")})), reply("read"))
    session = make_session(api.url, tmp_path)

    await session.submit("read a.txt")

    second = api.requests[1].body
    [(m, b)] = marked_blocks(second)
    assert m == len(second["messages"]) - 1
    assert second["messages"][m]["content"][b]["type"] == "tool_result"


async def test_prompt_caching_false_sends_no_cache_control(api, tmp_path):
    api.push(reply("ok"))
    session = make_session(api.url, tmp_path, prompt_caching=False)

    await session.submit("hi")

    body = api.requests[0].body
    assert "cache_control" not in json.dumps(body)
    assert isinstance(body["system"], str) and "Working directory:" in body["system"]


async def test_a_server_rejecting_cache_control_is_asked_again_without_it_once(api, tmp_path):
    api.push(
        status(400, "invalid_request_error", "system.0.cache_control: Extra inputs are not permitted"),
        reply("fine"),
        reply("still fine"),
    )
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    first = await session.submit("hi")
    second = await session.submit("again")

    assert (first.result, second.result) == ("fine", "still fine")
    bodies = [r.body for r in api.requests]
    assert len(bodies) == 3
    assert "cache_control" in json.dumps(bodies[0])
    assert "cache_control" not in json.dumps(bodies[1]) and "cache_control" not in json.dumps(bodies[2])
    assert system_text(bodies[1]) == system_text(bodies[0])
    notices = [n.message for n in rec.of(ev.Notice)]
    assert sum("rejected prompt caching" in n for n in notices) == 1


async def test_cache_reads_and_writes_reach_the_usage_event_and_the_totals(api, tmp_path):
    api.push(reply("one", usage={"input_tokens": 20, "cache_creation_input_tokens": 5000, "output_tokens": 10}),
             reply("two", usage={"input_tokens": 30, "cache_read_input_tokens": 5000, "output_tokens": 12}))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    await session.submit("first")
    await session.submit("second")

    last = rec.of(ev.Usage)[-1]
    assert (last.cache_read_input_tokens, last.input_tokens) == (5000, 30)
    assert last.context_tokens == 30 + 5000 + 12
    assert session.usage_totals["cache_creation_input_tokens"] == 5000
    assert session.usage_totals["cache_read_input_tokens"] == 5000
