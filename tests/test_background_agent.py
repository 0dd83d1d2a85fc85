"""The Agent tool's run_in_background on the loopback server: the call returns at once and the
conversation goes on while the subagent runs; its report (a <task-notification>) reaches the model at
the next turn, or with the next prompt when none is running; its output file can be read; Esc does not
stop it, the session's end does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agent_tui.engine import events as ev
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.tools.read import ReadTool
from tests.engine_helpers import Recorder, make_session
from tests.loopback import gated, hang, reply, text, tool_use
from tests.test_subagent import route

SURVEY = {"description": "Survey the TODOs", "prompt": "count the TODOs", "run_in_background": True}


def _texts(message: dict) -> str:
    return "\n".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


def _tool_result(message: dict, tool_use_id: str) -> str:
    block = next(b for b in message["content"] if b.get("tool_use_id") == tool_use_id)
    content = block["content"]
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


async def test_the_conversation_goes_on_and_the_report_arrives_at_the_next_turn(api, tmp_path):
    flag = tmp_path / "agent.done"
    report, release = gated(reply(text("Found 3 TODOs, in a.py and b.py.")))
    seen = route(api, [
        reply(tool_use("Agent", SURVEY, id="toolu_bg")),
        reply(tool_use("Bash", {"command": f"while [ ! -f {flag} ]; do sleep 0.05; done; echo waited"},
                       id="toolu_wait")),
        reply("The survey found 3 TODOs."),
    ], **{"count the TODOs": [report]})
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"), persist=True)
    rec = Recorder(session)

    def on_event(event: ev.Event) -> None:
        if isinstance(event, ev.ToolStarted) and event.tool_use_id == "toolu_wait":
            release.set()  # the subagent answers only once the conversation has gone on to its next tool
        if isinstance(event, ev.BackgroundTask) and event.status == "completed":
            flag.write_text("done")

    session.bus.add_listener(on_event)
    terminal = await session.submit("survey the TODOs in the background")
    await session.aclose()

    assert terminal.result == "The survey found 3 TODOs."
    first, second, third = seen["parent"]
    launched = _tool_result(second["messages"][-1], "toolu_bg")
    assert launched.startswith("Async agent launched successfully.") and "output_file:" in launched
    # The report came with the Bash call's result, in the next turn's user message.
    last = third["messages"][-1]
    assert _tool_result(last, "toolu_wait").strip() == "waited"
    note = _texts(last)
    assert "<task-notification>" in note and "<status>completed</status>" in note
    assert "Found 3 TODOs, in a.py and b.py." in note and "<task-id>toolu_bg</task-id>" in note
    statuses = [e.status for e in rec.of(ev.BackgroundTask)]
    assert statuses == ["running", "completed"]
    output = Path(rec.of(ev.BackgroundTask)[-1].output_path)
    assert "Found 3 TODOs" in output.read_text()
    # The model reads the output file without a question, though it lives outside the project.
    session.policy.mode = "default"
    assert session.policy.decide(ReadTool(), {"file_path": str(output)}, cwd=tmp_path).behavior == "allow"


async def test_a_report_that_arrives_while_idle_goes_with_the_next_prompt(api, tmp_path):
    report, release = gated(reply(text("Nothing to report.")))
    seen = route(api, [reply(tool_use("Agent", SURVEY, id="toolu_bg")), reply("Started it."),
                       reply("It reported nothing.")], **{"count the TODOs": [report]})
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))
    finished = asyncio.Event()
    session.bus.add_listener(lambda e: finished.set() if isinstance(e, ev.BackgroundTask)
                             and e.status != "running" else None)

    await session.submit("start the survey")
    assert session.background_agents.running  # the prompt ended; the agent did not
    release.set()
    await asyncio.wait_for(finished.wait(), 10)
    await session.submit("what did it say?")
    await session.aclose()

    prompt = seen["parent"][-1]["messages"][-1]
    assert "<task-notification>" in _texts(prompt) and "Nothing to report." in _texts(prompt)
    assert _texts(prompt).endswith("what did it say?")
    # Given once: not again with a later turn.
    assert json.dumps(seen["parent"][-1]["messages"][:-1]).count("<task-notification>") == 0


async def test_print_mode_waits_for_a_background_agent_and_the_model_reads_its_report(api, tmp_path):
    from tests.test_print_mode import env_for, run

    route(api, [reply(tool_use("Agent", SURVEY, id="toolu_bg")), reply("Started it."),
                reply("The agent found 2 TODOs.")], **{"count the TODOs": [reply(text("2 TODOs, in a.py."))]})

    done = run(["-p", "survey in the background", "--output-format", "json"], tmp_path, env_for(api.url))

    result = json.loads(done.stdout)
    assert done.returncode == 0 and result["result"] == "The agent found 2 TODOs."
    parent = [r.body for r in api.requests if "subagent of agent-tui" not in json.dumps(r.body.get("system", ""))]
    assert "2 TODOs, in a.py." in json.dumps(parent[-1]["messages"][-1])


async def test_esc_does_not_stop_a_background_agent_but_the_session_end_does(api, tmp_path):
    report, _never = gated(reply(text("never sent")))
    route(api, [reply(tool_use("Agent", SURVEY, id="toolu_bg")), hang(after=2, of=reply(text("thinking on")))],
          **{"count the TODOs": [report]})
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)
    asked = asyncio.ensure_future(session.submit("start the survey"))
    while len(api.requests) < 3:  # the parent's second request and the subagent's first
        await asyncio.sleep(0.02)
    session.interrupt()
    terminal = await asyncio.wait_for(asked, 10)

    assert terminal.reason.value == "aborted_streaming"
    assert [e.status for e in rec.of(ev.BackgroundTask)] == ["running"]
    assert len(session.background_agents.running) == 1
    await asyncio.wait_for(session.aclose(), 15)
    assert [e.status for e in rec.of(ev.BackgroundTask)] == ["running", "stopped"]
    assert not session.background_agents.running
