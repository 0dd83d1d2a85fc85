"""UserPromptSubmit, Stop, SubagentStop, SessionStart, Notification and PreCompact hooks:
real executable scripts, Claude Code's protocol, through the loopback API."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agent_tui.engine import events as ev
from agent_tui.engine.hooks import HookRunner
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from tests.engine_helpers import Recorder, auto_answer, make_session, tool_results
from tests.loopback import Response, reply, tool_use


def hook_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "hooks"
    folder.mkdir(exist_ok=True)
    return folder


def hook_script(tmp_path: Path, name: str, body: str) -> str:
    """An executable shell script in `tmp_path/hooks`, where hooks also leave what they record."""
    path = hook_dir(tmp_path) / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def json_hook(tmp_path: Path, output: dict[str, Any], name: str = "json.sh") -> str:
    return hook_script(tmp_path, name, f"cat <<'EOF'\n{json.dumps(output)}\nEOF\n")


def hooks(event: str, *commands: str, matcher: str | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": c} for c in commands]}
    if matcher is not None:
        group["matcher"] = matcher
    return {event: [group]}


def session_with(api, tmp_path, table: dict[str, Any], **options: Any):
    return make_session(api.url, tmp_path, hooks=table, **options)


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text blocks of the first user message of a request."""
    return [b["text"] for b in body["messages"][0]["content"] if b.get("type") == "text"]


def hook_notices(rec: Recorder) -> list[str]:
    return [n.message for n in rec.of(ev.Notice) if n.kind == "hook"]


# ---------------------------------------------------------------- UserPromptSubmit


async def test_user_prompt_submit_gets_the_prompt_and_its_stdout_becomes_context(api, tmp_path):
    seen = hook_dir(tmp_path) / "stdin.json"
    script = hook_script(tmp_path, "ctx.sh", f"cat > {seen}\necho 'Current branch: feature/login'\n")
    api.push(reply("ok"))
    session = session_with(api, tmp_path, hooks("UserPromptSubmit", script))

    await session.submit("fix the login bug")

    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "UserPromptSubmit" and payload["prompt"] == "fix the login bug"
    assert payload["session_id"] == session.session_id and payload["permission_mode"] == "default"
    texts = user_texts(api.requests[0].body)
    assert texts[0] == "fix the login bug"
    assert "UserPromptSubmit hook additional context: Current branch: feature/login" in texts[1]


async def test_user_prompt_submit_exit_2_drops_the_prompt_and_tells_the_user(api, tmp_path):
    script = hook_script(tmp_path, "guard.sh", "echo 'Prompt mentions a password' >&2\nexit 2\n")
    session = session_with(api, tmp_path, hooks("UserPromptSubmit", script))
    rec = Recorder(session)

    terminal = await session.submit("my password is hunter2")

    assert terminal.reason is TerminalReason.HOOK_STOPPED
    assert api.requests == [] and session.history == []
    assert hook_notices(rec) == ["Prompt blocked by a UserPromptSubmit hook: Prompt mentions a password"]
    assert rec.of(ev.QueryFinished)[0].terminal_reason == "hook_stopped"


async def test_user_prompt_submit_decision_block_drops_the_prompt(api, tmp_path):
    script = json_hook(tmp_path, {"decision": "block", "reason": "Not during the freeze"})
    session = session_with(api, tmp_path, hooks("UserPromptSubmit", script))

    terminal = await session.submit("deploy")

    assert terminal.reason is TerminalReason.HOOK_STOPPED and terminal.error == "Not during the freeze"
    assert api.requests == []


async def test_user_prompt_submit_continue_false_drops_the_prompt(api, tmp_path):
    script = json_hook(tmp_path, {"continue": False, "stopReason": "Session closed by policy"})
    session = session_with(api, tmp_path, hooks("UserPromptSubmit", script))

    terminal = await session.submit("hello")

    assert terminal.reason is TerminalReason.HOOK_STOPPED and terminal.error == "Session closed by policy"
    assert api.requests == []


