"""Two processes continuing one session: the first holds an exclusive lock on it; the
second continues in a new session with a copy of the history and says so, so neither
transcript gets the other's records."""

from __future__ import annotations

import json
import subprocess

from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionPolicy
from agent_tui.engine.store import load_transcript, project_dir
from agent_tui.tui.app import AgentApp
from tests.engine_helpers import make_session
from tests.loopback import gated, reply, text
from tests.test_print_mode import AGENT, env_for
from tests.tui.helpers import screen_text, wait_until


def user_prompts(path) -> list[str]:
    messages = load_transcript(path).history
    return [m["content"][0]["text"] for m in messages if m["role"] == "user"]


async def test_resuming_a_session_another_store_holds_forks_it_with_a_copy(api, tmp_path):
    api.push(reply("one"), reply("two from the first"), reply("two from the second"))
    first = make_session(api.url, tmp_path, policy=PermissionPolicy(interactive=False), persist=True)
    await first.submit("prompt one")

    second = make_session(api.url, tmp_path, policy=PermissionPolicy(interactive=False), persist=True)
    transcript = second.resume(first.session_id)

    assert second.forked_from == first.session_id and second.session_id != first.session_id
    assert second.history == first.history
    assert transcript.problems == [
        f"Session {first.session_id[:8]} is open in another agent-tui process; continuing as a new session "
        f"{second.session_id[:8]} with a copy of its history."
    ]
    await first.submit("first goes on")
    await second.submit("second goes on")
    await first.aclose()
    await second.aclose()

    assert user_prompts(first.store.path) == ["prompt one", "first goes on"]
    assert user_prompts(second.store.path) == ["prompt one", "second goes on"]
    for store in (first.store, second.store):
        assert check_history(load_transcript(store.path).history) == []


async def test_a_session_closed_by_its_process_resumes_in_place(api, tmp_path):
    api.push(reply("one"), reply("two"))
    first = make_session(api.url, tmp_path, policy=PermissionPolicy(interactive=False), persist=True)
    await first.submit("prompt one")
    await first.aclose()

    again = make_session(api.url, tmp_path, policy=PermissionPolicy(interactive=False), persist=True)
    again.resume()
    await again.submit("prompt two")
    await again.aclose()

    assert again.forked_from is None and again.session_id == first.session_id
    assert user_prompts(first.store.path) == ["prompt one", "prompt two"]


def test_print_mode_continue_while_another_process_holds_the_session(api, tmp_path):
    env = env_for(api.url)
    api.push(reply("one"))
    first = subprocess.run([AGENT, "-p", "prompt one", "--output-format", "json"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    session_id = json.loads(first.stdout)["session_id"]
    held, gate = gated(reply(text("the holder's answer")))
    api.push(held, reply("the second's answer"))

    holder = subprocess.Popen([AGENT, "-p", "-c", "holder goes on", "--output-format", "json"], cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert api.wait_requests(2, timeout=120)  # the holder has resumed and is streaming
        second = subprocess.run([AGENT, "-p", "-c", "second goes on", "--output-format", "json"], cwd=tmp_path,
                                env=env, capture_output=True, text=True, timeout=120)
    finally:
        gate.set()
        holder_out, _ = holder.communicate(timeout=120)

    assert second.returncode == 0, second.stderr
    forked_id = json.loads(second.stdout)["session_id"]
    assert forked_id != session_id
    assert (f"agent-tui: Session {session_id[:8]} is open in another agent-tui process; continuing as a new "
            f"session {forked_id[:8]} with a copy of its history.") in second.stderr.splitlines()
    assert json.loads(holder_out)["session_id"] == session_id
    # Each transcript has only its own process's prompts after the copy.
    assert user_prompts(project_dir(tmp_path) / f"{session_id}.jsonl") == ["prompt one", "holder goes on"]
    forked = user_prompts(project_dir(tmp_path) / f"{forked_id}.jsonl")
    assert forked[0] == "prompt one" and forked[-1] == "second goes on" and forked.count("second goes on") == 1


async def test_the_tui_says_when_it_continues_a_copy(api, tmp_path):
    api.push(reply("one"))
    holder = make_session(api.url, tmp_path, policy=PermissionPolicy(interactive=False), persist=True)
    await holder.submit("prompt one")
    session = make_session(api.url, tmp_path, persist=True)
    session.resume()
    app = AgentApp(session)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: "open in another agent-tui process" in screen_text(app))
        shown = " ".join(screen_text(app).split())
    await holder.aclose()
    assert f"Session {holder.session_id[:8]} is open in another agent-tui process" in shown
