"""The query loop and the streaming tool executor, on the real SDK against the loopback server."""

from __future__ import annotations

import asyncio

from agent_tui.engine import events as ev
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.messages import INTERRUPTED_FOR_TOOL_USE, REJECT_MESSAGE, check_history
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from tests.engine_helpers import Recorder, auto_answer, make_session, system_text, tool_results
from tests.loopback import drop, hang, raw, reply, sse_error, status, text, tool_use


async def test_ten_turn_tool_session_completes(api, tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    ids = [f"toolu_read_{i}" for i in range(10)]
    api.push(*[reply(text(f"Reading, step {i}."), tool_use("Read", {"file_path": str(tmp_path / "notes.txt")}, id=i_))
               for i, i_ in enumerate(ids)])
    api.push(reply("All ten reads done."))
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("read notes.txt ten times")

    assert terminal.reason is TerminalReason.COMPLETED
    assert terminal.turns == 11
    assert terminal.result == "All ten reads done."
    assert check_history(session.history) == []
    assert len(api.requests) == 11
    for i, req in enumerate(api.requests[1:]):
        results = tool_results(req.body)
        assert [r["tool_use_id"] for r in results] == [ids[i]]
        assert "alpha" in results[0]["content"] and not results[0].get("is_error")


async def test_parallel_read_grep_glob_overlap_in_time(api, tmp_path):
    for d in range(40):
        sub = tmp_path / f"pkg{d}"
        sub.mkdir()
        for f in range(25):
            (sub / f"mod{f}.py").write_text("def handler():\n    return 'needle'\n" * 40)
    big = tmp_path / "big.txt"
    big.write_text("line of text\n" * 1900)
    api.push(reply(
        tool_use("Read", {"file_path": str(big)}, id="t_read"),
        tool_use("Grep", {"pattern": "needle", "output_mode": "count"}, id="t_grep"),
        tool_use("Glob", {"pattern": "**/*.py"}, id="t_glob"),
    ), reply("done"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("look around")

    assert terminal.reason is TerminalReason.COMPLETED
    spans = {tid: (rec.times(ev.ToolStarted, tid), rec.times(ev.ToolFinished, tid))
             for tid in ("t_read", "t_grep", "t_glob")}
    last_start = max(s for s, _ in spans.values())
    first_end = min(e for _, e in spans.values())
    assert last_start < first_end, f"tools did not overlap: {spans}"
    assert [r["tool_use_id"] for r in tool_results(api.requests[1].body)] == ["t_read", "t_grep", "t_glob"]


async def test_failing_bash_cancels_its_running_siblings(api, tmp_path):
    api.push(reply(
        tool_use("Bash", {"command": "sleep 600"}, id="t_sleep"),
        tool_use("Bash", {"command": "cat does-not-exist.txt"}, id="t_fail"),
    ), reply("noted"))
    session = make_session(api.url, tmp_path)

    terminal = await asyncio.wait_for(session.submit("run both"), 120)  # not the sleep's 600 s

    assert terminal.reason is TerminalReason.COMPLETED
    results = {r["tool_use_id"]: r for r in tool_results(api.requests[1].body)}
    assert results["t_fail"]["is_error"] is True
    assert results["t_sleep"]["is_error"] is True
    assert results["t_sleep"]["content"] == "Cancelled: parallel tool call Bash(cat does-not-exist.txt) errored"


async def test_a_failing_read_does_not_cancel_siblings(api, tmp_path):
    api.push(reply(
        tool_use("Bash", {"command": "sleep 0.3; echo slept"}, id="t_sleep"),
        tool_use("Read", {"file_path": str(tmp_path / "missing.txt")}, id="t_read"),
    ), reply("ok"))
    session = make_session(api.url, tmp_path)

    await session.submit("go")

    results = {r["tool_use_id"]: r for r in tool_results(api.requests[1].body)}
    assert results["t_read"]["is_error"] is True
    assert "slept" in results["t_sleep"]["content"] and not results["t_sleep"].get("is_error")


async def test_results_return_in_block_order_whatever_order_tools_finish(api, tmp_path):
    api.push(reply(
        # Read-only, so all three run at once; the gaps outlast a loaded machine's late starts.
        tool_use("Bash", {"command": "sleep 1.2; echo first"}, id="t1"),
        tool_use("Bash", {"command": "sleep 0.6; echo second"}, id="t2"),
        tool_use("Bash", {"command": "echo third"}, id="t3"),
    ), reply("ok"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    await session.submit("go")

    finished = [e.tool_use_id for e in rec.of(ev.ToolFinished)]
    assert finished == ["t3", "t2", "t1"]
    results = tool_results(api.requests[1].body)
    assert [r["tool_use_id"] for r in results] == ["t1", "t2", "t3"]
    assert "first" in results[0]["content"] and "third" in results[2]["content"]


async def test_tools_start_while_the_model_is_still_streaming(api, tmp_path):
    api.push(reply(
        tool_use("Bash", {"command": "echo early"}, id="t1"),
        text("Some more words after the tool call. " * 3, delay_before=0.4),
    ), reply("ok"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    await session.submit("go")

    tool_done = rec.times(ev.ToolFinished, "t1")
    stream_end = max(t for t, e in rec.events if isinstance(e, ev.BlockCompleted) and e.index == 1)
    assert tool_done < stream_end


async def test_unsafe_tools_run_one_at_a_time_in_order(api, tmp_path):
    api.push(reply(
        tool_use("Bash", {"command": "sleep 0.2 && touch a.txt"}, id="t1"),
        tool_use("Bash", {"command": "sleep 0.2 && touch b.txt"}, id="t2"),
    ), reply("ok"))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)

    await session.submit("go")

    assert rec.times(ev.ToolStarted, "t2") >= rec.times(ev.ToolFinished, "t1")
    assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()


async def test_invalid_tool_json_is_an_error_result_not_a_call(api, tmp_path):
    api.push(reply(tool_use("Bash", '{"command": "touch x.txt"', id="t_bad")), reply("ok"))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))

    await session.submit("go")

    result = tool_results(api.requests[1].body)[0]
    assert result["is_error"] is True and "InputValidationError" in result["content"]
    assert not (tmp_path / "x.txt").exists()


async def test_schema_violation_is_reported_to_the_model(api, tmp_path):
    api.push(reply(tool_use("Read", {"path": "x"}, id="t1")), reply("ok"))
    session = make_session(api.url, tmp_path)

    await session.submit("go")

    result = tool_results(api.requests[1].body)[0]
    assert result["is_error"] is True
    assert result["content"].startswith("InputValidationError:") and "file_path" in result["content"]


async def test_unknown_tool_gets_an_error_result(api, tmp_path):
    api.push(reply(tool_use("Teleport", {}, id="t1")), reply("ok"))
    session = make_session(api.url, tmp_path)

    await session.submit("go")

    assert tool_results(api.requests[1].body)[0]["content"] == "Error: No such tool available: Teleport"


async def test_max_turns_ends_the_query_with_a_valid_history(api, tmp_path):
    api.push(*[reply(tool_use("Bash", {"command": "echo hi"})) for _ in range(3)])
    session = make_session(api.url, tmp_path, max_turns=2)

    terminal = await session.submit("loop")

    assert terminal.reason is TerminalReason.MAX_TURNS
    assert "maximum number of turns (2)" in terminal.error
    assert len(api.requests) == 2
    assert check_history(session.history) == []


async def test_max_tokens_stop_is_asked_again_with_a_larger_limit_and_never_runs_a_truncated_tool(api, tmp_path):
    events = [
        ("message_start", '{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
                          '"model":"claude-sonnet-4-6","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}'),
        ("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
        ("content_block_delta", '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Writing now"}}'),
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        ("content_block_start", '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t_cut","name":"Bash","input":{}}}'),
        ("content_block_delta", '{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"command\\": \\"touch cut"}}'),
        ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":50}}'),
        ("message_stop", '{"type":"message_stop"}'),
    ]
    api.push(raw(events), reply("Written in full."))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)

    terminal = await session.submit("go")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "Written in full."
    assert [r.body["max_tokens"] for r in api.requests] == [32000, 64000]
    assert api.requests[1].body["messages"] == api.requests[0].body["messages"]
    assert not rec.of(ev.ToolQueued)
    assert not list(tmp_path.iterdir())
    assert check_history(session.history) == []


async def test_prompt_too_long_that_compaction_cannot_fix_ends_with_a_clear_message(api, tmp_path):
    api.handler = lambda body, i: status(
        400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"
    )
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("huge")

    assert terminal.reason is TerminalReason.PROMPT_TOO_LONG
    assert "250000 tokens > 200000" in terminal.error and "/clear" in terminal.error
    assert "Compacting the conversation failed" in terminal.error
    assert check_history(session.history) == []


async def test_auth_error_names_the_environment_variable(api, tmp_path):
    api.push(status(401, "authentication_error", "invalid x-api-key"))
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.MODEL_ERROR
    assert "ANTHROPIC_API_KEY" in terminal.error
    assert len(api.requests) == 1


async def test_overloaded_and_rate_limited_requests_are_retried_honouring_retry_after(api, tmp_path):
    api.push(status(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"}),
             status(429, "rate_limit_error", "slow down", headers={"retry-after": "0.1"}),
             status(500, "api_error", "boom"),
             reply("finally"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "finally"
    notices = [n.message for n in rec.of(ev.Notice) if n.kind == "retry"]
    assert len(notices) == 3
    assert notices[0].startswith("API overloaded (529)") and "retrying in 0.0s" in notices[0]
    assert notices[1].startswith("Rate limited (429)") and "retrying in 0.1s" in notices[1]


async def test_sse_error_mid_stream_discards_the_partial_answer_and_retries(api, tmp_path):
    api.push(sse_error("overloaded_error", "Overloaded", after=4), reply("clean answer"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.result == "clean answer"
    assert any("mid-stream" in n.message for n in rec.of(ev.Notice))
    assert session.history[-1]["content"] == [{"type": "text", "text": "clean answer"}]


async def test_dropped_connection_mid_stream_is_retried(api, tmp_path):
    api.push(drop(after=4), reply("second try"))
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "second try"
    assert check_history(session.history) == []


async def test_retries_give_up_with_model_error(api, tmp_path):
    api.push(*[status(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"})] * 4)
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.MODEL_ERROR
    assert "gave up after retries" in terminal.error
    assert len(api.requests) == 4


async def test_refusal_with_no_content_keeps_the_history_valid(api, tmp_path):
    api.push(reply(stop_reason="refusal"), reply("hello again"))
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("something refused")
    assert "declined" in terminal.error
    assert check_history(session.history) == []

    terminal = await session.submit("hi")
    assert terminal.result == "hello again"


async def test_no_at_the_permission_prompt_ends_the_turn_without_calling_the_model_again(api, tmp_path):
    api.push(reply(text("Making it."), tool_use("Bash", {"command": "touch made.txt"}, id="t1"),
                   tool_use("Bash", {"command": "touch other.txt"}, id="t2")), reply("never sent"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)
    auto_answer(session, PermissionAnswer("deny"))

    terminal = await session.submit("make a file")

    assert terminal.reason is TerminalReason.ABORTED_TOOLS
    assert len(api.requests) == 1 and api.pending == 1
    assert len(rec.of(ev.PermissionRequested)) == 1, "after a no, nothing else of the turn asks"
    *_, results = session.history
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": REJECT_MESSAGE, "is_error": True},
        {"type": "tool_result", "tool_use_id": "t2", "content": REJECT_MESSAGE, "is_error": True},
        {"type": "text", "text": INTERRUPTED_FOR_TOOL_USE},
    ]
    assert not (tmp_path / "made.txt").exists() and not (tmp_path / "other.txt").exists()
    assert check_history(session.history) == []


async def test_no_with_feedback_sends_the_rejection_and_the_feedback_to_the_model(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "touch made.txt"}, id="t1")), reply("Using the other name."))
    session = make_session(api.url, tmp_path)
    auto_answer(session, PermissionAnswer("deny", feedback="call it notes.txt"))

    terminal = await session.submit("make a file")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "Using the other name."
    [result] = tool_results(api.requests[1].body)
    assert result["is_error"] is True and result["content"].endswith("the user said:\ncall it notes.txt")
    assert not (tmp_path / "made.txt").exists()


async def test_approved_permission_runs_the_tool(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "touch made.txt"}, id="t1")), reply("ok"))
    session = make_session(api.url, tmp_path)
    auto_answer(session, PermissionAnswer("allow"))

    await session.submit("make a file")

    assert (tmp_path / "made.txt").exists()


async def test_read_only_calls_do_not_ask(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "ls -la"}), tool_use("Glob", {"pattern": "*"})), reply("ok"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    await session.submit("look")

    assert rec.of(ev.PermissionRequested) == []


async def test_abort_while_streaming_closes_the_connection_quickly(api, tmp_path):
    api.push(hang(after=4, of=reply(text("Partial answer that keeps going"))), reply("fresh answer"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)
    task = asyncio.create_task(session.submit("talk"))
    while not rec.of(ev.TextDelta):
        await asyncio.sleep(0.01)

    session.abort()
    terminal = await task

    assert terminal.reason is TerminalReason.ABORTED_STREAMING
    # The server never ends this stream: only the client closing it ends the wait.
    assert await asyncio.to_thread(api.wait_disconnect, 1, 30.0)
    assert rec.of(ev.Interrupted)[0].during == "streaming"
    assert check_history(session.history) == []
    terminal = await session.submit("again")
    assert terminal.result == "fresh answer"
    assert check_history(api.requests[-1].body["messages"]) == []


async def test_abort_while_tools_run_gives_every_tool_use_a_result(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "sleep 30"}, id="t1"),
                   tool_use("Bash", {"command": "sleep 30"}, id="t2")), reply("after abort"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)
    task = asyncio.create_task(session.submit("wait"))
    while len(rec.of(ev.ToolStarted)) < 2:
        await asyncio.sleep(0.01)

    session.abort()
    terminal = await asyncio.wait_for(task, 60)

    assert terminal.reason is TerminalReason.ABORTED_TOOLS
    assert check_history(session.history) == []
    results = [b for b in session.history[-1]["content"] if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["t1", "t2"]
    assert all(r["is_error"] for r in results)
    assert (await session.submit("next")).result == "after abort"


async def test_abort_while_a_permission_is_pending(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "touch x"}, id="t1")), reply("ok then"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)
    task = asyncio.create_task(session.submit("go"))
    while not rec.of(ev.PermissionRequested):
        await asyncio.sleep(0.01)

    session.abort()
    terminal = await asyncio.wait_for(task, 60)

    assert terminal.reason is TerminalReason.ABORTED_TOOLS
    assert rec.of(ev.PermissionRequested)[0].future.cancelled()
    assert not (tmp_path / "x").exists()
    assert check_history(session.history) == []
    assert (await session.submit("next")).result == "ok then"


async def test_abort_when_idle_is_harmless(api, tmp_path):
    api.push(reply("hi"))
    session = make_session(api.url, tmp_path)
    session.abort()
    assert (await session.submit("hello")).result == "hi"


async def test_prompts_submitted_while_running_are_queued(api, tmp_path):
    api.push(reply(text("first", delay_before=0.2)), reply("second"))
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    first, second = await asyncio.gather(session.submit("one"), session.submit("two"))

    assert (first.result, second.result) == ("first", "second")
    assert [u.queued for u in rec.of(ev.UserMessage)] == [False, True]
    assert check_history(session.history) == []


async def test_request_carries_system_prompt_with_environment_and_tools(api, tmp_path):
    api.push(reply("hi"))
    session = make_session(api.url, tmp_path)

    await session.submit("hello")

    body = api.requests[0].body
    system = system_text(body)
    assert f"Working directory: {tmp_path.resolve()}" in system
    assert "Is directory a git repo: No" in system
    assert "Today's date:" in system
    assert [t["name"] for t in body["tools"]] == [
        "Read", "Glob", "Grep", "Bash", "Edit", "MultiEdit", "Write", "NotebookEdit", "TodoWrite", "Agent", "KillShell",
        "ExitPlanMode", "AskUserQuestion", "Skill", "WebFetch", "web_search"
    ]
    assert body["stream"] is True