async def test_user_prompt_submit_additional_context_reaches_the_model(api, tmp_path):
    script = json_hook(tmp_path, {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                         "additionalContext": "Ticket LOGIN-42 is open"}})
    api.push(reply("ok"))
    session = session_with(api, tmp_path, hooks("UserPromptSubmit", script))

    await session.submit("fix it")

    assert "UserPromptSubmit hook additional context: Ticket LOGIN-42 is open" in user_texts(api.requests[0].body)[1]


async def test_a_blocked_prompt_leaves_the_conversation_as_it_was(api, tmp_path):
    script = hook_script(tmp_path, "guard.sh", 'grep -q secret && { echo "no secrets" >&2; exit 2; }\nexit 0\n')
    api.push(reply("First answer."), reply("Third answer."))
    session = session_with(api, tmp_path, hooks("UserPromptSubmit", script))

    await session.submit("first")
    await session.submit("a secret")
    await session.submit("third")

    assert [m["content"][0]["text"] for m in session.history if m["role"] == "user"] == ["first", "third"]
    assert check_history(session.history) == []


# ---------------------------------------------------------------- Stop


async def test_stop_exit_2_feeds_stderr_back_and_the_loop_goes_on(api, tmp_path):
    log = hook_dir(tmp_path) / "stop.log"
    script = hook_script(
        tmp_path,
        "stop.sh",
        f'input=$(cat)\necho "$input" >> {log}\n'
        'case "$input" in *\'"stop_hook_active": true\'*) exit 0;; esac\n'
        "echo 'Tests are still failing; run them again' >&2\nexit 2\n",
    )
    api.push(reply("All done."), reply("Ran the tests again: they pass."))
    session = session_with(api, tmp_path, hooks("Stop", script))
    rec = Recorder(session)

    terminal = await session.submit("fix the tests")

    assert terminal.reason is TerminalReason.COMPLETED
    assert terminal.result == "Ran the tests again: they pass."
    assert terminal.turns == 2
    last = api.requests[1].body["messages"][-1]
    assert last["role"] == "user"
    assert last["content"][0]["text"] == "Stop hook feedback:\nTests are still failing; run them again"
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["stop_hook_active"] for r in runs] == [False, True]
    assert {r["hook_event_name"] for r in runs} == {"Stop"}
    assert [e.turn for e in rec.of(ev.RequestStarted)] == [1, 2]
    assert check_history(session.history) == []


async def test_stop_decision_block_feeds_the_reason_back(api, tmp_path):
    script = hook_script(
        tmp_path,
        "stop.sh",
        'grep -q \'"stop_hook_active": true\' && exit 0\n'
        'echo \'{"decision": "block", "reason": "Update the changelog too"}\'\n',
    )
    api.push(reply("Done."), reply("Changelog updated."))
    session = session_with(api, tmp_path, hooks("Stop", script))

    terminal = await session.submit("ship it")

    assert terminal.result == "Changelog updated."
    assert api.requests[1].body["messages"][-1]["content"][0]["text"] == (
        "Stop hook feedback:\nUpdate the changelog too"
    )


async def test_stop_continue_false_ends_the_query_as_stop_hook_prevented(api, tmp_path):
    script = json_hook(tmp_path, {"continue": False, "stopReason": "Budget for today is spent"})
    api.push(reply("Done."))
    session = session_with(api, tmp_path, hooks("Stop", script))
    rec = Recorder(session)

    terminal = await session.submit("go")

    assert terminal.reason is TerminalReason.STOP_HOOK_PREVENTED
    assert terminal.error == "Budget for today is spent"
    assert "Budget for today is spent" in hook_notices(rec)
    assert len(api.requests) == 1 and check_history(session.history) == []


async def test_stop_hook_errors_are_shown_and_the_query_completes(api, tmp_path):
    script = hook_script(tmp_path, "stop.sh", "echo 'notifier down' >&2\nexit 3\n")
    api.push(reply("Done."))
    session = session_with(api, tmp_path, hooks("Stop", script))
    rec = Recorder(session)

    terminal = await session.submit("go")

    assert terminal.reason is TerminalReason.COMPLETED
    assert hook_notices(rec) == [f"Stop hook `{script}` failed with exit code 3: notifier down"]


