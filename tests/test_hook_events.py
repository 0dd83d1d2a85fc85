"""SessionEnd, PostToolUseFailure, SubagentStart and PermissionRequest hooks, Stop's
`last_assistant_message`, and `transcript_path` in Claude Code's shape: real hook scripts that
write their stdin to files, through the loopback API (docs/architecture.md §4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_tui.engine.permissions.policy import PermissionPolicy
from tests.engine_helpers import make_session, tool_results
from tests.loopback import reply, tool_use
from tests.test_hooks_session import hook_dir, hook_script, json_hook
from tests.test_print_mode import env_for, run


def recorder(tmp_path: Path, name: str) -> tuple[str, Path]:
    """A hook script that appends its stdin (one JSON a line) to `name`.jsonl, and that file."""
    log = hook_dir(tmp_path) / f"{name}.jsonl"
    return hook_script(tmp_path, f"{name}.sh", f"cat >> {log}\necho >> {log}\n"), log


def inputs(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def table(*entries: tuple[str, str, str | None]) -> dict[str, Any]:
    """{event: [{matcher, hooks: [command]}]} from (event, command, matcher) entries."""
    hooks: dict[str, Any] = {}
    for event, command, matcher in entries:
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
        if matcher is not None:
            group["matcher"] = matcher
        hooks.setdefault(event, []).append(group)
    return hooks


def session_for(api, tmp_path: Path, hooks: dict[str, Any], **options: Any):
    return make_session(api.url, tmp_path, hooks=hooks, **options)


def common_fields_hold(payload: dict[str, Any], event: str, session) -> None:
    assert payload["hook_event_name"] == event
    assert payload["session_id"] == session.session_id and payload["cwd"] == str(session.cwd)
    assert payload["permission_mode"] == session.policy.mode
    assert Path(payload["transcript_path"]).is_file()


# ---------------------------------------------------------------- PostToolUseFailure


async def test_post_tool_use_failure_gets_the_error_and_its_context_reaches_the_model(api, tmp_path):
    script, log = recorder(tmp_path, "failure")
    context = json_hook(tmp_path, {"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
                                                          "additionalContext": "Run the tests with -x next."}})
    api.push(reply(tool_use("Bash", {"command": "echo broken; exit 3"}, id="t_fail")), reply("It failed."))
    session = session_for(api, tmp_path, table(("PostToolUseFailure", script, "Bash"),
                                               ("PostToolUseFailure", context, "Bash"),
                                               ("PostToolUse", script, None)),
                          policy=PermissionPolicy(mode="bypassPermissions"))

    await session.submit("run it")

    [payload] = inputs(log)  # PostToolUse did not run for the failed call
    common_fields_hold(payload, "PostToolUseFailure", session)
    assert payload["tool_name"] == "Bash" and payload["tool_use_id"] == "t_fail"
    assert payload["tool_input"] == {"command": "echo broken; exit 3"}
    assert payload["error"] == "broken\n\nExit code 3" and payload["is_interrupt"] is False
    [result] = tool_results(api.requests[1].body)
    assert result["is_error"] and "Run the tests with -x next." in json.dumps(result["content"])
    await session.aclose()


# ---------------------------------------------------------------- PermissionRequest


async def test_permission_request_hooks_answer_where_nobody_can_be_asked(api, tmp_path):
    script, log = recorder(tmp_path, "request")
    allow = json_hook(tmp_path, {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                                        "decision": {"behavior": "allow"}}}, "allow.sh")
    api.push(reply(tool_use("Bash", {"command": "touch made.txt"}, id="t_touch")), reply("Made."))
    session = session_for(api, tmp_path, table(("PermissionRequest", script, "Bash"),
                                               ("PermissionRequest", allow, "Bash")),
                          policy=PermissionPolicy(mode="default", interactive=False))

    await session.submit("make it")

    assert (tmp_path / "made.txt").exists() and session.permission_denials == []
    [payload] = inputs(log)
    common_fields_hold(payload, "PermissionRequest", session)
    assert payload["tool_name"] == "Bash" and payload["tool_input"] == {"command": "touch made.txt"}
    assert "tool_use_id" not in payload
    assert payload["permission_suggestions"] == [{"type": "addRules", "rules": [{"toolName": "Bash",
                                                  "ruleContent": "touch made.txt"}], "behavior": "allow",
                                                  "destination": "localSettings"}]
    await session.aclose()


async def test_a_permission_request_hook_denies_with_its_message(api, tmp_path):
    deny = json_hook(tmp_path, {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
        "behavior": "deny", "message": "No new files on Fridays."}}})
    api.push(reply(tool_use("Write", {"file_path": str(tmp_path / "new.txt"), "content": "x"})), reply("ok"))
    session = session_for(api, tmp_path, table(("PermissionRequest", deny, "Write|Edit")))

    await session.submit("write it")

    assert not (tmp_path / "new.txt").exists()
    [result] = tool_results(api.requests[1].body)
    assert result["is_error"] and "No new files on Fridays." in json.dumps(result["content"])
    assert [d.tool_name for d in session.permission_denials] == ["Write"]
    await session.aclose()


# ---------------------------------------------------------------- SubagentStart / SubagentStop


async def test_subagent_start_and_stop_hooks_name_the_agent_and_its_last_message(api, tmp_path):
    start, start_log = recorder(tmp_path, "start")
    stop, stop_log = recorder(tmp_path, "stop")
    context = json_hook(tmp_path, {"hookSpecificOutput": {"hookEventName": "SubagentStart",
                                                          "additionalContext": "Stay inside src/."}})
    api.push(reply(tool_use("Agent", {"description": "look", "prompt": "Find the timeout.",
                                      "subagent_type": "general-purpose"}, id="t_agent")),
             reply("It is in src/app.py."), reply("Found it."))
    session = session_for(api, tmp_path, table(("SubagentStart", start, "general-purpose"),
                                               ("SubagentStart", context, None), ("SubagentStop", stop, "general.*"),
                                               ("SubagentStart", start, "Explore")))

    await session.submit("where is the timeout?")

    [started] = inputs(start_log)
    common_fields_hold(started, "SubagentStart", session)
    assert started["agent_id"] == "t_agent" and started["agent_type"] == "general-purpose"
    first = json.dumps(api.requests[1].body["messages"][0]["content"])
    assert "Find the timeout." in first and "Stay inside src/." in first
    [stopped] = inputs(stop_log)
    assert stopped["hook_event_name"] == "SubagentStop" and stopped["agent_type"] == "general-purpose"
    assert stopped["agent_id"] == "t_agent" and stopped["stop_hook_active"] is False
    assert stopped["last_assistant_message"] == "It is in src/app.py."
    await session.aclose()


# ---------------------------------------------------------------- Stop and the transcript


async def test_stop_gets_the_last_message_and_a_transcript_in_claude_codes_shape(api, tmp_path):
    copy = hook_dir(tmp_path) / "transcript-at-stop.jsonl"
    stop = hook_script(tmp_path, "stop.sh",
                       f"tee -a {hook_dir(tmp_path)}/stop.jsonl | python3 -c "
                       f"\"import json,sys,shutil; shutil.copy(json.load(sys.stdin)['transcript_path'], '{copy}')\"\n")
    post = hook_script(tmp_path, "post.sh", f"python3 -c \"import json,sys,shutil; "
                       f"shutil.copy(json.load(sys.stdin)['transcript_path'], '{hook_dir(tmp_path)}/at-post.jsonl')\"\n")
    api.push(reply(tool_use("Bash", {"command": "echo hi"}, id="t_hi")), reply("Said hi. All done."))
    session = session_for(api, tmp_path, table(("Stop", stop, None), ("PostToolUse", post, None)),
                          policy=PermissionPolicy(mode="bypassPermissions"), persist=True)

    await session.submit("say hi")

    [payload] = inputs(hook_dir(tmp_path) / "stop.jsonl")
    common_fields_hold(payload, "Stop", session)
    assert payload["last_assistant_message"] == "Said hi. All done." and payload["stop_hook_active"] is False
    lines = [json.loads(line) for line in copy.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["user", "assistant", "user", "assistant"]
    assert [line["message"]["role"] for line in lines] == ["user", "assistant", "user", "assistant"]
    assert lines[0]["message"]["content"][0]["text"] == "say hi"
    assert lines[1]["message"]["content"][-1]["name"] == "Bash"
    assert lines[2]["message"]["content"][0]["tool_use_id"] == "t_hi"
    assert lines[3]["message"]["content"][-1]["text"] == "Said hi. All done."
    assert all(line["sessionId"] == session.session_id for line in lines)
    assert [line["parentUuid"] for line in lines[1:]] == [line["uuid"] for line in lines[:-1]]
    # Kept up to date: at PostToolUse the assistant's tool call was already there, its result not yet.
    at_post = [json.loads(line)["type"] for line in (hook_dir(tmp_path) / "at-post.jsonl").read_text().splitlines()]
    assert at_post == ["user", "assistant"]
    await session.aclose()


# ---------------------------------------------------------------- SessionEnd


async def test_session_end_runs_at_the_end_and_on_clear_with_its_reason(api, tmp_path):
    script, log = recorder(tmp_path, "end")
    api.push(reply("Hello."))
    session = session_for(api, tmp_path, table(("SessionEnd", script, "clear|other")), persist=True)
    await session.submit("hi")
    first_id = session.session_id

    session.clear()
    await session.aclose()

    cleared, ended = inputs(log)
    assert cleared["hook_event_name"] == "SessionEnd" and cleared["reason"] == "clear"
    assert cleared["session_id"] == first_id
    transcript = [json.loads(line) for line in Path(cleared["transcript_path"]).read_text().splitlines()]
    assert [line["type"] for line in transcript] == ["user", "assistant"]
    assert ended["reason"] == "other" and ended["session_id"] == session.session_id != first_id


def test_a_session_end_hook_runs_when_print_mode_ends(api, tmp_path):
    script, log = recorder(tmp_path, "end")
    (tmp_path / ".agent-tui").mkdir()
    (tmp_path / ".agent-tui" / "settings.json").write_text(json.dumps({"hooks": table(("SessionEnd", script, None))}))
    api.push(reply("Hello."))

    out = run(["-p", "hi"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    [payload] = inputs(log)
    assert payload["reason"] == "other" and payload["hook_event_name"] == "SessionEnd"
    transcript = [json.loads(line) for line in Path(payload["transcript_path"]).read_text().splitlines()]
    assert transcript[-1]["type"] == "assistant" and transcript[-1]["message"]["content"][-1]["text"] == "Hello."


# ---------------------------------------------------------------- events agent-tui does not run


def test_a_configured_event_agent_tui_does_not_run_is_named_on_stderr_in_print_mode(api, tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
        "PostCompact": [{"hooks": [{"type": "command", "command": "true"}]}],
        "TeamMateIdle": [{"hooks": [{"type": "command", "command": "true"}]}],
    }}))
    api.push(reply("Hello."))

    out = run(["-p", "hi"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert "PostCompact hooks are not supported by agent-tui; they will not run" in out.stderr
    assert "unknown event 'TeamMateIdle'" in out.stderr
    assert out.stdout.strip() == "Hello."


# ---------------------------------------------------------------- Setup (--init, --init-only, --maintenance)


def project_with_hooks(tmp_path: Path, hooks: dict[str, Any]) -> Path:
    (tmp_path / ".agent-tui").mkdir(exist_ok=True)
    (tmp_path / ".agent-tui" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    return tmp_path


def test_init_runs_the_setup_hooks_before_the_prompt_and_their_context_reaches_the_model(api, tmp_path):
    script, log = recorder(tmp_path, "setup")
    context = json_hook(tmp_path, {"hookSpecificOutput": {"hookEventName": "Setup",
                                                          "additionalContext": "Dependencies installed."}})
    project_with_hooks(tmp_path, table(("Setup", script, "init"), ("Setup", context, "init"),
                                       ("Setup", script, "maintenance")))
    api.push(reply("Ready."))

    out = run(["-p", "--init", "are we set up?"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    [payload] = inputs(log)
    assert payload["hook_event_name"] == "Setup" and payload["trigger"] == "init"
    assert payload["cwd"] == str(tmp_path) and "session_id" in payload
    assert "Dependencies installed." in json.dumps(api.requests[0].body["messages"][0])


def test_maintenance_runs_the_setup_hooks_with_its_trigger(api, tmp_path):
    script, log = recorder(tmp_path, "setup")
    project_with_hooks(tmp_path, table(("Setup", script, "maintenance")))
    api.push(reply("Done."))

    out = run(["-p", "--maintenance", "tidy up"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert [p["trigger"] for p in inputs(log)] == ["maintenance"]


def test_init_only_runs_setup_and_session_start_hooks_and_sends_nothing(api, tmp_path):
    setup, setup_log = recorder(tmp_path, "setup")
    start, start_log = recorder(tmp_path, "start")
    project_with_hooks(tmp_path, table(("Setup", setup, None), ("SessionStart", start, "startup")))

    out = run(["--init-only"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert [p["trigger"] for p in inputs(setup_log)] == ["init"]
    assert [p["source"] for p in inputs(start_log)] == ["startup"]
    assert api.requests == [] and out.stdout == ""


async def test_post_tool_use_names_the_written_file_as_claude_codes_tools_do(api, tmp_path):
    script, log = recorder(tmp_path, "post")
    target = tmp_path / "notes.txt"
    api.push(reply(tool_use("Write", {"file_path": str(target), "content": "hi\n"})), reply("Written."))
    session = session_for(api, tmp_path, table(("PostToolUse", script, "Write|Edit")),
                          policy=PermissionPolicy(mode="acceptEdits"))

    await session.submit("write it")

    [payload] = inputs(log)
    response = payload["tool_response"]
    assert response["filePath"] == str(target) and response["type"] == "create" and response["success"] is True
    await session.aclose()


async def test_a_permission_request_hook_may_rewrite_the_input_where_nobody_can_be_asked(api, tmp_path):
    allow = json_hook(tmp_path, {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
        "behavior": "allow", "updatedInput": {"command": "touch rewritten.txt"}}}})
    api.push(reply(tool_use("Bash", {"command": "touch asked.txt"})), reply("Made."))
    session = session_for(api, tmp_path, table(("PermissionRequest", allow, "Bash")),
                          policy=PermissionPolicy(mode="default", interactive=False))

    await session.submit("make it")

    assert (tmp_path / "rewritten.txt").exists() and not (tmp_path / "asked.txt").exists()
    await session.aclose()


async def test_session_start_on_resume_reads_the_resumed_conversation(api, tmp_path):
    api.push(reply("First answer."), reply("Second answer."))
    first = make_session(api.url, tmp_path, persist=True)
    await first.submit("first question")
    await first.aclose()
    copy = hook_dir(tmp_path) / "at-start.jsonl"
    keep = hook_script(tmp_path, "keep.sh", "python3 -c \"import json,sys,shutil; "
                       f"shutil.copy(json.load(sys.stdin)['transcript_path'], '{copy}')\"\n")
    second = session_for(api, tmp_path, table(("SessionStart", keep, "resume")), persist=True)
    second.resume(first.session_id)

    await second.submit("second question")

    lines = [json.loads(line) for line in copy.read_text().splitlines()]
    assert [(line["type"], line["message"]["content"][-1]["text"]) for line in lines] == [
        ("user", "first question"), ("assistant", "First answer.")]
    await second.aclose()
