"""Resume round trip: after resuming, the next request carries the history the
original session would have sent (text, parallel tools, a denial, an interrupt)."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path

from agent_tui.engine import events as ev
from agent_tui.engine.messages import INTERRUPTED_MESSAGE, check_history
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.store import list_sessions, load_transcript
from tests.engine_helpers import make_session
from tests.loopback import LoopbackServer, hang, reply, text, tool_use
from tests.test_print_mode import AGENT, env_for, run

PARTIAL = "A partial answer that will be interrupted before it ends"
# hang(after=6): message_start, ping, content_block_start and three 8-character deltas.
PARTIAL_SENT = PARTIAL[:24]


def script(srv: LoopbackServer, cwd: Path) -> None:
    srv.push(
        reply(
            text("Reading both files."),
            tool_use("Read", {"file_path": str(cwd / "a.txt")}, id="toolu_read_a"),
            tool_use("Read", {"file_path": str(cwd / "b.txt")}, id="toolu_read_b"),
        ),
        reply(tool_use("Bash", {"command": "touch x.txt"}, id="toolu_bash")),
        reply("I could not run the command."),
        hang(after=6, of=reply(text(PARTIAL))),
        reply("Third answer."),
    )


def project(tmp_path: Path) -> Path:
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "a.txt").write_text("alpha\n")
    (cwd / "b.txt").write_text("beta\n")
    return cwd


async def original_requests(cwd: Path) -> list[dict]:
    """The same three prompts in one session that never stops: what it sends."""
    with LoopbackServer() as srv:
        script(srv, cwd)
        session = make_session(srv.url, cwd, policy=PermissionPolicy(interactive=False))
        await session.submit("first")
        streamed: list[str] = []

        def abort_when_partial_arrived(event: ev.Event) -> None:
            if isinstance(event, ev.TextDelta):
                streamed.append(event.text)
                if "".join(streamed) == PARTIAL_SENT:
                    session.abort()

        remove = session.bus.add_listener(abort_when_partial_arrived)
        interrupted = await session.submit("second")
        remove()
        await session.submit("third")
        await session.aclose()
        assert interrupted.reason.value == "aborted_streaming"
        return [r.body for r in srv.requests]


async def test_resumed_session_sends_the_history_the_original_would_have(tmp_path):
    cwd = project(tmp_path)
    expected = await original_requests(cwd)

    with LoopbackServer() as srv:
        script(srv, cwd)
        first = make_session(srv.url, cwd, policy=PermissionPolicy(interactive=False), persist=True)
        await first.submit("first")
        partial: list[str] = []

        def abort_when_partial_arrived(event: ev.Event) -> None:
            if isinstance(event, ev.TextDelta):
                partial.append(event.text)
                if "".join(partial) == PARTIAL_SENT:
                    first.abort()

        first.bus.add_listener(abort_when_partial_arrived)
        await first.submit("second")
        await first.aclose()

        resumed = make_session(srv.url, cwd, policy=PermissionPolicy(interactive=False), persist=True)
        transcript = resumed.resume()
        await resumed.submit("third")
        await resumed.aclose()

    assert transcript.session_id == first.session_id == resumed.session_id
    assert transcript.finished and not transcript.repaired
    assert srv.requests[-1].body == expected[-1]
    assert check_history(resumed.history) == []


def test_print_mode_resume_round_trip_with_parallel_tools_a_denial_and_an_interrupt(tmp_path):
    cwd = project(tmp_path)
    expected = asyncio.run(original_requests(cwd))

    with LoopbackServer() as srv:
        script(srv, cwd)
        env = env_for(srv.url)
        first = run(["-p", "first", "--output-format", "json"], cwd, env)
        assert json.loads(first.stdout)["permission_denials"][0]["tool_use_id"] == "toolu_bash"

        second = subprocess.Popen([AGENT, "-p", "--continue", "second"], cwd=cwd, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert srv.wait_requests(4, timeout=60)
        path = list_sessions(cwd)[0].path
        # message_start is on disk (a usage record) once the stream is being read.
        deadline = time.monotonic() + 30
        while path.read_text().count('"type":"usage"') < 7 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)
        second.send_signal(signal.SIGINT)
        second.communicate(timeout=30)
        assert second.returncode == 130

        third = run(["-p", "--continue", "third"], cwd, env)

    assert third.returncode == 0, third.stderr
    assert third.stdout == "Third answer.\n"
    assert [r.body for r in srv.requests] == expected
    stored = load_transcript(path)
    assert [m for m in stored.messages if m["content"][0].get("text") == INTERRUPTED_MESSAGE]
    assert len(list_sessions(cwd)) == 1


def test_resume_by_id_picks_that_session(api, tmp_path):
    api.push(reply("one"), reply("two"), reply("back to one"))
    env = env_for(api.url)
    run(["-p", "session one"], tmp_path, env)
    run(["-p", "session two"], tmp_path, env)
    one = next(s for s in list_sessions(tmp_path) if s.first_prompt == "session one")

    out = run(["-p", "--resume", one.session_id[:8], "and now?", "--output-format", "json"], tmp_path, env)

    assert json.loads(out.stdout)["session_id"] == one.session_id
    texts = [b["text"] for m in api.requests[-1].body["messages"] for b in m["content"]]
    assert texts == ["session one", "one", "and now?"]


def test_continue_without_a_stored_session_fails_clearly(tmp_path):
    out = run(["-p", "--continue", "hi"], tmp_path, env_for())

    assert out.returncode == 1
    assert "cannot continue: no stored conversation for this directory" in out.stderr


def test_resume_without_an_id_in_print_mode_lists_the_sessions(api, tmp_path):
    api.push(reply("one"))
    env = env_for(api.url)
    run(["-p", "remember this prompt"], tmp_path, env)

    out = run(["-p", "--resume", "--", "hi"], tmp_path, env)

    assert out.returncode == 2
    assert "--resume needs a session id" in out.stderr and "remember this prompt" in out.stderr