async def test_a_stop_hook_that_always_blocks_is_bounded_by_max_turns(api, tmp_path):
    script = hook_script(tmp_path, "stop.sh", "echo 'again' >&2\nexit 2\n")
    api.push(reply("one"), reply("two"), reply("three"))
    session = session_with(api, tmp_path, hooks("Stop", script), max_turns=3)

    terminal = await session.submit("go")

    assert terminal.reason is TerminalReason.MAX_TURNS and len(api.requests) == 3
    assert check_history(session.history) == []


async def test_a_stop_hook_that_always_blocks_is_overridden_after_eight_continuations(api, tmp_path):
    script = hook_script(tmp_path, "stop.sh", "echo 'again' >&2\nexit 2\n")
    api.push(*(reply(f"answer {n}") for n in range(1, 21)))
    session = session_with(api, tmp_path, hooks("Stop", script))
    rec = Recorder(session)

    terminal = await session.submit("go")

    # Claude Code's default cap: the first answer plus 8 forced continuations, then the 9th block is overridden.
    assert len(api.requests) == 9 and api.pending == 11
    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "answer 9"
    assert hook_notices(rec)[-1].startswith("A Stop hook blocked the turn from ending 9 consecutive times")
    assert check_history(session.history) == []


async def test_the_stop_hook_block_count_restarts_when_the_model_runs_a_tool(api, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "2")
    script = hook_script(tmp_path, "stop.sh", "echo 'again' >&2\nexit 2\n")
    (tmp_path / "notes.txt").write_text("hello\n")
    api.push(
        reply("one"), reply("two"),
        reply(tool_use("Read", {"file_path": str(tmp_path / "notes.txt")}, id="toolu_read")),
        reply("three"), reply("four"), reply("five"), reply("never sent"),
    )
    session = session_with(api, tmp_path, hooks("Stop", script))

    terminal = await session.submit("go")

    assert len(api.requests) == 6 and terminal.result == "five"
    assert terminal.reason is TerminalReason.COMPLETED


# ---------------------------------------------------------------- SubagentStop


async def test_subagent_stop_hooks_run_when_a_subagent_ends_and_can_keep_it_going(api, tmp_path):
    log = hook_dir(tmp_path) / "events.log"
    subagent_stop = hook_script(
        tmp_path,
        "substop.sh",
        f'input=$(cat)\necho "$input" >> {log}\n'
        'case "$input" in *\'"stop_hook_active": true\'*) exit 0;; esac\n'
        "echo 'Include file paths in the report' >&2\nexit 2\n",
    )
    stop = hook_script(tmp_path, "stop.sh", f"cat >> {log}\n")
    scripts: dict[str, list[Response]] = {
        "parent": [reply(tool_use("Agent", {"description": "Find it", "prompt": "Find main"}, id="t_agent")),
                   reply("Main is in app.py.")],
        "sub": [reply("Main is in the app module."), reply("Main is in /repo/app.py.")],
    }
    api.handler = lambda body, _i: scripts[
        "sub" if "subagent of agent-tui" in json.dumps(body.get("system", "")) else "parent"
    ].pop(0)
    session = session_with(api, tmp_path, {**hooks("SubagentStop", subagent_stop), **hooks("Stop", stop)})

    terminal = await session.submit("where is main?")

    assert terminal.reason is TerminalReason.COMPLETED
    parent_second = [r.body for r in api.requests if "subagent of agent-tui" not in json.dumps(r.body["system"])][1]
    assert tool_results(parent_second)[0]["content"] == "Main is in /repo/app.py."
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["hook_event_name"], r["stop_hook_active"]) for r in runs] == [
        ("SubagentStop", False),
        ("SubagentStop", True),
        ("Stop", False),
    ]


# ---------------------------------------------------------------- SessionStart


