"""Settings through the installed `agent-tui`: the layers reach the request; bad files are reported."""

from __future__ import annotations

import json
from pathlib import Path

from tests.loopback import reply, tool_use
from tests.test_print_mode import env_for, run


def write(path: Path, data: dict | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_model_comes_from_the_highest_layer_that_sets_it(api, tmp_path):
    config = tmp_path / "config"
    project = tmp_path / "project"
    write(config / "settings.json", {"model": "from-user"})
    write(project / ".agent-tui" / "settings.json", {"model": "from-project"})
    write(project / ".agent-tui" / "settings.local.json", {"model": "from-local"})
    write(tmp_path / "extra.json", {"model": "from-settings-flag"})
    api.push(reply("a"), reply("b"), reply("c"), reply("d"))
    base = ["-p", "hi", "--settings", str(tmp_path / "extra.json")]
    env = env_for(api.url, AGENT_TUI_CONFIG_DIR=str(config))

    run([*base, "--model", "from-flag"], project, {**env, "ANTHROPIC_MODEL": "from-env"})
    run([*base, "--model", "from-flag"], project, env)
    run(base, project, env)
    run(["-p", "hi"], project, env)

    assert [r.body["model"] for r in api.requests] == ["from-env", "from-flag", "from-settings-flag", "from-local"]


def test_permission_rules_and_limits_from_settings_files_apply(api, tmp_path):
    write(tmp_path / ".agent-tui" / "settings.json", {"permissions": {"allow": ["Bash(touch:*)"]}})
    write(tmp_path / ".agent-tui" / "settings.local.json", {"maxTurns": 1, "maxOutputTokens": 1234})
    api.push(reply(tool_use("Bash", {"command": "touch made.txt"})), reply("never sent"))

    out = run(["-p", "make a file", "--output-format", "json"], tmp_path, env_for(api.url))

    assert (tmp_path / "made.txt").exists()
    assert json.loads(out.stdout)["terminal_reason"] == "max_turns"
    assert api.requests[0].body["max_tokens"] == 1234


def test_invalid_settings_file_is_reported_and_the_prompt_still_runs(api, tmp_path):
    write(tmp_path / ".agent-tui" / "settings.json", '{"model": "x",}')
    write(tmp_path / ".agent-tui" / "settings.local.json", {"maxTurns": "ten", "model": "local-model"})
    api.push(reply("still answered"))

    out = run(["-p", "hi"], tmp_path, env_for(api.url))

    assert out.returncode == 0
    assert out.stdout == "still answered\n"
    settings_path = str(tmp_path / ".agent-tui" / "settings.json")
    assert f"agent-tui: settings: {settings_path}: not valid JSON (line 1" in out.stderr
    assert "settings.local.json: key 'maxTurns' must be a positive integer" in out.stderr
    assert api.requests[0].body["model"] == "local-model"


def test_settings_problems_are_published_as_notices_at_start(api, tmp_path):
    write(tmp_path / ".agent-tui" / "settings.json", {"maxTurns": -1})
    api.push(reply("ok"))

    out = run(["-p", "hi", "--output-format", "stream-events"], tmp_path, env_for(api.url))

    notices = [json.loads(line) for line in out.stdout.splitlines() if '"notice"' in line]
    assert any(n["kind"] == "error" and "'maxTurns'" in n["message"] for n in notices)


def test_a_settings_file_that_is_not_json_refuses_to_start(api, tmp_path):
    write(tmp_path / ".agent-tui" / "settings.json", '{"permissions": {"deny": ["Bash(rm:*)"]\n')

    out = run(["-p", "hi"], tmp_path, env_for(api.url))

    assert out.returncode == 2 and out.stdout == ""
    settings_path = tmp_path / ".agent-tui" / "settings.json"
    assert out.stderr.startswith(f"agent-tui: settings: {settings_path}: not valid JSON (line 2")
    assert api.requests == []


def test_deny_rules_of_a_file_with_a_trailing_comma_stay_in_force(api, tmp_path):
    write(tmp_path / ".agent-tui" / "settings.json", '{"permissions": {"deny": ["Bash(rm:*)",]}}')
    (tmp_path / "keep.txt").write_text("precious\n")
    api.push(reply(tool_use("Bash", {"command": "rm keep.txt"}, id="t_rm")), reply("done"))

    out = run(["-p", "clean up", "--permission-mode", "bypassPermissions"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    assert (tmp_path / "keep.txt").exists()
    [result] = [b for b in api.requests[1].body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert result["is_error"] is True
    assert "read anyway without its comments and trailing commas" in out.stderr


def test_a_rule_naming_no_tool_is_a_warning_notice(api, tmp_path):
    write(tmp_path / ".agent-tui" / "settings.json", {"permissions": {"deny": ["bash(rm:*)", "Bash(git push:*)"]}})
    api.push(reply("ok"))

    out = run(["-p", "hi", "--output-format", "stream-events"], tmp_path, env_for(api.url))

    notices = [json.loads(line) for line in out.stdout.splitlines() if '"notice"' in line]
    warnings = [n["message"] for n in notices if "names no tool" in n["message"]]
    assert len(warnings) == 1
    assert "rule 'bash(rm:*)' names no tool 'bash' and never matches (did you mean Bash?)" in warnings[0]
