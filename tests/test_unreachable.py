"""An unreachable server: a refused connection is named at once, retries are one updating line,
and they stop at the total time limit."""

from __future__ import annotations

import asyncio
import itertools
import socket

from agent_tui.engine import events as ev
from agent_tui.engine.loop.attempts import RetryPolicy
from tests.engine_helpers import Recorder, make_session, turn_notice


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


async def test_a_refused_connection_is_named_before_any_backoff(tmp_path):
    port = closed_port()
    # A backoff far longer than any test: the notice can only come before it.
    session = make_session(f"http://127.0.0.1:{port}", tmp_path,
                           retry=RetryPolicy(max_retries=5, base_delay=600, max_delay=600, max_elapsed=10_000))
    notices: asyncio.Queue[ev.Notice] = asyncio.Queue()
    session.bus.add_listener(lambda e: notices.put_nowait(e) if turn_notice(e) else None)
    rec = Recorder(session)

    run = asyncio.ensure_future(session.submit("hi"))
    notice = await asyncio.wait_for(notices.get(), timeout=60)
    session.abort()
    terminal = await run

    assert notice.kind == "retry"
    assert notice.message.startswith(f"Connection refused (127.0.0.1:{port}); retrying in ")
    assert notice.message.endswith("(attempt 1/5)")
    assert len(rec.of(ev.RequestStarted)) == 1
    assert terminal.reason.value == "aborted_streaming"


async def test_every_retry_of_a_request_updates_one_notice(tmp_path):
    port = closed_port()
    session = make_session(f"http://127.0.0.1:{port}", tmp_path,
                           retry=RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.01))
    rec = Recorder(session)

    terminal = await session.submit("hi")

    retries = [n for n in rec.of(ev.Notice) if n.kind == "retry"]
    assert [n.message.split("(attempt ")[1] for n in retries] == ["1/3)", "2/3)", "3/3)"]
    assert retries[0].id is not None and {n.id for n in retries} == {retries[0].id}
    assert len(rec.of(ev.RequestStarted)) == 4
    assert terminal.error == f"Connection refused (127.0.0.1:{port}) (gave up after retries)"


async def test_retries_stop_at_the_total_time_limit(tmp_path):
    port = closed_port()
    ticks = itertools.count(0, 2.0)  # every look at the clock: two more seconds gone
    session = make_session(f"http://127.0.0.1:{port}", tmp_path,
                           retry=RetryPolicy(max_retries=10, base_delay=0.01, max_delay=0.01, max_elapsed=5.0,
                                             clock=lambda: next(ticks)))
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert len(rec.of(ev.RequestStarted)) == 3  # failed at 2 s and 4 s: retried; at 6 s: past the limit
    assert terminal.error == f"Connection refused (127.0.0.1:{port}) (gave up after 3 attempts in 6s)"