async def test_session_start_runs_once_with_its_source_and_its_output_becomes_context(api, tmp_path):
    log = hook_dir(tmp_path) / "start.log"
    script = hook_script(tmp_path, "start.sh", f"cat >> {log}\necho >> {log}\necho 'Open issues: 3'\n")
    api.push(reply("one"), reply("two"), reply("three"))
    session = session_with(api, tmp_path, hooks("SessionStart", script, matcher="startup|clear"))

    await session.submit("first")
    await session.submit("second")
    session.clear()
    await session.submit("third")

    runs = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [(r["hook_event_name"], r["source"]) for r in runs] == [
        ("SessionStart", "startup"),
        ("SessionStart", "clear"),
    ]
    first, second, third = (r.body for r in api.requests)
    assert "SessionStart:startup hook additional context: Open issues: 3" in user_texts(first)[0]
    assert user_texts(first)[1] == "first" and len(user_texts(first)) == 2
    assert all("SessionStart" not in t for m in second["messages"][1:] for t in _texts(m))
    assert "SessionStart:clear hook additional context: Open issues: 3" in user_texts(third)[0]


async def test_session_start_runs_when_the_front_end_starts_the_session(api, tmp_path):
    marker = hook_dir(tmp_path) / "started"
    script = hook_script(tmp_path, "start.sh", f"touch {marker}\n")
    session = session_with(api, tmp_path, hooks("SessionStart", script))

    session.start()
    for _ in range(200):
        if marker.exists():
            break
        await asyncio.sleep(0.01)

    assert marker.exists() and api.requests == []
    await session.aclose()


async def test_session_start_exit_2_only_tells_the_user(api, tmp_path):
    script = hook_script(tmp_path, "start.sh", "echo 'could not reach the tracker' >&2\nexit 2\n")
    api.push(reply("ok"))
    session = session_with(api, tmp_path, hooks("SessionStart", script))
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.COMPLETED
    assert hook_notices(rec) == ["SessionStart:startup hook: could not reach the tracker"]


async def test_session_start_json_additional_context(api, tmp_path):
    script = json_hook(tmp_path, {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                         "additionalContext": "Use pnpm, not npm"},
                                  "suppressOutput": True})
    api.push(reply("ok"))
    session = session_with(api, tmp_path, hooks("SessionStart", script))

    await session.submit("install deps")

    assert "SessionStart:startup hook additional context: Use pnpm, not npm" in user_texts(api.requests[0].body)[0]


# ---------------------------------------------------------------- Notification


async def test_notification_hooks_hear_about_permission_prompts(api, tmp_path):
    seen = hook_dir(tmp_path) / "notification.json"
    script = hook_script(tmp_path, "notify.sh", f"cat > {seen}.tmp && mv {seen}.tmp {seen}\n")
    api.push(reply(tool_use("Bash", {"command": "touch made.txt"})), reply("ok"))
    session = session_with(api, tmp_path, hooks("Notification", script), policy=PermissionPolicy(mode="default"))

    def answer_after_notification(event: ev.Event) -> None:
        if isinstance(event, ev.PermissionRequested):
            async def later() -> None:
                for _ in range(300):
                    if seen.exists():
                        break
                    await asyncio.sleep(0.01)
                event.future.set_result(PermissionAnswer("allow"))
            asyncio.get_running_loop().create_task(later())

    session.bus.add_listener(answer_after_notification)

    await session.submit("go")

    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "Notification"
    assert payload["message"] == "agent-tui needs your permission to use Bash"
    assert (tmp_path / "made.txt").exists()


async def test_no_notification_when_no_prompt_is_needed(api, tmp_path):
    marker = hook_dir(tmp_path) / "notified"
    script = hook_script(tmp_path, "notify.sh", f"touch {marker}\n")
    api.push(reply(tool_use("Bash", {"command": "touch made.txt"})), reply("ok"))
    policy = PermissionPolicy(mode="default", allow=["Bash(touch:*)"])
    session = session_with(api, tmp_path, hooks("Notification", script), policy=policy)
    auto_answer(session, PermissionAnswer("allow"))

    await session.submit("go")
    await session.hooks.aclose()

    assert not marker.exists()


