"""Extended thinking through a Session against the loopback API: what each request asks for, and
thinking blocks sent back exactly as they came, between tool calls."""

from __future__ import annotations

import json

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.models.thinking import INTERLEAVED_THINKING_BETA, thinking_for
from tests.engine_helpers import Recorder, make_session, uncached
from tests.loopback import redacted_thinking, reply, text, thinking, tool_use


async def test_a_model_that_thinks_adaptively_is_asked_to(api, tmp_path):
    api.push(reply("ok"))
    session = make_session(api.url, tmp_path, model="claude-opus-4-6")

    await session.submit("hi")

    received = api.requests[0]
    assert received.body["thinking"] == {"type": "adaptive"}
    assert "anthropic-beta" not in received.headers
    assert "output_config" not in received.body


async def test_effort_is_sent_where_the_model_supports_it(api, tmp_path):
    api.push(reply("ok"), reply("ok"))
    await make_session(api.url, tmp_path, model="claude-sonnet-4-6", effort="medium").submit("hi")
    await make_session(api.url, tmp_path, model="claude-sonnet-4-5", effort="medium").submit("hi")

    newer, older = (r.body for r in api.requests)
    assert newer["output_config"] == {"effort": "medium"}
    assert "output_config" not in older


async def test_a_budget_model_gets_the_budget_and_interleaving_with_tools(api, tmp_path):
    api.push(reply("ok"))
    session = make_session(api.url, tmp_path, model="claude-sonnet-4-5-20250929", thinking=5000)

    await session.submit("hi")

    received = api.requests[0]
    assert received.body["thinking"] == {"type": "enabled", "budget_tokens": 5000}
    assert received.headers["anthropic-beta"] == INTERLEAVED_THINKING_BETA


async def test_the_budget_stays_below_max_tokens(api, tmp_path):
    api.push(reply("ok"))
    session = make_session(api.url, tmp_path, model="claude-opus-4-1", thinking=20_000, max_tokens=8192)

    await session.submit("hi")

    body = api.requests[0].body
    assert body["max_tokens"] == 8192
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8191}


async def test_thinking_off_sends_no_thinking(api, tmp_path):
    api.push(reply("ok"))
    await make_session(api.url, tmp_path, model="claude-opus-4-6", thinking="off").submit("hi")

    assert "thinking" not in api.requests[0].body


async def test_a_model_that_is_not_claude_is_not_asked_to_think_unless_configured(api, tmp_path):
    api.push(reply("ok"), reply("ok"))
    await make_session(api.url, tmp_path, model="qwen3-coder").submit("hi")
    await make_session(api.url, tmp_path, model="qwen3-coder", thinking=2048).submit("hi")

    plain, configured = (r.body for r in api.requests)
    assert "thinking" not in plain
    assert configured["thinking"] == {"type": "enabled", "budget_tokens": 2048}


async def test_thinking_streams_and_signatures_go_back_byte_for_byte_between_tool_calls(api, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    sig1 = "EqQBCkYIBxgCKkD/" + "x" * 200 + "=="
    sig2 = "ErUBCkYIBx+/" + "y" * 120
    api.push(
        reply(thinking("I should read a.txt first.", sig1), tool_use("Read", {"file_path": str(tmp_path / "a.txt")})),
        reply(thinking("It says alpha.", sig2), redacted_thinking("c2VjcmV0"), tool_use("Glob", {"pattern": "*.txt"})),
        reply(text("a.txt says alpha.")),
    )
    session = make_session(api.url, tmp_path, model="claude-opus-4-6")
    rec = Recorder(session)

    result = await session.submit("what is in a.txt?")

    assert result.result == "a.txt says alpha."
    streamed = "".join(d.text for d in rec.of(ev.ThinkingDelta))
    assert streamed == "I should read a.txt first.It says alpha."
    second, third = (uncached(r.body["messages"]) for r in api.requests[1:])
    assert second[1]["content"][0] == {"type": "thinking", "thinking": "I should read a.txt first.", "signature": sig1}
    assert third[1] == second[1]
    assert third[3]["content"][:2] == [
        {"type": "thinking", "thinking": "It says alpha.", "signature": sig2},
        {"type": "redacted_thinking", "data": "c2VjcmV0"},
    ]
    assert third[3]["content"][2]["type"] == "tool_use"
    # The raw signature bytes arrived unchanged on the wire.
    assert json.dumps(sig1)[1:-1] in json.dumps(api.requests[2].body)


@pytest.mark.parametrize(
    ("model", "setting", "expected"),
    [
        ("claude-opus-4-7", 8000, {"type": "adaptive"}),  # adaptive only: a budget is not accepted
        ("claude-3-5-sonnet-20241022", 8000, None),  # cannot think
        ("claude-3-7-sonnet-latest", None, {"type": "enabled", "budget_tokens": 16_000}),
        ("claude-haiku-4-5", "adaptive", {"type": "enabled", "budget_tokens": 16_000}),
        ("claude-sonnet-4-6", 1000, None),  # below the API's minimum budget
    ],
)
def test_what_each_model_is_asked_for(model, setting, expected):
    assert thinking_for(model, setting, 32_000).thinking == expected


async def test_a_tool_turn_written_without_thinking_is_answered_without_a_budget(api, tmp_path):
    # A fallback strips thinking blocks; the fallback model's next request must not demand one.
    from tests.loopback import status

    overloaded = status(529, "overloaded_error", "Overloaded")
    api.push(reply(thinking("Look first.", "sig-main"), tool_use("Glob", {"pattern": "*"}, id="t1")),
             overloaded, overloaded, overloaded, reply("done"))
    session = make_session(api.url, tmp_path, model="claude-sonnet-4-5", thinking=4000,
                           fallback_model="claude-opus-4-1")

    terminal = await session.submit("look")

    assert terminal.result == "done"
    first, *_, after_fallback = (r.body for r in api.requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert after_fallback["model"] == "claude-opus-4-1"
    assert after_fallback["messages"][1]["content"][0]["type"] == "tool_use"
    assert "thinking" not in after_fallback


def test_the_thinking_flag_reaches_the_request(api, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    agent = str(Path(sys.executable).with_name("agent-tui"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENT_TUI_THINKING"))}
    env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key", HOME=str(tmp_path))
    api.push(reply("budget"), reply("off"))
    for flag in ("3000", "off"):
        out = subprocess.run([agent, "-p", "hi", "--model", "claude-sonnet-4-5", "--thinking", flag], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
    budget, off = (r.body for r in api.requests)
    assert budget["thinking"] == {"type": "enabled", "budget_tokens": 3000}
    assert "thinking" not in off


def test_a_budget_below_the_minimum_is_reported(tmp_path):
    from agent_tui.config import load_settings

    settings = load_settings(tmp_path, flags={"thinking": "500"})
    assert settings.thinking is None
    assert any("thinking" in p and "at least 1024" in p for p in settings.problems)
