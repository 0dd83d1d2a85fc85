"""Local models: any server speaking the Messages API, reached through ANTHROPIC_BASE_URL.

No API key, the model name and the context window from settings, and no
count-tokens endpoint: agent-tui only ever calls POST /v1/messages.
"""

from __future__ import annotations

import json

import pytest

from tests.loopback import reply, text, tool_use
from tests.test_print_mode import env_for, run

LOCAL_MODEL = "qwen2.5-coder:7b"


def local_env(url: str | None = None) -> dict[str, str]:
    """The environment of someone with a local server and no Anthropic account."""
    env = env_for()
    if url:
        env["ANTHROPIC_BASE_URL"] = url
    return env


def write_settings(cwd, data: dict) -> None:
    (cwd / ".agent-tui").mkdir()
    (cwd / ".agent-tui" / "settings.json").write_text(json.dumps(data))


def test_a_local_server_runs_a_tool_session_with_model_and_window_from_settings(api, tmp_path):
    (tmp_path / "notes.txt").write_text("local notes\n")
    write_settings(tmp_path, {"model": LOCAL_MODEL, "contextWindow": 32768, "maxOutputTokens": 8192})
    api.push(
        reply(text("Reading."), tool_use("Read", {"file_path": str(tmp_path / "notes.txt")}), model=LOCAL_MODEL),
        reply("The notes say: local notes.", model=LOCAL_MODEL),
    )

    out = run(["-p", "what do the notes say?", "--output-format", "stream-events"], tmp_path, local_env(api.url))

    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert events[0]["model"] == LOCAL_MODEL and events[0]["offline"] is False
    assert events[-1]["result"] == "The notes say: local notes."
    assert [(r.body["model"], r.body["max_tokens"]) for r in api.requests] == [(LOCAL_MODEL, 8192)] * 2
    usage = [e for e in events if e["type"] == "usage"]
    assert {(u["context_window"], u["auto_compact_threshold"]) for u in usage} == {(32768, 32768 - 8192 - 13000)}
    assert api.count_requests == []
    assert all(r.path == "/v1/messages" for r in api.requests)


def test_no_key_is_needed(api, tmp_path):
    env = local_env(api.url)
    assert not {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"} & set(env)
    api.push(reply("hello from a local model"))

    out = run(["-p", "hi", "--model", LOCAL_MODEL], tmp_path, env)

    assert out.returncode == 0, out.stderr
    assert out.stdout == "hello from a local model\n"


@pytest.mark.parametrize("settings_key", ["baseUrl", "env"])
def test_the_server_address_can_live_in_a_settings_file(api, tmp_path, settings_key):
    address = {"baseUrl": api.url} if settings_key == "baseUrl" else {"env": {"ANTHROPIC_BASE_URL": api.url}}
    write_settings(tmp_path, {"model": LOCAL_MODEL, **address})
    api.push(reply("reached"))

    out = run(["-p", "hi"], tmp_path, local_env())

    assert out.returncode == 0, out.stderr
    assert out.stdout == "reached\n"
    assert api.requests[0].body["model"] == LOCAL_MODEL


def test_environment_overrides_the_settings_model_for_one_run(api, tmp_path):
    write_settings(tmp_path, {"model": LOCAL_MODEL})
    api.push(reply("ok"))

    run(["-p", "hi"], tmp_path, {**local_env(api.url), "ANTHROPIC_MODEL": "llama3.1:8b"})

    assert api.requests[0].body["model"] == "llama3.1:8b"
