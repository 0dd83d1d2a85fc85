"""`-p --output-format stream-json`: Claude Code's message stream, parsed as a Claude Code script would."""

from __future__ import annotations

import json

from tests.loopback import reply, text, tool_use
from tests.test_print_mode import env_for, run


def parse(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_a_tool_turn_streams_init_assistant_user_and_result_messages(api, tmp_path):
    (tmp_path / "notes.txt").write_text("the secret is 7\n")
    api.push(reply(text("Reading."), tool_use("Read", {"file_path": str(tmp_path / "notes.txt")}, id="toolu_r1")),
             reply("It says 7."))

    out = run(["-p", "what do the notes say?", "--output-format", "stream-json", "--verbose",
               "--model", "claude-test-model"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    lines = parse(out.stdout)
    assert [(m["type"], m.get("subtype")) for m in lines] == [
        ("system", "init"), ("assistant", None), ("assistant", None), ("user", None), ("assistant", None),
        ("result", "success"),
    ]
    init, said, called, results, answer, result = lines
    session_id = init["session_id"]
    assert init["cwd"] == str(tmp_path.resolve()) and init["model"] == "claude-test-model"
    assert init["permissionMode"] == "default" and init["mcp_servers"] == []
    assert init["agents"] == ["general-purpose"] and init["slash_commands"] == []
    assert {"Read", "Bash", "Edit", "Agent"} <= set(init["tools"])
    assert all(m["session_id"] == session_id for m in lines)
    assert said["message"]["role"] == "assistant" and said["message"]["content"] == [{"type": "text", "text": "Reading."}]
    assert called["message"]["content"][0]["type"] == "tool_use" and called["message"]["content"][0]["name"] == "Read"
    assert called["message"]["id"] == said["message"]["id"] != answer["message"]["id"]
    assert called["parent_tool_use_id"] is None
    [tool_result] = results["message"]["content"]
    assert results["message"]["role"] == "user"
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == "toolu_r1"
    assert "the secret is 7" in json.dumps(tool_result["content"]) and not tool_result.get("is_error")
    assert answer["message"]["content"] == [{"type": "text", "text": "It says 7."}]
    assert result["result"] == "It says 7." and result["is_error"] is False and result["num_turns"] == 2


def test_stream_json_without_verbose_is_refused_as_claude_code_refuses_it(api, tmp_path):
    out = run(["-p", "hi", "--output-format", "stream-json"], tmp_path, env_for(api.url))

    assert out.returncode == 1
    assert "When using --print, --output-format=stream-json requires --verbose" in out.stderr
    assert out.stdout == "" and not api.requests


def test_subagent_messages_carry_the_agent_tool_use_id(api, tmp_path):
    api.push(reply(tool_use("Agent", {"description": "look", "prompt": "say hi"}, id="toolu_agent")),
             reply("hi from the subagent"), reply("The agent said hi."))

    out = run(["-p", "delegate", "--output-format", "stream-json", "--verbose"], tmp_path, env_for(api.url))

    lines = parse(out.stdout)
    nested = [m for m in lines if m["type"] == "assistant" and m["parent_tool_use_id"] == "toolu_agent"]
    assert [m["message"]["content"] for m in nested] == [[{"type": "text", "text": "hi from the subagent"}]]
    [agent_result] = [m for m in lines if m["type"] == "user" and m["parent_tool_use_id"] is None]
    assert agent_result["message"]["content"][0]["tool_use_id"] == "toolu_agent"
    assert lines[-1]["result"] == "The agent said hi."


def test_max_turns_ends_with_an_error_max_turns_result(api, tmp_path):
    api.push(*[reply(tool_use("Glob", {"pattern": "*"})) for _ in range(2)])

    out = run(["-p", "loop", "--output-format", "stream-json", "--verbose", "--max-turns", "1"], tmp_path,
              env_for(api.url))

    result = parse(out.stdout)[-1]
    assert out.returncode == 1
    assert result["type"] == "result" and result["subtype"] == "error_max_turns" and result["is_error"] is True


def test_partial_messages_stream_the_api_events(api, tmp_path):
    api.push(reply("Hello there, partial world."))

    out = run(["-p", "hi", "--output-format", "stream-json", "--verbose", "--include-partial-messages"], tmp_path,
              env_for(api.url))

    lines = parse(out.stdout)
    events = [m["event"] for m in lines if m["type"] == "stream_event"]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[1] == "content_block_start" and kinds[-1] == "message_stop"
    streamed = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert streamed == "Hello there, partial world."
    # The complete message follows its block's deltas, as in Claude Code.
    [assistant] = [m for m in lines if m["type"] == "assistant"]
    assert lines.index(assistant) > max(i for i, m in enumerate(lines) if m["type"] == "stream_event"
                                       and m["event"]["type"] == "content_block_stop")


def test_json_with_verbose_prints_every_message_as_an_array(api, tmp_path):
    api.push(reply("Just this."))

    out = run(["-p", "hi", "--output-format", "json", "--verbose"], tmp_path, env_for(api.url))

    messages = json.loads(out.stdout)
    assert [m["type"] for m in messages] == ["system", "assistant", "result"]
    assert messages[-1]["result"] == "Just this."


def test_engine_events_stay_available_as_stream_events(api, tmp_path):
    api.push(reply("plain"))

    out = run(["-p", "hi", "--output-format", "stream-events"], tmp_path, env_for(api.url))

    kinds = [m["type"] for m in parse(out.stdout)]
    assert kinds[0] == "session_started" and "text_delta" in kinds and "query_finished" in kinds
    assert kinds[-1] == "result"


def test_lines_of_a_discarded_attempt_are_named_so_a_reader_can_drop_them(api, tmp_path):
    api.push(reply("The beginning of a long answer that", stop_reason="max_tokens"), reply("The whole answer."))

    out = run(["-p", "write a lot", "--output-format", "stream-json", "--verbose"], tmp_path, env_for(api.url))

    assert out.returncode == 0, out.stderr
    lines = parse(out.stdout)
    assert [(m["type"], m.get("subtype")) for m in lines] == [
        ("system", "init"), ("assistant", None), ("system", "attempt_discarded"), ("assistant", None),
        ("result", "success"),
    ]
    _init, cut, discarded, whole, result = lines
    assert cut["message"]["content"] == [{"type": "text", "text": "The beginning of a long answer that"}]
    assert discarded["message_id"] == cut["message"]["id"] != whole["message"]["id"]
    assert discarded["reason"] == "escalation" and discarded["attempt"] == 1
    kept = [m for m in lines if m["type"] == "assistant" and m["message"]["id"] != discarded["message_id"]]
    assert [m["message"]["content"] for m in kept] == [[{"type": "text", "text": "The whole answer."}]]
    assert result["result"] == "The whole answer."
