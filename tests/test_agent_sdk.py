"""Claude's Agent SDK (`claude-agent-sdk`, the real package) drives the installed `agent-tui`
(`cli_path`) against the loopback Messages API: the stream-json input format and the control protocol."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_tui.engine.store import find_session, load_transcript, project_dir
from tests.loopback import hang, reply, text, tool_use
from tests.test_print_mode import AGENT, env_for

sdk = pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    SystemMessage,
    create_sdk_mcp_server,
    query,
    tool,
)


def options(api, cwd: Path, **extra: Any) -> ClaudeAgentOptions:
    env = env_for(api.url)
    return ClaudeAgentOptions(cli_path=AGENT, cwd=str(cwd), env=env, **extra)


async def collect(prompt: Any, opts: ClaudeAgentOptions) -> list[Any]:
    return [message async for message in query(prompt=prompt, options=opts)]


def texts(messages: list[Any]) -> list[str]:
    return [b.text for m in messages if isinstance(m, AssistantMessage) for b in m.content if hasattr(b, "text")]


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in body["messages"][-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


async def test_query_answers_a_prompt_with_a_result_message(api, tmp_path):
    api.push(reply("Hello from the loopback."))

    messages = await collect("say hello", options(api, tmp_path))

    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    assert init.data["cwd"] == str(tmp_path)
    assert texts(messages) == ["Hello from the loopback."]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    assert result.result == "Hello from the loopback." and result.num_turns == 1
    assert result.duration_api_ms >= 0 and result.session_id == init.data["session_id"]
    # The SDK's default system prompt is "" (no preset): agent-tui sends none of its own.
    assert "system" not in api.requests[0].body
    assert api.requests[0].body["messages"][0]["content"][0]["text"] == "say hello"


async def test_a_two_turn_client_keeps_the_conversation(api, tmp_path):
    api.push(reply("First answer."), reply("Second answer."))

    async with ClaudeSDKClient(options(api, tmp_path)) as client:
        await client.query("first question")
        first = [m async for m in client.receive_response()]
        await client.query("second question")
        second = [m async for m in client.receive_response()]

    assert texts(first) == ["First answer."] and texts(second) == ["Second answer."]
    assert isinstance(first[-1], ResultMessage) and isinstance(second[-1], ResultMessage)
    history = api.requests[1].body["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[1]["content"][0]["text"] == "First answer."


async def test_can_use_tool_allows_a_write_and_denies_a_bash_with_its_message(api, tmp_path):
    target = tmp_path / "notes.txt"
    api.push(
        reply(tool_use("Write", {"file_path": str(target), "content": "written\n"}, id="w1"),
              tool_use("Bash", {"command": "rm -rf build"}, id="b1")),
        reply("Done."),
    )
    asked: list[str] = []

    async def can_use_tool(name: str, input: dict[str, Any], context: Any) -> Any:
        asked.append(name)
        if name == "Write":
            return PermissionResultAllow()
        return PermissionResultDeny(message="No shell commands in this test, please.")

    async def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "write notes and clean"}}

    messages = await collect(prompts(), options(api, tmp_path, can_use_tool=can_use_tool))

    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "Done."
    assert sorted(asked) == ["Bash", "Write"]
    assert target.read_text() == "written\n"
    results = {b["tool_use_id"]: b for b in tool_results(api.requests[1].body)}
    assert not results["w1"].get("is_error")
    assert results["b1"]["is_error"] and result_text(results["b1"]) == "No shell commands in this test, please."


async def test_interrupt_mid_stream_ends_the_turn_and_the_next_one_works(api, tmp_path):
    api.push(hang(after=5, of=reply(text("A long answer that never ends"))), reply("The next answer."))

    async with ClaudeSDKClient(options(api, tmp_path, include_partial_messages=True)) as client:
        await client.query("tell me a long story")
        first: list[Any] = []
        async for message in client.receive_response():
            first.append(message)
            if type(message).__name__ == "StreamEvent" and message.event.get("type") == "content_block_delta":
                await client.interrupt()
        await client.query("now something short")
        second = [m async for m in client.receive_response()]

    assert isinstance(first[-1], ResultMessage) and first[-1].subtype == "error_during_execution"
    assert isinstance(second[-1], ResultMessage) and second[-1].result == "The next answer."
    assert api.requests[1].body["messages"][-1]["content"][-1]["text"] == "now something short"


async def test_an_in_process_sdk_mcp_tool_is_called_and_its_answer_reaches_the_model(api, tmp_path):
    calls: list[dict[str, Any]] = []

    @tool("lookup", "Look a word up.", {"word": str})
    async def lookup(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"{args['word']}: a small river mammal"}]}

    server = create_sdk_mcp_server("words", tools=[lookup])
    api.push(reply(tool_use("mcp__words__lookup", {"word": "otter"}, id="m1")), reply("An otter is a mammal."))

    async def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "what is an otter?"}}

    messages = await collect(prompts(), options(api, tmp_path, mcp_servers={"words": server},
                                                allowed_tools=["mcp__words__lookup"]))

    assert calls == [{"word": "otter"}]
    offered = {t["name"] for t in api.requests[0].body["tools"]}
    assert "mcp__words__lookup" in offered
    (block,) = tool_results(api.requests[1].body)
    assert "otter: a small river mammal" in result_text(block)
    assert messages[-1].result == "An otter is a mammal."


async def test_a_pre_tool_use_hook_callback_denies_the_call(api, tmp_path):
    seen: list[dict[str, Any]] = []

    async def guard(input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append(input)
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "reading is off limits"}}

    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "secret.txt")}, id="r1")), reply("Understood."))
    (tmp_path / "secret.txt").write_text("hidden\n")

    async def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "read the secret"}}

    hooks = {"PreToolUse": [HookMatcher(matcher="Read", hooks=[guard])]}
    messages = await collect(prompts(), options(api, tmp_path, hooks=hooks))

    assert [s["tool_name"] for s in seen] == ["Read"] and seen[0]["hook_event_name"] == "PreToolUse"
    (block,) = tool_results(api.requests[1].body)
    assert block["is_error"] and "reading is off limits" in result_text(block)
    assert "hidden" not in result_text(block)
    assert messages[-1].result == "Understood."


async def test_set_permission_mode_accept_edits_lets_a_write_run(api, tmp_path):
    target = tmp_path / "out.txt"
    api.push(reply(tool_use("Write", {"file_path": str(target), "content": "ok\n"}, id="w1")), reply("Written."))

    async with ClaudeSDKClient(options(api, tmp_path)) as client:
        await client.set_permission_mode("acceptEdits")
        await client.query("write out.txt")
        messages = [m async for m in client.receive_response()]

    assert target.read_text() == "ok\n"
    assert messages[-1].result == "Written." and not messages[-1].permission_denials


async def test_set_model_and_mcp_status_and_context_usage_answer(api, tmp_path):
    api.push(reply("From the other model."))

    async with ClaudeSDKClient(options(api, tmp_path)) as client:
        info = await client.get_server_info()
        await client.set_model("claude-opus-4-6")
        status = await client.get_mcp_status()
        usage = await client.get_context_usage()
        await client.query("hi")
        [m async for m in client.receive_response()]

    assert info["permissionMode"] == "default" and "capabilities" in info
    assert api.requests[0].body["model"] == "claude-opus-4-6"
    assert status == {"mcpServers": []}
    assert usage["model"] == "claude-opus-4-6" and usage["rawMaxTokens"] > 0


# ---------------------------------------------------------------- the wire, without the SDK


def serve(api, cwd: Path, lines: list[str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([AGENT, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
                           *extra], cwd=cwd, env=env_for(api.url), input="".join(line + "\n" for line in lines),
                          capture_output=True, text=True, timeout=60)


async def test_max_budget_usd_ends_the_turn_between_model_requests(api, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    api.push(reply(tool_use("Read", {"file_path": str(tmp_path / "notes.txt")}), usage={"input_tokens": 10_000}),
             reply("Never asked for."))

    messages = await collect("read the notes", options(api, tmp_path, max_budget_usd=0.01))

    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.is_error and result.subtype == "error_max_budget_usd"
    assert result.total_cost_usd is not None and result.total_cost_usd >= 0.03
    assert len(api.requests) == 1


async def test_initialize_skills_keeps_only_the_skills_the_program_names(api, tmp_path):
    for name in ("alpha", "beta"):
        folder = tmp_path / ".claude" / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Use for {name} work\n---\nDo {name}.\n")
    api.push(reply("ok"))

    preset = {"type": "preset", "preset": "claude_code"}
    await collect("hi", options(api, tmp_path, skills=["alpha"], system_prompt=preset))

    system = "\n".join(b["text"] for b in api.requests[0].body["system"])
    assert "- alpha: Use for alpha work" in system and "beta" not in system


def test_bad_stdin_lines_are_reported_and_the_session_goes_on(api, tmp_path):
    api.push(reply("Still here."))

    out = serve(api, tmp_path, [
        "this is not json",
        json.dumps({"type": "mystery"}),
        json.dumps({"type": "control_request", "request_id": "r1", "request": {"subtype": "apply_flag_settings"}}),
        json.dumps({"type": "user", "message": {"role": "user", "content": "are you there?"}}),
    ])

    assert out.returncode == 0, out.stderr
    assert "stdin line 1: not JSON" in out.stderr and "unknown message type 'mystery'" in out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    error = next(m for m in lines if m["type"] == "control_response")
    assert error["response"] == {"subtype": "error", "request_id": "r1",
                                 "error": "Unsupported control request subtype: apply_flag_settings"}
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "Still here."


def test_stdin_closing_ends_the_session_with_its_transcript_saved(api, tmp_path):
    api.push(reply("Saved answer."))

    out = serve(api, tmp_path, [json.dumps({"type": "user", "message": {"role": "user", "content": "keep this"}})])

    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    transcript = load_transcript(find_session(project_dir(tmp_path), result["session_id"]))
    assert [m["role"] for m in transcript.history] == ["user", "assistant"]
    assert transcript.history[1]["content"][0]["text"] == "Saved answer."


def test_a_piped_run_without_p_is_print_mode_and_exits_0(api, tmp_path):
    api.push(reply("Piped answer."))

    out = subprocess.run([AGENT, "--output-format", "stream-json", "--verbose"], cwd=tmp_path, env=env_for(api.url),
                         input="answer from a pipe\n", capture_output=True, text=True, timeout=60)

    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["type"] == "result" and result["result"] == "Piped answer."
    assert "duration_api_ms" in result


def test_an_ignored_flag_says_so_on_stderr(api, tmp_path):
    api.push(reply("ok"))
    out = serve(api, tmp_path, [json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}})],
                "--betas", "some-beta")
    assert out.returncode == 0, out.stderr
    assert "--betas is not supported and was ignored" in out.stderr


CITY_SCHEMA = {"type": "object", "required": ["city", "population"], "additionalProperties": False,
               "properties": {"city": {"type": "string"}, "population": {"type": "integer", "minimum": 1}}}


async def test_output_format_json_schema_gives_the_result_structured_output(api, tmp_path):
    api.push(
        reply("Paris has about two million people."),
        reply(tool_use("StructuredOutput", {"city": "Paris", "population": 0}, id="s1")),
        reply(tool_use("StructuredOutput", {"city": "Paris", "population": 2_100_000}, id="s2")),
        reply("Done."),
    )

    schema_format = {"type": "json_schema", "schema": CITY_SCHEMA}
    messages = await collect("how big is Paris?", options(api, tmp_path, output_format=schema_format))

    result = messages[-1]
    assert isinstance(result, ResultMessage) and not result.is_error
    assert result.structured_output == {"city": "Paris", "population": 2_100_000}
    offered = {t["name"]: t for t in api.requests[0].body["tools"]}["StructuredOutput"]
    assert offered["input_schema"] == CITY_SCHEMA
    # Ending without it, the model is told to call it; a value that does not match goes back as the tool's error.
    assert "You MUST call the StructuredOutput tool" in json.dumps(api.requests[1].body["messages"][-1])
    mismatch = tool_results(api.requests[2].body)[0]
    assert mismatch["is_error"]
    assert result_text(mismatch) == "Output does not match required schema: population: 0 is less than the minimum of 1"
    assert not tool_results(api.requests[3].body)[0].get("is_error")


def test_a_run_that_never_gives_the_structured_output_is_an_error(api, tmp_path):
    api.push(reply("No JSON from me."), reply("Still no JSON."))

    out = subprocess.run([AGENT, "-p", "how big is Paris?", "--output-format", "json", "--json-schema",
                          json.dumps(CITY_SCHEMA)], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         env=env_for(api.url, CLAUDE_CODE_STOP_HOOK_BLOCK_CAP="1"))

    result = json.loads(out.stdout)
    assert out.returncode == 1 and result["is_error"]
    assert result["subtype"] == "error_max_structured_output_retries" and "structured_output" not in result
    assert len(api.requests) == 2


def test_a_json_schema_that_is_no_object_schema_is_refused(api, tmp_path):
    for schema, says in (('{"type": "string"}', "must describe an object"), ("{nope", "not JSON"),
                         ('{"type": "object", "properties": 3}', "not a valid JSON Schema")):
        out = subprocess.run([AGENT, "-p", "hi", "--json-schema", schema], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60, env=env_for(api.url))
        assert out.returncode == 2 and says in out.stderr
    assert api.requests == []


async def test_the_older_claude_code_sdk_string_query_parses_to_the_result(api, tmp_path):
    old = pytest.importorskip("claude_code_sdk")
    api.push(reply("Parsed by the old SDK."))

    from claude_code_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    opts = old.ClaudeCodeOptions(cwd=str(tmp_path), env=env_for(api.url))
    # Its string query runs `--print -- PROMPT` (no control protocol); it takes a CLI path through its transport.
    transport = SubprocessCLITransport(prompt="hi", options=opts, cli_path=AGENT)
    messages = [m async for m in old.query(prompt="hi", options=opts, transport=transport)]

    result = messages[-1]
    assert isinstance(result, old.ResultMessage) and result.result == "Parsed by the old SDK."
    assert result.duration_api_ms >= 0 and not result.is_error


async def test_can_use_tool_may_rewrite_the_input_or_deny_and_interrupt(api, tmp_path):
    target = tmp_path / "notes.txt"
    api.push(
        reply(tool_use("Write", {"file_path": str(target), "content": "as the model wrote it\n"}, id="w1")),
        reply(tool_use("Bash", {"command": "make deploy"}, id="b1")),
    )

    async def can_use_tool(name: str, input: dict[str, Any], context: Any) -> Any:
        if name == "Write":
            return PermissionResultAllow(updated_input={**input, "content": "as the program rewrote it\n"})
        return PermissionResultDeny(message="Stop here.", interrupt=True)

    async def prompts():
        yield {"type": "user", "message": {"role": "user", "content": "write, then deploy"}}

    messages = await collect(prompts(), options(api, tmp_path, can_use_tool=can_use_tool))

    assert target.read_text() == "as the program rewrote it\n"
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "error_during_execution"
    assert len(api.requests) == 2  # the interrupt ended the turn: no request after the denied Bash


async def test_resume_continues_a_session_and_fork_session_goes_on_in_a_copy(api, tmp_path):
    api.push(reply("First."), reply("Resumed."), reply("Forked."))

    first = await collect("remember otters", options(api, tmp_path))
    session_id = first[-1].session_id
    resumed = await collect("and now?", options(api, tmp_path, resume=session_id))
    forked = await collect("and in a copy?", options(api, tmp_path, resume=session_id, fork_session=True))

    assert resumed[-1].session_id == session_id and forked[-1].session_id != session_id
    for request in api.requests[1:]:
        assert request.body["messages"][0]["content"][0]["text"] == "remember otters"
    assert [m["role"] for m in api.requests[2].body["messages"]] == ["user", "assistant"] * 2 + ["user"]


def test_setting_sources_leaves_out_the_project_settings(api, tmp_path):
    (tmp_path / ".agent-tui").mkdir()
    (tmp_path / ".agent-tui" / "settings.json").write_text(json.dumps({"model": "claude-opus-4-6"}))
    api.push(reply("from the project's model"), reply("from the default model"))
    prompt = [json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}})]

    with_project = serve(api, tmp_path, prompt)
    user_only = serve(api, tmp_path, prompt, "--setting-sources=user")

    assert with_project.returncode == 0 and user_only.returncode == 0, user_only.stderr
    assert [r.body["model"] for r in api.requests] == ["claude-opus-4-6", "claude-sonnet-4-6"]


async def test_tools_and_system_prompt_options_shape_the_request(api, tmp_path):
    api.push(reply("ok"), reply("ok"))

    await collect("hi", options(api, tmp_path, tools=["Read", "Grep"], system_prompt="You are a test double."))
    preset = {"type": "preset", "preset": "claude_code", "append": "Answer in French."}
    await collect("hi", options(api, tmp_path, tools=[], system_prompt=preset))

    first, second = (r.body for r in api.requests)
    assert [t["name"] for t in first["tools"]] == ["Read", "Grep"]
    assert first["system"][0]["text"] == "You are a test double."
    assert not second.get("tools")
    system = "\n".join(b["text"] for b in second["system"])
    assert system.startswith("You are agent-tui") and system.rstrip().endswith("Answer in French.")
