"""A tool input nested deeper than the JSON decoder goes fails that one call, not the run."""

from __future__ import annotations

from agent_tui.engine import events as ev
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.messages import check_history
from tests.engine_helpers import Recorder, make_session, tool_results
from tests.loopback import raw, reply, tool_use
from tests.test_model_stream import start_event, text_delta, text_start

DEPTH = 100_000


async def test_a_tool_input_nested_too_deeply_is_an_error_result_and_the_next_turn_works(api, tmp_path):
    (tmp_path / "notes.txt").write_text("kept\n")
    api.push(
        reply(
            tool_use("Read", "[" * DEPTH, id="t_deep"),
            tool_use("Read", {"file_path": str(tmp_path / "notes.txt")}, id="t_read"),
            chunk=4096,
        ),
        reply("That input was too deep."),
        reply("Still here."),
    )
    session = make_session(api.url, tmp_path)
    rec = Recorder(session)

    terminal = await session.submit("read it")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "That input was too deep."
    deep, read = tool_results(api.requests[1].body)
    assert deep["tool_use_id"] == "t_deep" and deep["is_error"] is True
    assert deep["content"].startswith("InputValidationError: Tool input is nested too deeply")
    assert read["tool_use_id"] == "t_read" and "kept" in str(read["content"])
    assert {f.tool_use_id for f in rec.of(ev.ToolFinished)} == {"t_deep", "t_read"}
    # The history holds the call with an empty input: the next request serialises and is answered.
    [use] = [b for b in api.requests[1].body["messages"][-2]["content"] if b.get("id") == "t_deep"]
    assert use["input"] == {}
    assert check_history(session.history) == []

    terminal = await session.submit("and now?")
    await session.aclose()

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "Still here."
    assert len(api.requests) == 3


async def test_a_stream_event_nested_too_deeply_is_a_model_error_and_the_next_turn_works(api, tmp_path):
    deep = '{"type":"content_block_delta","index":0,"delta":' + "[" * DEPTH + "]" * DEPTH + "}"
    api.push(*(raw([start_event(), text_start(), text_delta("Hel"), ("content_block_delta", deep)]) for _ in range(6)))
    session = make_session(api.url, tmp_path)

    terminal = await session.submit("hello")

    assert terminal.reason is TerminalReason.MODEL_ERROR
    assert "Malformed stream event" in (terminal.error or "")
    assert check_history(session.history) == []
    api.push(reply("Hello again."))
    terminal = await session.submit("hello?")
    await session.aclose()
    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "Hello again."
