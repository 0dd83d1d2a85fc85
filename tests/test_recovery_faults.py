"""The fault matrix (issue 5): each API failure, served by the loopback server to the
real SDK, ends in a stated way.  Every case asserts the terminal reason (or success),
the notice the user sees, the requests the server received, and a valid history."""

from __future__ import annotations

import asyncio
import json

from agent_tui.engine import events as ev
from agent_tui.engine.context.compaction import LATEST_REQUEST_LABEL, SUMMARY_PREAMBLE
from agent_tui.engine.context.window import CompactionSettings
from agent_tui.engine.loop.query import MAX_TOKENS_NUDGE, TerminalReason
from agent_tui.engine.messages import check_history
from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.permissions.policy import PermissionPolicy
from tests.engine_helpers import Recorder, make_session, turn_notice, uncached
from tests.loopback import drop, hang, reply, sse_error, status, text, thinking, tool_use

MAIN = "claude-sonnet-4-6"
FALLBACK = "claude-haiku-4-5"
PTL = "prompt is too long: {actual} tokens > {limit} maximum"


def notices(rec: Recorder, kind: str) -> list[str]:
    return [n.message for n in rec.of(ev.Notice) if n.kind == kind]


def request_text(body: dict) -> str:
    return json.dumps(body["messages"][-1], ensure_ascii=False)


def is_summary_request(body: dict) -> bool:
    return "Write a detailed summary of the conversation so far" in request_text(body)


def estimated_tokens(body: dict) -> int:
    # What the loopback server reports as input_tokens: chars/4 of system, messages and tools.
    parts = {k: body.get(k) for k in ("system", "messages", "tools") if body.get(k)}
    return len(json.dumps(parts, separators=(",", ":"), ensure_ascii=False)) // 4


