"""PreToolUse and PostToolUse hooks: real executable scripts, Claude Code's protocol, through the loopback API."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from agent_tui.engine import events as ev
from agent_tui.engine.hooks import matcher_matches
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.messages import check_history
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from tests.engine_helpers import Recorder, auto_answer, make_session, tool_results
from tests.loopback import reply, tool_use


def hook_script(tmp_path: Path, name: str, body: str) -> str:
    """An executable shell script in `tmp_path/hooks`, where hooks also leave what they record."""
    folder = hook_dir(tmp_path)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def hook_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "hooks"
    folder.mkdir(exist_ok=True)
    return folder


def hooks(event: str, *commands: str, matcher: str = "*", timeout: float | None = None) -> dict[str, Any]:
    entries = [{"type": "command", "command": c} | ({"timeout": timeout} if timeout else {}) for c in commands]
    return {event: [{"matcher": matcher, "hooks": entries}]}


def session_with(api, tmp_path, table: dict[str, Any], **options: Any):
    return make_session(api.url, tmp_path, hooks=table, **options)


def touch(tmp_path: Path, name: str, id: str = "t_bash") -> Any:
    return tool_use("Bash", {"command": f"touch {name}"}, id=id)


def bypass() -> PermissionPolicy:
    return PermissionPolicy(mode="bypassPermissions")


# ---------------------------------------------------------------- PreToolUse: input and exit codes


async def test_pre_tool_use_gets_the_documented_json_on_stdin_and_the_project_dir(api, tmp_path):
    seen = hook_dir(tmp_path) / "stdin.json"
    env = hook_dir(tmp_path) / "env.txt"
    script = hook_script(tmp_path, "log.sh", f'cat > {seen}\necho "$CLAUDE_PROJECT_DIR" > {env}\n')
    api.push(reply(tool_use("Bash", {"command": "echo hi"}, id="t_echo")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=bypass())

    await session.submit("go")

    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "PreToolUse"
    assert payload["session_id"] == session.session_id
    assert payload["cwd"] == str(tmp_path.resolve())
    assert payload["permission_mode"] == "bypassPermissions"
    assert isinstance(payload["transcript_path"], str)
    assert payload["tool_name"] == "Bash"
    assert payload["tool_input"] == {"command": "echo hi"}
    assert payload["tool_use_id"] == "t_echo"
    assert env.read_text().strip() == str(tmp_path.resolve())


async def test_pre_tool_use_exit_0_lets_the_call_run(api, tmp_path):
    script = hook_script(tmp_path, "ok.sh", "exit 0\n")
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=bypass())

    await session.submit("go")

    assert (tmp_path / "made.txt").exists()
    assert not tool_results(api.requests[1].body)[0].get("is_error")


async def test_pre_tool_use_exit_2_denies_the_call_with_stderr_as_the_reason(api, tmp_path):
    script = hook_script(tmp_path, "block.sh", "echo 'touch is not allowed here' >&2\nexit 2\n")
    api.push(reply(touch(tmp_path, "blocked.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script, matcher="Bash"), policy=bypass())
    rec = Recorder(session)

    terminal = await session.submit("go")

    assert terminal.reason is TerminalReason.COMPLETED
    assert not (tmp_path / "blocked.txt").exists()
    [result] = tool_results(api.requests[1].body)
    assert result["is_error"] is True
    assert result["content"] == "PreToolUse:Bash hook denied this tool call: touch is not allowed here"
    assert [e.status for e in rec.of(ev.ToolFinished)] == ["rejected"]
    assert [d.tool_use_id for d in session.permission_denials] == ["t_bash"]


async def test_pre_tool_use_other_exit_codes_are_shown_to_the_user_and_do_not_block(api, tmp_path):
    script = hook_script(tmp_path, "broken.sh", "echo 'linter crashed' >&2\nexit 1\n")
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=bypass())
    rec = Recorder(session)

    await session.submit("go")

    assert (tmp_path / "made.txt").exists()
    [notice] = [n for n in rec.of(ev.Notice) if n.kind == "hook"]
    assert notice.message == f"PreToolUse:Bash hook `{script}` failed with exit code 1: linter crashed"


@pytest.mark.parametrize(
    ("matcher", "fires"),
    [
        ("Bash", True), ("Write|Edit", False), ("Edit|Bash", True), ("^Ba", True), ("Read", False),
        ("", True), ("*", True),
    ],
)
async def test_matchers_select_tools_like_claude_code(api, tmp_path, matcher, fires):
    script = hook_script(tmp_path, "block.sh", "echo no >&2\nexit 2\n")
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script, matcher=matcher), policy=bypass())

    await session.submit("go")

    assert (tmp_path / "made.txt").exists() is not fires


def test_matcher_rules():
    assert matcher_matches("mcp__.*__write", "mcp__files__write")
    assert not matcher_matches("Bash", "BashOutput")
    assert matcher_matches("Notebook.*", "NotebookEdit")
    assert not matcher_matches("[unclosed", "Bash")


async def test_pre_tool_use_timeout_kills_the_hooks_process_group_and_does_not_block(api, tmp_path):
    pid_file = hook_dir(tmp_path) / "hook.pid"
    child_file = hook_dir(tmp_path) / "child.pid"
    script = hook_script(tmp_path, "slow.sh", f"sleep 30 &\necho $! > {child_file}\necho $$ > {pid_file}\nwait\n")
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script, timeout=0.5), policy=bypass())
    rec = Recorder(session)
    started = time.monotonic()

    await session.submit("go")

    assert time.monotonic() - started < 5
    assert (tmp_path / "made.txt").exists()
    assert not _alive(int(pid_file.read_text())) and not _alive(int(child_file.read_text()))
    [notice] = [n for n in rec.of(ev.Notice) if n.kind == "hook"]
    assert notice.message == f"PreToolUse:Bash hook `{script}` timed out after 0.5s and was killed"


async def test_matching_hooks_run_in_parallel(api, tmp_path):
    # Each hook waits for the other to have started: run one after the other, the first
    # would wait until its timeout killed it, and its `.done` file would be missing.
    folder = hook_dir(tmp_path)

    def rendezvous(me: str, other: str) -> str:
        return hook_script(tmp_path, f"{me}.sh", f"touch {folder}/{me}.started\n"
                           f"while [ ! -e {folder}/{other}.started ]; do sleep 0.01; done\n"
                           f"touch {folder}/{me}.done\n")

    api.push(reply(tool_use("Bash", {"command": "echo hi"}, id="t1")), reply("ok"))
    table = hooks("PreToolUse", rendezvous("one", "two"), rendezvous("two", "one"), timeout=60)
    session = session_with(api, tmp_path, table, policy=bypass())

    await session.submit("go")

    assert (folder / "one.done").exists() and (folder / "two.done").exists()


async def test_abort_while_a_hook_runs_kills_it_and_keeps_history_valid(api, tmp_path):
    pid_file = hook_dir(tmp_path) / "hook.pid"
    script = hook_script(tmp_path, "slow.sh", f"echo $$ > {pid_file}\nsleep 30\n")
    api.push(reply(touch(tmp_path, "made.txt")))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=bypass())

    async def abort_when_running() -> None:
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.02)
        session.abort()

    aborter = asyncio.create_task(abort_when_running())
    terminal = await session.submit("go")
    await aborter

    assert terminal.reason is TerminalReason.ABORTED_TOOLS
    assert check_history(session.history) == []
    assert not (tmp_path / "made.txt").exists()
    # The hook is killed as the turn unwinds; reaping it may take the loop a moment more.
    pid = int(pid_file.read_text())
    for _ in range(3000):
        if not _alive(pid):
            break
        await asyncio.sleep(0.01)
    assert not _alive(pid)


# ---------------------------------------------------------------- PreToolUse: JSON output


def json_hook(tmp_path: Path, output: dict[str, Any], name: str = "json.sh") -> str:
    return hook_script(tmp_path, name, f"cat <<'EOF'\n{json.dumps(output)}\nEOF\n")


def pre_decision(decision: str, reason: str = "", **extra: Any) -> dict[str, Any]:
    specific = {"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": reason}
    return {"hookSpecificOutput": specific | extra}


async def test_permission_decision_deny_refuses_with_the_reason(api, tmp_path):
    script = json_hook(tmp_path, pre_decision("deny", "Production files are off limits"))
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=bypass())

    await session.submit("go")

    [result] = tool_results(api.requests[1].body)
    assert result["is_error"] is True
    assert result["content"] == "PreToolUse:Bash hook denied this tool call: Production files are off limits"
    assert not (tmp_path / "made.txt").exists()


async def test_permission_decision_allow_skips_the_prompt(api, tmp_path):
    script = json_hook(tmp_path, pre_decision("allow", "touch is harmless"))
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=PermissionPolicy(mode="default"))
    rec = Recorder(session)

    await session.submit("go")

    assert rec.of(ev.PermissionRequested) == []
    assert (tmp_path / "made.txt").exists()
    assert any(n.message == "PreToolUse:Bash hook allowed the call: touch is harmless" for n in rec.of(ev.Notice))


async def test_permission_decision_allow_answers_for_print_mode(api, tmp_path):
    script = json_hook(tmp_path, pre_decision("allow"))
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    policy = PermissionPolicy(mode="default", interactive=False)
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=policy)

    await session.submit("go")

    assert (tmp_path / "made.txt").exists() and session.permission_denials == []


async def test_permission_decision_allow_never_beats_a_deny_rule(api, tmp_path):
    script = json_hook(tmp_path, pre_decision("allow"))
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    policy = PermissionPolicy(mode="default", deny=["Bash(touch:*)"])
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=policy)

    await session.submit("go")

    assert not (tmp_path / "made.txt").exists()
    assert tool_results(api.requests[1].body)[0]["is_error"] is True


async def test_permission_decision_ask_prompts_even_for_a_read_only_tool(api, tmp_path):
    (tmp_path / "secret.txt").write_text("s3cret\n")
    script = json_hook(tmp_path, pre_decision("ask", "This file may hold credentials"))
    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "secret.txt")}, id="t_read")))
    session = session_with(api, tmp_path, hooks("PreToolUse", script, matcher="Read"))
    rec = Recorder(session)
    auto_answer(session, PermissionAnswer("deny"))

    await session.submit("read it")

    [request] = rec.of(ev.PermissionRequested)
    assert request.tool_use_id == "t_read" and request.message == "This file may hold credentials"
    [finished] = rec.of(ev.ToolFinished)
    assert finished.is_error and finished.status == "rejected"


async def test_legacy_decision_block_denies_with_the_reason(api, tmp_path):
    script = json_hook(tmp_path, {"decision": "block", "reason": "Use the Makefile instead"})
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=bypass())

    await session.submit("go")

    assert not (tmp_path / "made.txt").exists()
    assert tool_results(api.requests[1].body)[0]["content"].endswith("Use the Makefile instead")


async def test_legacy_decision_approve_skips_the_prompt(api, tmp_path):
    script = json_hook(tmp_path, {"decision": "approve", "reason": "fine"})
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script))
    rec = Recorder(session)

    await session.submit("go")

    assert rec.of(ev.PermissionRequested) == [] and (tmp_path / "made.txt").exists()


async def test_the_strictest_decision_of_parallel_hooks_wins(api, tmp_path):
    allow = json_hook(tmp_path, pre_decision("allow"), "allow.sh")
    deny = json_hook(tmp_path, pre_decision("deny", "second opinion says no"), "deny.sh")
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", allow, deny), policy=bypass())

    await session.submit("go")

    assert not (tmp_path / "made.txt").exists()
    assert tool_results(api.requests[1].body)[0]["content"].endswith("second opinion says no")


async def test_updated_input_is_what_the_tool_runs_while_history_keeps_the_models_input(api, tmp_path):
    script = json_hook(tmp_path, pre_decision("allow", updatedInput={"command": "touch rewritten.txt"}))
    api.push(reply(touch(tmp_path, "original.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script))

    await session.submit("go")

    assert (tmp_path / "rewritten.txt").exists() and not (tmp_path / "original.txt").exists()
    assert api.requests[1].body["messages"][1]["content"][0]["input"] == {"command": "touch original.txt"}


async def test_updated_input_that_breaks_the_schema_is_an_input_error(api, tmp_path):
    script = json_hook(tmp_path, pre_decision("allow", updatedInput={"cmd": "touch x"}))
    api.push(reply(touch(tmp_path, "original.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=bypass())

    await session.submit("go")

    [result] = tool_results(api.requests[1].body)
    assert result["is_error"] is True and result["content"].startswith("InputValidationError")
    assert "PreToolUse:Bash hook rewrote" in result["content"]


async def test_pre_tool_use_additional_context_reaches_the_model_with_the_result(api, tmp_path):
    script = json_hook(tmp_path, {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                                         "additionalContext": "The test DB is read-only."}})
    api.push(reply(tool_use("Bash", {"command": "echo hi"})), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=bypass())

    await session.submit("go")

    content = tool_results(api.requests[1].body)[0]["content"]
    assert content.startswith("hi")
    assert "PreToolUse:Bash hook additional context: The test DB is read-only." in content


async def test_pre_tool_use_continue_false_stops_the_query(api, tmp_path):
    script = json_hook(tmp_path, {"continue": False, "stopReason": "Deploy freeze in effect"})
    api.push(reply(touch(tmp_path, "made.txt")))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=bypass())
    rec = Recorder(session)

    terminal = await session.submit("go")

    assert terminal.reason is TerminalReason.HOOK_STOPPED
    assert terminal.error == "Deploy freeze in effect"
    assert not (tmp_path / "made.txt").exists()
    assert len(api.requests) == 1
    assert check_history(session.history) == []
    assert rec.of(ev.QueryFinished)[0].terminal_reason == "hook_stopped"


async def test_stdout_is_shown_to_the_user_unless_suppressed(api, tmp_path):
    plain = hook_script(tmp_path, "plain.sh", "echo 'checked 3 files'\n")
    quiet = json_hook(tmp_path, {"suppressOutput": True}, "quiet.sh")
    api.push(reply(tool_use("Bash", {"command": "echo hi"})), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", plain, quiet), policy=bypass())
    rec = Recorder(session)

    await session.submit("go")

    messages = [n.message for n in rec.of(ev.Notice) if n.kind == "hook"]
    assert messages == ["PreToolUse:Bash hook succeeded: checked 3 files"]


async def test_system_message_is_shown_to_the_user(api, tmp_path):
    script = json_hook(tmp_path, {"systemMessage": "Remember the style guide", "suppressOutput": True})
    api.push(reply(tool_use("Bash", {"command": "echo hi"})), reply("ok"))
    session = session_with(api, tmp_path, hooks("PreToolUse", script), policy=bypass())
    rec = Recorder(session)

    await session.submit("go")

    assert [n.message for n in rec.of(ev.Notice) if n.kind == "hook"] == [
        "PreToolUse:Bash hook: Remember the style guide"
    ]


# ---------------------------------------------------------------- PostToolUse


async def test_post_tool_use_gets_the_tool_response(api, tmp_path):
    seen = hook_dir(tmp_path) / "stdin.json"
    script = hook_script(tmp_path, "log.sh", f"cat > {seen}\n")
    api.push(reply(tool_use("Bash", {"command": "echo hello"}, id="t_echo")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PostToolUse", script, matcher="Bash"), policy=bypass())

    await session.submit("go")

    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "PostToolUse"
    assert payload["tool_name"] == "Bash" and payload["tool_use_id"] == "t_echo"
    assert payload["tool_input"] == {"command": "echo hello"}
    # Claude Code's Bash keys (stderr is read with stdout, in order).
    assert payload["tool_response"] == {"stdout": "hello\n", "stderr": "", "interrupted": False, "isImage": False}


async def test_post_tool_use_exit_2_feeds_stderr_to_the_model_after_the_tool_ran(api, tmp_path):
    script = hook_script(tmp_path, "lint.sh", "echo 'made.txt: missing licence header' >&2\nexit 2\n")
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PostToolUse", script), policy=bypass())

    await session.submit("go")

    assert (tmp_path / "made.txt").exists()
    [result] = tool_results(api.requests[1].body)
    assert not result.get("is_error")
    assert result["content"].endswith("PostToolUse:Bash hook feedback:\nmade.txt: missing licence header")


async def test_post_tool_use_decision_block_feeds_the_reason_to_the_model(api, tmp_path):
    script = json_hook(tmp_path, {"decision": "block", "reason": "Run the formatter on made.txt"})
    api.push(reply(touch(tmp_path, "made.txt")), reply("ok"))
    session = session_with(api, tmp_path, hooks("PostToolUse", script), policy=bypass())

    await session.submit("go")

    content = tool_results(api.requests[1].body)[0]["content"]
    assert content.endswith("PostToolUse:Bash hook feedback:\nRun the formatter on made.txt")


async def test_post_tool_use_additional_context_reaches_the_model(api, tmp_path):
    script = json_hook(tmp_path, {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                                         "additionalContext": "3 tests now fail"}})
    api.push(reply(tool_use("Bash", {"command": "echo hi"})), reply("ok"))
    session = session_with(api, tmp_path, hooks("PostToolUse", script), policy=bypass())

    await session.submit("go")

    content = tool_results(api.requests[1].body)[0]["content"]
    assert "PostToolUse:Bash hook additional context: 3 tests now fail" in content


async def test_post_tool_use_continue_false_ends_the_query_after_the_tool(api, tmp_path):
    script = json_hook(tmp_path, {"continue": False, "stopReason": "Build broke; stopping"})
    api.push(reply(touch(tmp_path, "made.txt")))
    session = session_with(api, tmp_path, hooks("PostToolUse", script), policy=bypass())

    terminal = await session.submit("go")

    assert terminal.reason is TerminalReason.HOOK_STOPPED and terminal.error == "Build broke; stopping"
    assert (tmp_path / "made.txt").exists()
    assert check_history(session.history) == []
    assert session.history[-1]["content"][0]["type"] == "tool_result"


async def test_post_tool_use_does_not_run_for_a_failed_tool(api, tmp_path):
    marker = hook_dir(tmp_path) / "ran"
    script = hook_script(tmp_path, "mark.sh", f"touch {marker}\n")
    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "missing.txt")})), reply("ok"))
    session = session_with(api, tmp_path, hooks("PostToolUse", script))

    await session.submit("go")

    assert not marker.exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False
