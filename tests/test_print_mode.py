"""Print mode (`agent-tui -p`) through the installed console script."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.loopback import hang, reply, text, tool_use

AGENT = shutil.which("agent-tui") or str(Path(sys.executable).parent / "agent-tui")


def env_for(url: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["AGENT_TUI_DEMO_SPEED"] = "0"
    if url:
        env["ANTHROPIC_BASE_URL"] = url
        env["ANTHROPIC_API_KEY"] = "test-key"
    env.update(extra)
    return env


def run(args: list[str], cwd: Path, env: dict[str, str], input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([AGENT, *args], cwd=cwd, env=env, capture_output=True, text=True, input=input,
                          timeout=60)


def test_demo_model_lists_files_through_a_real_glob_call(tmp_path):
    (tmp_path / "alpha.py").write_text("print('a')\n")
    (tmp_path / "beta.md").write_text("# b\n")

    out = run(["-p", "list the files here", "--output-format", "stream-events"], tmp_path, env_for())

    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert events[0]["type"] == "session_started" and events[0]["offline"] is True
    glob_calls = [e for e in events if e["type"] == "tool_queued" and e["name"] == "Glob"]
    finished = [e for e in events if e["type"] == "tool_finished" and e["name"] == "Glob"]
    assert glob_calls and finished and not finished[0]["is_error"]
    assert "alpha.py" in finished[0]["preview"] and "beta.md" in finished[0]["preview"]
    result = events[-1]
    assert result["type"] == "result" and result["terminal_reason"] == "completed"
    assert "alpha.py" in result["result"]


def test_text_output_prints_the_answer(api, tmp_path):
    api.push(reply("The answer is 42."))

    out = run(["-p", "what is the answer?"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert out.stdout == "The answer is 42.\n"


def test_prompt_can_come_from_stdin(api, tmp_path):
    api.push(reply("got it"))

    out = run(["-p"], tmp_path, env_for(api.url), input="summarise this\n")

    assert out.stdout == "got it\n"
    assert "summarise this" in json.dumps(api.requests[0].body["messages"])


def test_json_result_object_follows_claude_code(api, tmp_path):
    (tmp_path / "f.txt").write_text("data\n")
    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "f.txt")})), reply("Read it."))

    out = run(["-p", "read f.txt", "--output-format", "json", "--model", "claude-test-model"], tmp_path,
              env_for(api.url))

    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert {"type", "subtype", "is_error", "result", "num_turns", "duration_ms", "usage", "session_id",
            "terminal_reason", "permission_denials"} <= set(result)
    assert result["subtype"] == "success" and result["is_error"] is False
    assert result["result"] == "Read it." and result["num_turns"] == 2
    assert result["usage"]["output_tokens"] > 0
    assert api.requests[0].body["model"] == "claude-test-model"


def test_undecided_permissions_are_denied_and_reported(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "touch created.txt"}, id="t1")), reply("could not"))

    out = run(["-p", "create a file", "--output-format", "json"], tmp_path, env_for(api.url))

    result = json.loads(out.stdout)
    assert result["permission_denials"] == [
        {"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "touch created.txt"}}]
    assert not (tmp_path / "created.txt").exists()


def test_allowed_tools_flag_permits_a_matching_command(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "touch created.txt"})), reply("done"))

    out = run(["-p", "create a file", "--allowedTools", "Bash(touch:*)"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert (tmp_path / "created.txt").exists()


def test_disallowed_tools_flag_denies_even_read_only_tools(api, tmp_path):
    api.push(reply(tool_use("Glob", {"pattern": "*"})), reply("ok"))

    out = run(["-p", "list", "--output-format", "json", "--disallowedTools", "Glob"], tmp_path, env_for(api.url))

    assert json.loads(out.stdout)["permission_denials"][0]["tool_name"] == "Glob"


def test_bypass_permissions_mode_runs_commands(api, tmp_path):
    api.push(reply(tool_use("Bash", {"command": "touch created.txt"})), reply("done"))

    run(["-p", "create", "--permission-mode", "bypassPermissions"], tmp_path, env_for(api.url))

    assert (tmp_path / "created.txt").exists()


def test_model_error_exits_1_with_is_error(api, tmp_path):
    from tests.loopback import status

    api.push(status(401, "authentication_error", "invalid x-api-key"))

    out = run(["-p", "hi", "--output-format", "json"], tmp_path, env_for(api.url))

    assert out.returncode == 1
    result = json.loads(out.stdout)
    assert result["is_error"] is True and result["terminal_reason"] == "model_error"
    assert "ANTHROPIC_API_KEY" in result["result"]


def test_max_turns_flag_stops_the_loop(api, tmp_path):
    api.push(*[reply(tool_use("Bash", {"command": "echo hi"})) for _ in range(3)])

    out = run(["-p", "loop", "--max-turns", "1", "--output-format", "json"], tmp_path, env_for(api.url))

    result = json.loads(out.stdout)
    assert out.returncode == 1
    assert result["subtype"] == "error_max_turns" and result["terminal_reason"] == "max_turns"


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_sigint_aborts_cleanly_with_exit_130(api, tmp_path, fmt):
    api.push(hang(after=5, of=reply(text("A partial answer that never finishes"))))
    proc = subprocess.Popen([AGENT, "-p", "talk", "--output-format", fmt], cwd=tmp_path, env=env_for(api.url),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert api.wait_requests(1, timeout=60)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=10)

    assert proc.returncode == 130, stderr
    if fmt == "json":
        result = json.loads(stdout)
        assert result["terminal_reason"] == "aborted_streaming" and result["is_error"] is True
    else:
        assert "interrupted" in stderr
    assert api.wait_disconnect(1, timeout=30)


# ---------------------------------------------------------------- a hook's deliberate stop


@pytest.mark.parametrize("event", ["Stop", "PreToolUse"])
async def test_a_hook_that_stops_the_query_is_a_success_exit_0(api, tmp_path, event):
    import io

    from agent_tui.printer import run_print
    from tests.engine_helpers import make_session

    hook = tmp_path / "stop.sh"
    hook.write_text('#!/bin/sh\necho \'{"continue": false, "stopReason": "Enough for today"}\'\n')
    hook.chmod(0o755)
    api.push(reply(tool_use("Bash", {"command": "echo hi"})) if event == "PreToolUse" else reply("Done."))
    table = {event: [{"hooks": [{"type": "command", "command": str(hook)}]}]}
    session = make_session(api.url, tmp_path, hooks=table)
    out = io.StringIO()

    code = await run_print(session, "go", "json", out=out)

    result = json.loads(out.getvalue())
    expected = "stop_hook_prevented" if event == "Stop" else "hook_stopped"
    assert result["terminal_reason"] == expected
    assert (code, result["is_error"], result["subtype"]) == (0, False, "success")
    assert len(api.requests) == 1