def too_long(body: dict) -> object:
    """A 400 prompt-too-long whose figures match the request (the limit at two thirds of it)."""
    actual = estimated_tokens(body)
    return status(400, "invalid_request_error", PTL.format(actual=actual, limit=actual * 2 // 3))


# About 6k tokens: a few of these make a history worth compacting.
LONG_ANSWER = "A long explanation of the module layout. " * 600


# ---------------------------------------------------------------- retried failures


async def test_429_waits_for_retry_after_then_succeeds(api, tmp_path):
    api.push(status(429, "rate_limit_error", "slow down", headers={"retry-after": "0.2"}), reply("ok"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "ok"
    assert notices(rec, "retry") == ["Rate limited (429); retrying in 0.2s (attempt 1/3)"]
    assert len(api.requests) == 2
    assert api.requests[1].time - api.requests[0].time >= 0.19
    assert check_history(session.history) == []


async def test_500_is_retried(api, tmp_path):
    api.push(status(500, "api_error", "Internal server error"), reply("ok"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "ok"
    [notice] = notices(rec, "retry")
    assert notice.startswith("API server error (500); retrying in")
    assert len(api.requests) == 2 and api.requests[1].body == api.requests[0].body
    assert check_history(session.history) == []


async def test_one_529_is_retried_on_the_same_model(api, tmp_path):
    api.push(status(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"}), reply("ok"))
    session = make_session(api.url, tmp_path, fallback_model=FALLBACK)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.COMPLETED
    assert notices(rec, "retry") == ["API overloaded (529); retrying in 0.0s (attempt 1/3)"]
    assert notices(rec, "fallback") == []
    assert [r.body["model"] for r in api.requests] == [MAIN, MAIN]
    assert check_history(session.history) == []


async def test_three_529s_switch_to_the_fallback_model(api, tmp_path):
    api.push(*[status(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"})] * 3,
             reply("answered by the fallback"))
    session = make_session(api.url, tmp_path, fallback_model=FALLBACK)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "answered by the fallback"
    assert [r.body["model"] for r in api.requests] == [MAIN, MAIN, MAIN, FALLBACK]
    assert notices(rec, "fallback") == [f"Switched to {FALLBACK} due to high demand for {MAIN}"]
    assert len(notices(rec, "retry")) == 2
    assert rec.of(ev.RequestStarted)[-1].model == FALLBACK
    assert check_history(session.history) == []


async def test_sse_overloaded_error_mid_stream_discards_the_partial_answer_and_retries(api, tmp_path):
    api.push(sse_error("overloaded_error", "Overloaded", after=5), reply("clean answer"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "clean answer"
    assert rec.of(ev.TextDelta), "the first stream got as far as some text"
    [notice] = notices(rec, "retry")
    assert notice.startswith("API overloaded mid-stream; retrying in")
    assert [r.attempt for r in rec.of(ev.RequestStarted)] == [1, 2]
    assert len(api.requests) == 2
    assert session.history[-1]["content"] == [{"type": "text", "text": "clean answer"}]
    assert check_history(session.history) == []


async def test_connection_dropped_mid_stream_is_retried(api, tmp_path):
    api.push(drop(after=5), reply("second try"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "second try"
    [notice] = notices(rec, "retry")
    assert notice.startswith("Connection lost mid-stream; retrying in")
    assert len(api.requests) == 2
    assert session.history[-1]["content"] == [{"type": "text", "text": "second try"}]
    assert check_history(session.history) == []


async def test_a_stream_that_stalls_past_the_read_timeout_is_retried(api, tmp_path):
    api.push(hang(after=5, of=reply(text("This answer stops mid"))), reply("after the stall"))
    session = make_session(api.url, tmp_path)
    session.model = AnthropicModel(MAIN, base_url=api.url, api_key="test-key", timeout=0.3)
    rec = Recorder(session)

    terminal = await asyncio.wait_for(session.submit("hi"), 10)

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "after the stall"
    [notice] = notices(rec, "retry")
    assert notice.startswith("Request timed out mid-stream; retrying in")
    assert await asyncio.to_thread(api.wait_disconnect, 1, 30.0)
    assert len(api.requests) == 2
    assert check_history(session.history) == []
    await session.model.aclose()


# ---------------------------------------------------------------- prompt too long


async def test_prompt_too_long_compacts_once_then_the_retry_succeeds(api, tmp_path):
    def serve(body, index):
        if index < 4:
            return reply(text(LONG_ANSWER))
        if is_summary_request(body):
            return reply("<summary>The user asked about the module layout four times.</summary>")
        if index == 4:
            return too_long(body)
        return reply("the retried answer")

    api.handler = serve
    session = make_session(api.url, tmp_path, compaction=CompactionSettings(summary_max_tokens=1000))
    for n in range(4):
        await session.submit(f"question {n}")
    rec = Recorder(session)

    terminal = await session.submit("the question that overflows")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "the retried answer"
    failed, summary_request, retry = (r.body for r in api.requests[4:])
    assert len(api.requests) == 7
    assert is_summary_request(summary_request)
    assert "1. Primary request and intent" in request_text(summary_request)
    # The summary request is cut to fit: the oldest rounds go, whole.
    assert estimated_tokens(summary_request) < estimated_tokens(failed) * 2 // 3
    assert check_history(summary_request["messages"]) == []
    [summary_message] = retry["messages"]
    assert summary_message["content"][0]["text"].startswith(SUMMARY_PREAMBLE)
    assert "asked about the module layout" in summary_message["content"][0]["text"]
    label = [b.get("text") for b in summary_message["content"]].index(LATEST_REQUEST_LABEL)
    assert summary_message["content"][label + 1] == {"type": "text", "text": "the question that overflows"}
    assert [c.trigger for c in rec.of(ev.Compaction)] == ["reactive"]
    assert notices(rec, "compaction")[0].startswith("Compacting the conversation")
    assert check_history(session.history) == []
    assert session.history[-1]["content"] == [{"type": "text", "text": "the retried answer"}]


async def test_413_compacts_once_then_the_retry_succeeds(api, tmp_path):
    api.push(reply(LONG_ANSWER), reply(LONG_ANSWER),
             status(413, "request_too_large", "Request exceeds the maximum allowed number of bytes"),
             reply("<summary>Two questions were answered.</summary>"),
             reply("fits now"))
    session = make_session(api.url, tmp_path)
    await session.submit("first question")
    await session.submit("second question")
    rec = Recorder(session)

    terminal = await session.submit("third question")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "fits now"
    failed, summary_request, retry = (r.body for r in api.requests[2:])
    assert is_summary_request(summary_request)
    # 413 gives no figures: the summary request leaves out at least a fifth of the history.
    assert estimated_tokens(summary_request) < estimated_tokens(failed)
    assert len(retry["messages"]) == 1
    assert rec.of(ev.Compaction)[0].trigger == "reactive"
    assert check_history(session.history) == []


async def test_prompt_still_too_long_after_compacting_ends_with_prompt_too_long(api, tmp_path):
    def serve(body, index):
        if index < 2:
            return reply(text(LONG_ANSWER))
        if is_summary_request(body):
            return reply("<summary>Earlier work.</summary>")
        return too_long(body)

    api.handler = serve
    session = make_session(api.url, tmp_path, compaction=CompactionSettings(summary_max_tokens=1000))
    for n in range(2):
        await session.submit(f"question {n}")
    rec = Recorder(session)

    terminal = await session.submit("still huge")

    assert terminal.reason is TerminalReason.PROMPT_TOO_LONG
    assert "still too long after compacting" in terminal.error and "/clear" in terminal.error
    assert notices(rec, "error") == [terminal.error]
    # The failed request, the summary, the retry: compaction runs once per turn.
    assert [is_summary_request(r.body) for r in api.requests[2:]] == [False, True, False]
    assert check_history(session.history) == []


# ---------------------------------------------------------------- errors that end the query


async def test_401_ends_at_once_naming_the_environment_variable(api, tmp_path):
    api.push(status(401, "authentication_error", "invalid x-api-key"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.MODEL_ERROR
    assert "ANTHROPIC_API_KEY" in terminal.error
    assert notices(rec, "error") == [terminal.error]
    assert len(api.requests) == 1
    assert check_history(session.history) == []


async def test_403_ends_at_once_naming_the_environment_variable(api, tmp_path):
    api.push(status(403, "permission_error", "this key may not use this model"))
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.MODEL_ERROR
    assert "ANTHROPIC_API_KEY" in terminal.error
    assert len(api.requests) == 1


# ---------------------------------------------------------------- cut-off answers


async def test_max_tokens_once_is_asked_again_with_the_escalated_limit(api, tmp_path):
    api.push(reply("The beginning of a long answer that", stop_reason="max_tokens"), reply("The whole answer."))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("write a lot")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "The whole answer."
    assert [r.body["max_tokens"] for r in api.requests] == [32000, 64000]
    assert api.requests[1].body["messages"] == api.requests[0].body["messages"]
    assert [n for n in rec.of(ev.Notice) if turn_notice(n)] == [], "escalation is silent"
    assert [r.attempt for r in rec.of(ev.RequestStarted)] == [1, 2]
    assert [m["role"] for m in session.history] == ["user", "assistant"]
    assert check_history(session.history) == []


async def test_max_tokens_four_times_nudges_three_times_then_ends(api, tmp_path):
    api.push(*[reply(f"part {n} of the answer", stop_reason="max_tokens") for n in range(4)])
    session = make_session(api.url, tmp_path, max_tokens=64000)
    rec = Recorder(session)

    terminal = await session.submit("write a lot")

    assert terminal.reason is TerminalReason.MAX_OUTPUT_TOKENS
    assert "output token limit (64000 tokens)" in terminal.error
    assert notices(rec, "error") == [terminal.error]
    assert len(api.requests) == 4
    for n, request in enumerate(api.requests[1:]):
        assert request.body["max_tokens"] == 64000
        assert request.body["messages"][-2]["content"] == [{"type": "text", "text": f"part {n} of the answer"}]
        assert uncached(request.body["messages"][-1]) == {"role": "user", "content": [{"type": "text", "text": MAX_TOKENS_NUDGE}]}
    kept = [m["content"][0]["text"] for m in session.history if m["role"] == "assistant"]
    assert kept == [f"part {n} of the answer" for n in range(4)]
    assert [m.get("_meta", False) for m in session.history if m["role"] == "user"] == [False, True, True, True]
    assert check_history(session.history) == []


async def test_max_tokens_from_the_default_limit_escalates_then_nudges_three_times(api, tmp_path):
    api.push(*[reply(f"part {n}", stop_reason="max_tokens") for n in range(5)])
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("write a lot")

    assert terminal.reason is TerminalReason.MAX_OUTPUT_TOKENS
    assert [r.body["max_tokens"] for r in api.requests] == [32000, 64000, 64000, 64000, 64000]
    assert [request_text(r.body).count("Output token limit hit.") for r in api.requests] == [0, 0, 1, 1, 1]
    assert check_history(session.history) == []


async def test_a_cut_off_answer_keeps_its_complete_tools_and_never_runs_the_truncated_one(api, tmp_path):
    cut = reply(tool_use("Bash", {"command": "echo complete"}, id="t_ok"),
                tool_use("Bash", '{"command": "touch trunc', id="t_cut"), stop_reason="max_tokens")
    api.push(cut, reply("finished"))
    session = make_session(api.url, tmp_path, max_tokens=64000, policy=PermissionPolicy(mode="bypassPermissions"))

    terminal = await session.submit("go")

    assert terminal.reason is TerminalReason.COMPLETED
    *_, results, nudge = uncached(api.requests[1].body["messages"])
    assert [r["tool_use_id"] for r in results["content"]] == ["t_ok", "t_cut"]
    assert results["content"][0]["content"] == "complete"
    assert results["content"][1]["is_error"] is True
    assert results["content"][1]["content"].startswith("InputValidationError")
    assert nudge["content"] == [{"type": "text", "text": MAX_TOKENS_NUDGE}]
    assert not (tmp_path / "trunc").exists()
    assert check_history(session.history) == []


# ---------------------------------------------------------------- fallback details


async def test_fallback_strips_thinking_blocks_from_the_history(api, tmp_path):
    api.push(reply(thinking("Let me look.", "sig-main-model"), tool_use("Bash", {"command": "echo hi"}, id="t1")),
             *[status(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"})] * 3,
             reply("done on the fallback"))
    session = make_session(api.url, tmp_path, fallback_model=FALLBACK, policy=PermissionPolicy(mode="bypassPermissions"))

    terminal = await session.submit("go")

    assert terminal.reason is TerminalReason.COMPLETED
    before, after = api.requests[1].body, api.requests[4].body
    assert before["messages"][1]["content"][0] == {"type": "thinking", "thinking": "Let me look.", "signature": "sig-main-model"}
    assert after["model"] == FALLBACK
    assert "thinking" not in json.dumps(after["messages"])
    assert [b["type"] for b in after["messages"][1]["content"]] == ["tool_use"]
    assert check_history(after["messages"]) == []
    assert check_history(session.history) == []


# ---------------------------------------------------------------- a tool that ran stays in the history


MARKER_COMMAND = "echo run >> marker.txt && echo appended"


def after_tool_block(response) -> int:
    """The `after` for a cut stream that ends just after the first tool_use block's
    content_block_stop (message_start counts as one event)."""
    events = [data for _, data in response.events]
    start = next(i for i, data in enumerate(events) if b'"content_block":{"type":"tool_use"' in data)
    return 1 + next(i for i in range(start, len(events)) if b"content_block_stop" in events[i]) + 1


def marker_reply(**kwargs):
    return reply(text("Appending a line."), tool_use("Bash", {"command": MARKER_COMMAND}, id="t_marker"),
                 text("Now the rest of a long explanation that the failure cuts short"), **kwargs)


def tool_exchange(body: dict, tool_use_id: str) -> tuple[dict, str]:
    """The input of `tool_use_id` in a request body, and the content of its tool_result."""
    uses = [b for m in body["messages"] if m["role"] == "assistant" for b in m["content"]
            if b.get("type") == "tool_use" and b["id"] == tool_use_id]
    results = [b for m in body["messages"] if m["role"] == "user" for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result" and b["tool_use_id"] == tool_use_id]
    assert len(uses) == 1 and len(results) == 1, (uses, results)
    assert not results[0].get("is_error")
    return uses[0]["input"], results[0]["content"]


async def assert_ran_once_and_kept(api, session, rec, tmp_path, retry_index: int) -> None:
    assert (tmp_path / "marker.txt").read_text() == "run\n"
    assert tool_exchange(api.requests[retry_index].body, "t_marker") == ({"command": MARKER_COMMAND}, "appended")
    finished = [f for f in rec.of(ev.ToolFinished) if f.tool_use_id == "t_marker"]
    assert [(f.status, f.preview) for f in finished] == [("done", "appended")]
    assert "Discarded" not in json.dumps([e.to_dict() for _, e in rec.events])
    assert check_history(session.history) == []


async def test_a_tool_that_ran_before_a_max_tokens_cut_is_kept_and_not_asked_again(api, tmp_path):
    api.push(marker_reply(stop_reason="max_tokens"), reply("The line is appended."))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)

    terminal = await session.submit("append a line")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "The line is appended."
    await assert_ran_once_and_kept(api, session, rec, tmp_path, 1)
    # The larger limit still applies: the cut answer continues, nudged, with it.
    assert [r.body["max_tokens"] for r in api.requests] == [32000, 64000]
    assert request_text(api.requests[1].body).count("Output token limit hit.") == 1


async def test_a_tool_that_ran_before_the_connection_dropped_is_kept_and_the_request_retried(api, tmp_path):
    first = marker_reply()
    api.push(drop(after=after_tool_block(first) + 3, of=first), reply("The line is appended."))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)

    terminal = await session.submit("append a line")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "The line is appended."
    await assert_ran_once_and_kept(api, session, rec, tmp_path, 1)
    assert notices(rec, "retry")[0].startswith("Connection lost mid-stream; retrying in")
    assert len(api.requests) == 2


async def test_a_tool_that_ran_before_an_sse_error_is_kept_and_the_request_retried(api, tmp_path):
    first = marker_reply()
    api.push(sse_error("api_error", "Internal server error", after=after_tool_block(first) + 3, of=first),
             reply("The line is appended."))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)

    terminal = await session.submit("append a line")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "The line is appended."
    await assert_ran_once_and_kept(api, session, rec, tmp_path, 1)
    assert len(notices(rec, "retry")) == 1 and len(api.requests) == 2


async def test_a_tool_that_ran_before_a_fallback_is_kept_and_the_fallback_continues_from_it(api, tmp_path):
    first = marker_reply()
    api.push(*[status(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"})] * 2,
             sse_error("overloaded_error", "Overloaded", after=after_tool_block(first) + 3, of=first),
             reply("The line is appended."))
    session = make_session(api.url, tmp_path, fallback_model=FALLBACK, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)

    terminal = await session.submit("append a line")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "The line is appended."
    await assert_ran_once_and_kept(api, session, rec, tmp_path, 3)
    assert [r.body["model"] for r in api.requests] == [MAIN, MAIN, MAIN, FALLBACK]
    assert notices(rec, "fallback") == [f"Switched to {FALLBACK} due to high demand for {MAIN}"]


# ---------------------------------------------------------------- a configured output limit


async def test_a_configured_output_limit_is_never_escalated(api, tmp_path):
    api.push(*[reply(f"part {n}", stop_reason="max_tokens") for n in range(4)])
    session = make_session(api.url, tmp_path, max_tokens=8192)

    terminal = await session.submit("write a lot")

    assert terminal.reason is TerminalReason.MAX_OUTPUT_TOKENS
    assert [r.body["max_tokens"] for r in api.requests] == [8192] * 4
    assert [request_text(r.body).count("Output token limit hit.") for r in api.requests] == [0, 1, 1, 1]
    assert check_history(session.history) == []


async def test_escalation_stops_at_the_model_output_cap(api, tmp_path):
    api.push(reply("cut", stop_reason="max_tokens"), reply("whole"))
    session = make_session(api.url, tmp_path)
    session.model = AnthropicModel("claude-3-5-haiku-20241022", base_url=api.url, api_key="test-key")

    await session.submit("write a lot")

    assert [r.body["max_tokens"] for r in api.requests] == [8192, 8192]


# ---------------------------------------------------------------- discarded attempts


def kinds_between_requests(rec: Recorder) -> list[str]:
    """Event types in order, leaving out deltas and usage (the order of the rest is the contract)."""
    skip = (ev.TextDelta, ev.Usage, ev.BlockCompleted)
    return [e.type for _, e in rec.events if not isinstance(e, skip)]


async def test_the_text_of_a_retried_attempt_is_discarded_before_the_retry(api, tmp_path):
    api.push(sse_error("api_error", "Internal server error", after=5), reply("clean answer"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    await session.submit("hi")

    [discarded] = rec.of(ev.AttemptDiscarded)
    assert discarded.to_dict() == {"type": "attempt_discarded", "turn": 1, "attempt": 1, "reason": "retry"}
    kinds = kinds_between_requests(rec)
    start = kinds.index("request_started")
    assert kinds[start:start + 4] == ["request_started", "attempt_discarded", "notice", "request_started"]
    assert session.history[-1]["content"] == [{"type": "text", "text": "clean answer"}]


async def test_an_escalated_retry_discards_the_cut_answer(api, tmp_path):
    api.push(reply("The beginning of a long answer that", stop_reason="max_tokens"), reply("The whole answer."))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    await session.submit("write a lot")

    assert [(d.turn, d.attempt, d.reason) for d in rec.of(ev.AttemptDiscarded)] == [(1, 1, "escalation")]


async def test_a_kept_attempt_is_not_discarded(api, tmp_path):
    first = marker_reply()
    api.push(drop(after=after_tool_block(first) + 3, of=first), reply("The line is appended."))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)

    await session.submit("append a line")

    assert rec.of(ev.AttemptDiscarded) == []
    assert session.history[1]["content"][0] == {"type": "text", "text": "Appending a line."}


async def test_attempts_count_on_across_a_fallback(api, tmp_path):
    api.push(*[sse_error("overloaded_error", "Overloaded", after=5)] * 3, reply("answered by the fallback"))
    session = make_session(api.url, tmp_path, fallback_model=FALLBACK)
    rec = Recorder(session)

    await session.submit("hi")

    assert [(r.model, r.attempt) for r in rec.of(ev.RequestStarted)] == [
        (MAIN, 1), (MAIN, 2), (MAIN, 3), (FALLBACK, 4)]
    assert [(d.attempt, d.reason) for d in rec.of(ev.AttemptDiscarded)] == [(1, "retry"), (2, "retry"), (3, "fallback")]


async def test_stream_events_prints_the_discard(api, tmp_path):
    import io

    from agent_tui.printer import run_print

    api.push(drop(after=5), reply("second try"))
    session = make_session(api.url, tmp_path)
    out = io.StringIO()

    code = await run_print(session, "hi", "stream-events", out=out)

    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0
    assert {"type": "attempt_discarded", "turn": 1, "attempt": 1, "reason": "retry"} in lines
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "second try"
