"""OpenAI-compatible chat completions: `OpenAIChatModel` against the loopback chat-completions
server, the wire both ways, and the whole loop (parallel tools, the permission prompt, Esc,
compaction, resume) with the provider chosen only by settings."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_tui.cli import choose_model
from agent_tui.config import load_settings
from agent_tui.engine import events as ev
from agent_tui.engine.loop.query import MAX_TOKENS_NUDGE, TerminalReason
from agent_tui.engine.messages import check_history
from agent_tui.engine.models.base import ModelError
from agent_tui.engine.models.openai import OpenAIChatModel
from agent_tui.engine.models.stream import BlockStop, MessageStop, ModelRequest
from agent_tui.engine.permissions.policy import PermissionAnswer, PermissionPolicy
from agent_tui.engine.session import Session, SessionOptions
from agent_tui.tools.registry import default_tools
from tests.engine_helpers import FAST_RETRY, Recorder, auto_answer
from tests.openai_loopback import OpenAILoopback, call, chat, chunk_error, error, html_error, raw_chunks

AGENT = str(Path(sys.executable).with_name("agent-tui"))
KEY_ENV = "LOOPBACK_OPENAI_KEY"


@pytest.fixture
def oai() -> Iterator[OpenAILoopback]:
    with OpenAILoopback() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-loopback")
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def write_settings(cwd: Path, url: str, **extra) -> None:
    folder = cwd / ".agent-tui"
    folder.mkdir(exist_ok=True)
    data = {"provider": "openai", "baseUrl": url + "/v1", "apiKeyEnv": KEY_ENV, "model": "gpt-4.1", **extra}
    (folder / "settings.json").write_text(json.dumps(data))


def settings_session(cwd: Path, url: str, *, policy: PermissionPolicy | None = None, **options) -> Session:
    """A session whose model the settings file chose, as `agent-tui` chooses it."""
    write_settings(cwd, url)
    model = choose_model(load_settings(cwd))
    assert isinstance(model, OpenAIChatModel)
    options.setdefault("retry", FAST_RETRY)
    return Session(model=model, tools=default_tools(), cwd=cwd, policy=policy or PermissionPolicy(mode="default"),
                   options=SessionOptions(**options))


def direct(srv: OpenAILoopback) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4.1", base_url=srv.url + "/v1", api_key="sk-direct")


async def collect(model: OpenAIChatModel, request: ModelRequest) -> list:
    try:
        return [e async for e in model.stream(request)]
    finally:
        await model.aclose()


def hi(**kw) -> ModelRequest:
    return ModelRequest(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}], **kw)


# ---------------------------------------------------------------- the wire


async def test_the_request_is_a_streaming_chat_completion_with_function_tools(oai):
    oai.push(chat("ok"))
    tools = [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {}}}]
    await collect(direct(oai), hi(system="Be brief.", tools=tools, max_tokens=1234))

    received = oai.requests[0]
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-direct"
    assert received.body == {
        "model": "gpt-4.1",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "max_tokens": 1234,
        "tools": [{"type": "function", "function": {"name": "Read", "description": "Read a file",
                                                    "parameters": {"type": "object", "properties": {}}}}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_parallel_tool_calls_are_assembled_by_index_and_reasoning_is_thinking(oai):
    oai.push(chat("Reading both.", call("Read", {"file_path": "/a"}, id="call_a"),
                  call("Grep", {"pattern": "x"}, id="call_b"), reasoning="Two files to read.",
                  usage={"prompt_tokens": 120, "cached_tokens": 100, "completion_tokens": 30}))
    events = await collect(direct(oai), hi())

    blocks = [e.block for e in events if isinstance(e, BlockStop)]
    assert blocks == [
        {"type": "thinking", "thinking": "Two files to read."},
        {"type": "text", "text": "Reading both."},
        {"type": "tool_use", "id": "call_a", "name": "Read", "input": {"file_path": "/a"}},
        {"type": "tool_use", "id": "call_b", "name": "Grep", "input": {"pattern": "x"}},
    ]
    stop = events[-1]
    assert isinstance(stop, MessageStop) and stop.stop_reason == "tool_use"
    assert stop.usage == {"input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 30,
                          "cache_creation_input_tokens": 0}


async def test_the_history_goes_back_as_tool_calls_and_tool_messages_paired_by_id_without_thinking(oai):
    oai.push(chat("done"))
    history = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "private scratch"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "call_a", "name": "Read", "input": {"file_path": "/a"}},
            {"type": "tool_use", "id": "call_b", "name": "Read", "input": {"file_path": "/b"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_a", "content": "alpha"},
            {"type": "tool_result", "tool_use_id": "call_b", "content": [{"type": "text", "text": "no such file"}],
             "is_error": True},
            {"type": "text", "text": "and be quick"},
        ]},
    ]
    await collect(direct(oai), ModelRequest(model="gpt-4.1", messages=history))

    sent = oai.requests[0].body["messages"]
    assert sent == [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "/a"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "/b"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": "alpha"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: no such file"},
        {"role": "user", "content": "and be quick"},
    ]
    assert "private scratch" not in json.dumps(oai.requests[0].body)


@pytest.mark.parametrize(("finish", "stop"), [("stop", "end_turn"), ("length", "max_tokens"),
                                              ("content_filter", "refusal"), ("tool_calls", "tool_use")])
async def test_finish_reasons_map_onto_the_loops_stop_reasons(oai, finish, stop):
    oai.push(chat("text", finish_reason=finish))
    events = await collect(direct(oai), hi())
    assert events[-1].stop_reason == stop


async def test_done_ends_the_response_even_when_the_server_keeps_the_connection_open(oai):
    oai.push(chat("complete answer", end="hang"))
    events = await asyncio.wait_for(collect(direct(oai), hi()), 10)
    assert isinstance(events[-1], MessageStop)
    assert events[-1].message["content"] == [{"type": "text", "text": "complete answer"}]


@pytest.mark.parametrize(
    ("response", "kind", "status", "retry_after", "message"),
    [
        (error(429, "Rate limit reached for gpt-4.1", type="requests", error_code="rate_limit_exceeded",
               headers={"retry-after": "2"}), "rate_limit", 429, 2.0, "Rate limit reached for gpt-4.1"),
        (error(401, "Incorrect API key provided", error_code="invalid_api_key"), "auth", 401, None,
         "Incorrect API key provided"),
        (error(400, "This model's maximum context length is 128000 tokens. However, your messages resulted in "
                    "250000 tokens.", error_code="context_length_exceeded"), "prompt_too_long", 400, None, None),
        (error(404, "The model `gpt-9` does not exist", error_code="model_not_found"), "not_found", 404, None, None),
        (html_error(502), "server", 502, None, "HTTP 502 Bad Gateway"),
    ],
)
async def test_http_errors_are_classified(oai, response, kind, status, retry_after, message):
    oai.push(response)
    with pytest.raises(ModelError) as info:
        await collect(direct(oai), hi())
    err = info.value
    assert (err.kind, err.status, err.retry_after) == (kind, status, retry_after)
    if message is not None:
        assert err.message == message
    assert "<html" not in err.message


async def test_an_error_chunk_mid_stream_is_a_classified_mid_stream_error(oai):
    oai.push(chunk_error("The server had an error while processing your request.", type="server_error"))
    with pytest.raises(ModelError) as info:
        await collect(direct(oai), hi())
    assert info.value.kind == "server" and info.value.mid_stream and info.value.retryable


async def test_insufficient_quota_is_not_retried(oai):
    oai.push(error(429, "You exceeded your current quota", type="insufficient_quota", error_code="insufficient_quota"))
    with pytest.raises(ModelError) as info:
        await collect(direct(oai), hi())
    assert info.value.kind == "rate_limit" and not info.value.retryable


async def test_list_models_reads_get_models(oai):
    oai.models = ["gpt-4.1-mini", "gpt-4.1"]
    model = direct(oai)
    try:
        assert await model.list_models() == ["gpt-4.1", "gpt-4.1-mini"]
    finally:
        await model.aclose()


# ---------------------------------------------------------------- the whole loop, chosen by settings


async def test_parallel_tools_run_and_their_results_go_back_paired(oai, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    oai.push(chat("Reading.", call("Read", {"file_path": str(tmp_path / "a.txt")}, id="call_a"),
                  call("Read", {"file_path": str(tmp_path / "b.txt")}, id="call_b")),
             chat("a says alpha, b says beta."))
    session = settings_session(tmp_path, oai.url)
    rec = Recorder(session)

    terminal = await session.submit("read both")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "a says alpha, b says beta."
    assert oai.requests[0].headers["authorization"] == "Bearer sk-loopback"
    tool_messages = [m for m in oai.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_a", "call_b"]
    assert "alpha" in tool_messages[0]["content"] and "beta" in tool_messages[1]["content"]
    spans = {t: (rec.times(ev.ToolStarted, t), rec.times(ev.ToolFinished, t)) for t in ("call_a", "call_b")}
    assert max(s for s, _ in spans.values()) < min(e for _, e in spans.values()), "the reads did not overlap"
    assert check_history(session.history) == []


async def test_the_permission_prompt_asks_and_a_yes_runs_the_command(oai, tmp_path):
    oai.push(chat(call("Bash", {"command": "touch made.txt"}, id="call_1")), chat("Made it."))
    session = settings_session(tmp_path, oai.url)
    rec = Recorder(session)
    auto_answer(session, PermissionAnswer("allow"))

    terminal = await session.submit("make a file")

    assert terminal.result == "Made it."
    [asked] = rec.of(ev.PermissionRequested)
    assert asked.tool_use_id == "call_1"
    assert (tmp_path / "made.txt").exists()


async def test_esc_while_a_tool_runs_keeps_the_history_valid_for_the_next_request(oai, tmp_path):
    oai.push(chat(call("Bash", {"command": "sleep 30"}, id="call_1")), chat("after the interruption"))
    session = settings_session(tmp_path, oai.url, policy=PermissionPolicy(mode="bypassPermissions"))
    rec = Recorder(session)
    task = asyncio.create_task(session.submit("wait"))
    while not rec.of(ev.ToolStarted):
        await asyncio.sleep(0.01)

    session.abort()
    terminal = await asyncio.wait_for(task, 60)

    assert terminal.reason is TerminalReason.ABORTED_TOOLS
    assert check_history(session.history) == []
    assert (await session.submit("go on")).result == "after the interruption"
    sent = oai.requests[1].body["messages"]
    calls = [m for m in sent if m.get("tool_calls")]
    results = [m for m in sent if m["role"] == "tool"]
    assert [c["id"] for c in calls[0]["tool_calls"]] == [r["tool_call_id"] for r in results] == ["call_1"]


async def test_esc_while_streaming_closes_the_connection(oai, tmp_path):
    oai.push(chat("A long answer that keeps going and going", delay=0.05, chunk=2), chat("fresh"))
    session = settings_session(tmp_path, oai.url)
    rec = Recorder(session)
    task = asyncio.create_task(session.submit("talk"))
    while not rec.of(ev.TextDelta):
        await asyncio.sleep(0.01)

    session.abort()
    terminal = await task

    assert terminal.reason is TerminalReason.ABORTED_STREAMING
    assert await asyncio.to_thread(oai.wait_disconnect, 1, 30.0)
    assert (await session.submit("again")).result == "fresh"
    assert check_history(session.history) == []


async def test_context_length_exceeded_compacts_and_keeps_tool_calls_with_their_results(oai, tmp_path):
    (tmp_path / "notes.txt").write_text("notes\n" * 50)
    too_long = error(400, "This model's maximum context length is 128000 tokens. However, your messages "
                          "resulted in 131000 tokens.", error_code="context_length_exceeded")
    oai.push(chat(call("Read", {"file_path": str(tmp_path / "notes.txt")}, id="call_r")), chat("Read them."),
             too_long, chat("<summary>The person asked to read notes.txt; it was read.</summary>"),
             chat("Answered after compacting."))
    session = settings_session(tmp_path, oai.url)
    rec = Recorder(session)

    await session.submit("read notes.txt")
    terminal = await session.submit("and now?")

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "Answered after compacting."
    assert [c.trigger for c in rec.of(ev.Compaction)] == ["reactive"]
    after = oai.requests[-1].body["messages"]
    call_ids = [c["id"] for m in after for c in m.get("tool_calls") or []]
    result_ids = [m["tool_call_id"] for m in after if m["role"] == "tool"]
    assert call_ids == result_ids
    assert check_history(session.history) == []


async def test_a_length_stop_is_nudged_on_not_asked_again_with_a_larger_limit(oai, tmp_path):
    oai.push(chat("The first half of the answer", finish_reason="length"), chat(" and the rest."))
    session = settings_session(tmp_path, oai.url)

    terminal = await session.submit("write")

    assert terminal.reason is TerminalReason.COMPLETED
    assert [r.body["max_tokens"] for r in oai.requests] == [32000, 32000]
    assert oai.requests[1].body["messages"][-1] == {"role": "user", "content": MAX_TOKENS_NUDGE}


async def test_a_content_filter_stop_is_the_refusal_path(oai, tmp_path):
    oai.push(chat("", finish_reason="content_filter"))
    session = settings_session(tmp_path, oai.url)

    terminal = await session.submit("something filtered")

    assert terminal.error is not None and "declined" in terminal.error
    assert check_history(session.history) == []


async def test_a_401_fails_at_once_naming_the_key_variable(oai, tmp_path):
    oai.push(error(401, "Incorrect API key provided: sk-loop****", error_code="invalid_api_key"))
    session = settings_session(tmp_path, oai.url)

    terminal = await session.submit("hi")

    assert terminal.reason is TerminalReason.MODEL_ERROR and len(oai.requests) == 1
    assert "Incorrect API key provided" in terminal.error and KEY_ENV in terminal.error


async def test_a_429_is_retried_after_its_retry_after(oai, tmp_path):
    oai.push(error(429, "Rate limit reached", error_code="rate_limit_exceeded", headers={"retry-after": "0"}),
             chat("second time lucky"))
    session = settings_session(tmp_path, oai.url)
    rec = Recorder(session)

    terminal = await session.submit("hi")

    assert terminal.result == "second time lucky" and len(oai.requests) == 2
    assert any(n.kind == "retry" and "Rate limited (429)" in n.message for n in rec.of(ev.Notice))


# ---------------------------------------------------------------- the installed command


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env[KEY_ENV] = "sk-loopback"
    return env


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([AGENT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=90)


def test_print_mode_runs_a_tool_and_continue_resumes_it(oai, tmp_path):
    (tmp_path / "notes.txt").write_text("remember the lighthouse\n")
    write_settings(tmp_path, oai.url)
    oai.push(chat(call("Read", {"file_path": str(tmp_path / "notes.txt")}, id="call_n")),
             chat("The notes mention a lighthouse."), chat("Yes: the lighthouse."))

    first = run(["-p", "what do the notes say?", "--output-format", "json"], tmp_path, cli_env())
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    assert result["result"] == "The notes mention a lighthouse." and result["num_turns"] == 2

    second = run(["-p", "-c", "say it again"], tmp_path, cli_env())
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Yes: the lighthouse.\n"
    resumed = oai.requests[-1].body["messages"]
    assert [m["role"] for m in resumed] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert resumed[2]["tool_calls"][0]["id"] == resumed[3]["tool_call_id"] == "call_n"


def test_an_unknown_provider_is_a_start_up_error_naming_the_choices(tmp_path):
    folder = tmp_path / ".agent-tui"
    folder.mkdir()
    (folder / "settings.json").write_text(json.dumps({"provider": "openia"}))

    out = run(["-p", "hi"], tmp_path, cli_env())

    assert out.returncode == 2
    assert out.stderr.strip() == (
        "agent-tui: unknown provider 'openia'; the providers are: anthropic, openai, bedrock, vertex"
    )


def test_the_environment_can_choose_the_provider_and_the_server(oai, tmp_path):
    oai.push(chat("from the environment"))
    env = {**cli_env(), "AGENT_TUI_PROVIDER": "openai", "OPENAI_BASE_URL": oai.url + "/v1",
           "OPENAI_API_KEY": "sk-env", "AGENT_TUI_MODEL": "gpt-4.1-mini"}

    out = run(["-p", "hi"], tmp_path, env)

    assert out.returncode == 0, out.stderr
    assert out.stdout == "from the environment\n"
    assert oai.requests[0].headers["authorization"] == "Bearer sk-env"
    assert oai.requests[0].body["model"] == "gpt-4.1-mini"


async def test_answers_end_at_done_and_the_connection_is_kept_alive(oai):
    oai.push(chat("one"), chat("two"), chat("three"))
    model = direct(oai)
    try:
        for _ in range(3):
            [e async for e in model.stream(hi())]
    finally:
        await model.aclose()
    assert oai.connections == 1


@pytest.mark.parametrize(("model", "effort", "sent"), [("o4-mini", "max", "high"), ("gpt-5-mini", "low", "low"),
                                                       ("gpt-4.1", "high", None), ("qwen3-coder", "high", None)])
async def test_effort_is_reasoning_effort_for_reasoning_models_only(oai, model, effort, sent):
    oai.push(chat("ok"))
    await collect(direct(oai), ModelRequest(model=model, messages=[{"role": "user", "content": "hi"}], effort=effort))
    assert oai.requests[0].body.get("reasoning_effort") == sent


async def test_whole_calls_without_an_index_or_an_id_are_told_apart(oai):
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "qwen3-coder"}
    calls = [{"type": "function", "function": {"name": "Read", "arguments": '{"file_path": "/a"}'}},
             {"type": "function", "function": {"name": "Read", "arguments": '{"file_path": "/b"}'}}]
    oai.push(raw_chunks(
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None, "tool_calls": calls[:1]},
                              "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {"tool_calls": calls[1:]}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        "[DONE]"))
    events = await collect(direct(oai), hi())

    stop = events[-1]
    uses = [b for b in stop.message["content"] if b["type"] == "tool_use"]
    assert [u["input"] for u in uses] == [{"file_path": "/a"}, {"file_path": "/b"}]
    assert len({u["id"] for u in uses}) == 2 and all(u["id"].startswith("call_") for u in uses)
    assert stop.stop_reason == "tool_use"