# ---------------------------------------------------------------- PreCompact and configuration


async def test_pre_compact_matches_its_trigger_and_exit_2_is_only_shown(tmp_path):
    seen = hook_dir(tmp_path) / "compact.json"
    script = hook_script(tmp_path, "compact.sh", f"cat > {seen}\necho 'archive failed' >&2\nexit 2\n")
    notices: list[ev.Event] = []
    runner = HookRunner(hooks("PreCompact", script, matcher="manual"), cwd=tmp_path, session_id="s1",
                        emit=notices.append, permission_mode=lambda: "plan")

    skipped = await runner.run("PreCompact", {"trigger": "auto", "custom_instructions": ""})
    outcome = await runner.run("PreCompact", {"trigger": "manual", "custom_instructions": "keep the API notes"})

    assert skipped.runs == []
    assert not outcome.blocked and [r.exit_code for r in outcome.runs] == [2]
    payload = json.loads(seen.read_text())
    assert payload == {
        "session_id": "s1",
        "transcript_path": "",
        "cwd": str(tmp_path),
        "permission_mode": "plan",
        "hook_event_name": "PreCompact",
        "trigger": "manual",
        "custom_instructions": "keep the API notes",
    }
    assert [n.message for n in notices] == ["PreCompact:manual hook: archive failed"]


async def test_hooks_see_the_settings_env(api, tmp_path):
    out = hook_dir(tmp_path) / "env.txt"
    script = hook_script(tmp_path, "env.sh", f'echo "$TEAM_CHANNEL" > {out}\n')
    api.push(reply("ok"))
    session = make_session(
        api.url, tmp_path, hooks=hooks("UserPromptSubmit", script), env={"TEAM_CHANNEL": "#infra"}
    )

    await session.submit("hi")

    assert out.read_text().strip() == "#infra"


async def test_invalid_hook_settings_are_reported_when_the_session_starts(api, tmp_path):
    table = {
        "BeforeEverything": [],
        "Stop": [{"hooks": [{"type": "prompt", "prompt": "Is it done?"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true", "timeout": -1}]}],
    }
    session = session_with(api, tmp_path, table)
    rec = Recorder(session)

    session.start()

    assert hook_notices(rec) == [
        "hooks: unknown event 'BeforeEverything' (known: PreToolUse, PostToolUse, UserPromptSubmit, Stop, "
        "SubagentStop, PreCompact, SessionStart, Notification, Elicitation, PostToolUseFailure, PermissionRequest, "
        "SubagentStart, SessionEnd, Setup)",
        "hooks.Stop[0].hooks[0]: only \"command\" hooks are supported, not 'prompt'",
        "hooks.PreToolUse[0].hooks[0].timeout: expected a positive number of seconds; using 60",
    ]
    assert [c.timeout for c in session.hooks.commands_for("PreToolUse", {"tool_name": "Bash"})] == [60.0]
    await session.aclose()


def _texts(message: dict[str, Any]) -> list[str]:
    return [b.get("text", "") for b in message["content"] if isinstance(b, dict)]


# ---------------------------------------------------------------- PreCompact in a real compaction


async def test_precompact_hook_runs_before_a_manual_compaction_with_its_instructions(api, tmp_path):
    record = hook_dir(tmp_path) / "precompact.json"
    script = hook_script(tmp_path, "precompact.sh", f"cat > {record}\n")
    api.push(reply("first answer"), reply("<summary>We said hello.</summary>"))
    session = session_with(api, tmp_path, hooks("PreCompact", script))
    await session.submit("hello")

    compacted = await session.compact("keep the greetings")

    assert compacted is not None
    payload = json.loads(record.read_text())
    assert payload["hook_event_name"] == "PreCompact"
    assert payload["trigger"] == "manual" and payload["custom_instructions"] == "keep the greetings"
