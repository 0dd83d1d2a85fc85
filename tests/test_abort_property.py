"""Property: an abort at any point leaves a valid history, and the next prompt gets a normal answer.

Scripted three-turn session (text streaming, tool input streaming, parallel
read-only tools running, a permission pending), aborted after the N-th bus
event plus a small delay.  N and the delay are drawn by hypothesis.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from agent_tui.engine import events as ev
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.messages import check_history, text_of
from agent_tui.engine.permissions.policy import PermissionAnswer
from tests.counting import count, examples
from tests.engine_helpers import make_session, system_text
from tests.loopback import LoopbackServer, reply, text, tool_use


def scripted(body: dict, index: int):
    last = body["messages"][-1]
    last_text = " ".join(b.get("text", "") for b in last["content"] if b.get("type") == "text")
    if "recover" in last_text:
        return reply("recovered")
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    cwd = Path(system_text(body).split("Working directory: ")[1].split("\n")[0])
    if turn == 0:
        return reply(
            text("Let me look at the project files first. "),
            tool_use("Read", {"file_path": str(cwd / "a.txt")}),
            tool_use("Bash", {"command": "sleep 0.03; echo looked"}),
            tool_use("Glob", {"pattern": "*.txt"}),
            delay=0.002,
        )
    if turn == 1:
        return reply(text("Now I will change a file. "), tool_use("Bash", {"command": "touch changed.txt"}),
                     delay=0.002)
    return reply(text("All done, the file was changed."), delay=0.002)


@pytest.fixture(scope="module")
def server():
    with LoopbackServer() as srv:
        srv.handler = scripted
        yield srv


async def scenario(url: str, cwd: Path, abort_after: int, delay_ms: int, permission_delay_ms: int) -> None:
    session = make_session(url, cwd)
    loop = asyncio.get_running_loop()
    seen = 0
    first_done = False

    def abort_first_prompt() -> None:
        if not first_done:
            session.abort()

    def on_event(event: ev.Event) -> None:
        nonlocal seen
        seen += 1
        if seen == abort_after:
            loop.call_later(delay_ms / 1000, abort_first_prompt)
        if isinstance(event, ev.PermissionRequested) and event.future is not None:
            fut = event.future
            loop.call_later(permission_delay_ms / 1000,
                            lambda: fut.done() or fut.set_result(PermissionAnswer("allow")))

    session.bus.add_listener(on_event)
    terminal = await asyncio.wait_for(session.submit("look and change"), 10)
    first_done = True
    event(terminal.reason.value)
    assert terminal.reason in (TerminalReason.COMPLETED, TerminalReason.ABORTED_STREAMING,
                               TerminalReason.ABORTED_TOOLS)
    assert check_history(session.history) == [], session.history

    after = await asyncio.wait_for(session.submit("please recover"), 10)
    assert after.reason is TerminalReason.COMPLETED, after
    assert after.result == "recovered"
    assert check_history(session.history) == []
    assert text_of(session.history[-1]) == "recovered"
    await session.aclose()


@pytest.mark.property
@settings(max_examples=examples(0.5))
@given(abort_after=st.integers(min_value=1, max_value=90), delay_ms=st.integers(min_value=0, max_value=25),
       permission_delay_ms=st.integers(min_value=0, max_value=40))
def test_abort_anywhere_leaves_a_valid_resumable_history(server, tmp_path, abort_after, delay_ms,
                                                        permission_delay_ms):
    (tmp_path / "a.txt").write_text("hello\n")
    count("aborts at a random moment")
    before = len(server.requests)
    asyncio.run(scenario(server.url, tmp_path, abort_after, delay_ms, permission_delay_ms))
    for req in server.requests[before:]:
        assert check_history(req.body["messages"]) == []
