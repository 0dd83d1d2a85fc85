"""AnthropicModel against the loopback Messages API: the real SDK over real HTTP.

One test per stream shape the API (or a server speaking its protocol) sends.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.models.base import ModelError
from agent_tui.engine.models.stream import (
    BlockDelta,
    BlockStart,
    BlockStop,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelRequest,
    StreamEvent,
)
from tests.loopback import (
    LoopbackServer,
    drop,
    gated,
    hang,
    raw,
    reply,
    sse_error,
    status,
    text,
    thinking,
    tool_use,
)

# Not a real model name: the SDK warns about deprecated ones.
MODEL = "claude-loopback-test"
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
async def model(api: LoopbackServer) -> AsyncIterator[AnthropicModel]:
    """The real client, pointed at the loopback server; closed on this test's loop."""
    client = AnthropicModel(MODEL, base_url=api.url, api_key="test")
    yield client
    await client.aclose()


def request(**kw: Any) -> ModelRequest:
    kw.setdefault("messages", HELLO)
    return ModelRequest(model=MODEL, **kw)


async def collect(model: AnthropicModel, req: ModelRequest | None = None) -> list[StreamEvent]:
    return [event async for event in model.stream(req or request())]


async def collect_error(model: AnthropicModel) -> tuple[list[StreamEvent], ModelError]:
    events: list[StreamEvent] = []
    with pytest.raises(ModelError) as info:
        async for event in model.stream(request()):
            events.append(event)
    return events, info.value


def final(events: list[StreamEvent]) -> MessageStop:
    assert isinstance(events[-1], MessageStop), events[-1]
    return events[-1]


def ev(event_type: str, **fields: Any) -> tuple[str, str]:
    """A raw SSE event with compact JSON, as the API sends it."""
    return event_type, json.dumps({"type": event_type, **fields}, separators=(",", ":"))


def start_event(**usage: int) -> tuple[str, str]:
    return ev("message_start", message={
        "id": "msg_01raw", "type": "message", "role": "assistant", "model": MODEL, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": usage or {"input_tokens": 12, "output_tokens": 1},
    })


def text_start(index: int = 0) -> tuple[str, str]:
    return ev("content_block_start", index=index, content_block={"type": "text", "text": ""})


def text_delta(s: str, index: int = 0) -> tuple[str, str]:
    return ev("content_block_delta", index=index, delta={"type": "text_delta", "text": s})


def block_stop(index: int = 0) -> tuple[str, str]:
    return ev("content_block_stop", index=index)


def message_delta(stop_reason: str | None = "end_turn", **usage: int) -> tuple[str, str]:
    return ev("message_delta", delta={"stop_reason": stop_reason, "stop_sequence": None},
              usage=usage or {"output_tokens": 4})


PING = ev("ping")
STOP = ev("message_stop")


# ---------------------------------------------------------------- shapes


async def test_plain_reply(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(reply(text("Hello there, how can I help you today?"), usage={"input_tokens": 42, "output_tokens": 9}))
    events = await collect(model)
    assert isinstance(events[0], MessageStart)
    assert events[0].message_id.startswith("msg_")
    assert events[0].usage["input_tokens"] == 42
    deltas = [e.text for e in events if isinstance(e, BlockDelta)]
    assert all(len(d) <= 8 for d in deltas) and len(deltas) == 5
    stop = final(events)
    assert stop.message == {"role": "assistant", "content": [
        {"type": "text", "text": "Hello there, how can I help you today?"}]}
    assert stop.stop_reason == "end_turn"
    assert stop.usage == {"input_tokens": 42, "output_tokens": 9,
                          "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


async def test_ping_anywhere(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(raw([
        PING,  # before message_start
        start_event(),
        PING,  # right after message_start, as the API does
        PING,  # before the first block
        text_start(),
        PING,
        text_delta("Hello"),
        PING,
        text_delta(", world"),
        block_stop(),
        PING,
        message_delta(),
        PING,
        STOP,
        PING,  # after message_stop
    ]))
    stop = final(await collect(model))
    assert stop.message["content"] == [{"type": "text", "text": "Hello, world"}]
    assert stop.stop_reason == "end_turn"


async def test_unknown_event_types_ignored(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(raw([
        start_event(),
        ev("telemetry_hint", detail={"x": 1}),
        text_start(),
        text_delta("Known"),
        ev("content_block_delta", index=0, delta={"type": "future_delta", "stuff": "?"}),
        ev("content_block_annotation", index=0, note="ignored"),
        text_delta(" text"),
        block_stop(),
        message_delta(),
        ev("mystery", payload=[1, 2, 3]),
        STOP,
    ]))
    events = await collect(model)
    stop = final(events)
    assert stop.message["content"] == [{"type": "text", "text": "Known text"}]
    assert [e.text for e in events if isinstance(e, BlockDelta)] == ["Known", " text"]


async def test_json_padded_with_spaces(api: LoopbackServer, model: AnthropicModel) -> None:
    def padded(event: tuple[str, str], **dump: Any) -> tuple[str, str]:
        name, data = event
        return name, json.dumps(json.loads(data), **dump)

    spaced = {"separators": (" , ", " : ")}
    api.push(raw([
        padded(start_event(), **spaced),
        padded(PING, **spaced),
        padded(text_start(), indent=2),  # multi-line `data:` fields, joined by the SSE decoder
        padded(text_delta("padded "), **spaced),
        padded(text_delta("json"), **spaced),
        padded(block_stop(), **spaced),
        padded(message_delta(), **spaced),
        padded(STOP, **spaced),
    ]))
    stop = final(await collect(model))
    assert stop.message["content"] == [{"type": "text", "text": "padded json"}]


async def test_input_json_fragments_start_with_empty(api: LoopbackServer, model: AnthropicModel) -> None:
    args = {"command": "ls -la /tmp", "timeout": 5000, "description": "List files ✓"}
    api.push(reply(text("Let me look."), tool_use("Bash", args, id="toolu_01abc"), chunk=5))
    events = await collect(model)
    fragments = [e.text for e in events if isinstance(e, BlockDelta) and e.kind == "input_json"]
    assert fragments[0] == ""
    assert len(fragments) > 5
    assert json.loads("".join(fragments)) == args
    starts = [e for e in events if isinstance(e, BlockStart)]
    assert starts[1].block == {"type": "tool_use", "id": "toolu_01abc", "name": "Bash", "input": {}}
    stop = final(events)
    assert stop.stop_reason == "tool_use"
    assert stop.message["content"][1] == {"type": "tool_use", "id": "toolu_01abc", "name": "Bash", "input": args}


async def test_tool_use_without_deltas(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(reply(tool_use("TodoRead", "", id="toolu_01none")))
    events = await collect(model)
    assert not [e for e in events if isinstance(e, BlockDelta)]
    (stop_block,) = [e.block for e in events if isinstance(e, BlockStop)]
    assert stop_block == {"type": "tool_use", "id": "toolu_01none", "name": "TodoRead", "input": {}}
    assert "_parse_error" not in stop_block
    assert final(events).stop_reason == "tool_use"


async def test_thinking_with_signature(api: LoopbackServer, model: AnthropicModel) -> None:
    signature = base64.b64encode(bytes(range(256)) * 2).decode() + "+/=="
    thought = "The user greets me.\nI should greet back — briefly."
    api.push(reply(thinking(thought, signature), text("Hi!"), chunk=7))
    events = await collect(model)
    sig_deltas = [e.text for e in events if isinstance(e, BlockDelta) and e.kind == "signature"]
    assert sig_deltas == [signature]
    content = final(events).message["content"]
    assert content[0] == {"type": "thinking", "thinking": thought, "signature": signature}
    assert content[0]["signature"].encode() == signature.encode()
    assert content[1] == {"type": "text", "text": "Hi!"}


async def test_message_delta_usage_cumulative_and_partial(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(raw([
        start_event(input_tokens=1200, cache_read_input_tokens=800, cache_creation_input_tokens=64,
                    output_tokens=1),
        text_start(),
        text_delta("ok"),
        block_stop(),
        # Only output_tokens: the other fields keep their message_start values.
        message_delta(None, output_tokens=3),
        # Cumulative, not additive: the later value replaces the earlier one.
        message_delta("end_turn", output_tokens=11, input_tokens=1200),
        STOP,
    ]))
    events = await collect(model)
    deltas = [e for e in events if isinstance(e, MessageDelta)]
    assert deltas[0].usage["output_tokens"] == 3
    assert deltas[0].stop_reason is None
    stop = final(events)
    assert stop.usage == {"input_tokens": 1200, "output_tokens": 11,
                          "cache_read_input_tokens": 800, "cache_creation_input_tokens": 64}
    assert stop.stop_reason == "end_turn"


async def test_refusal_with_no_blocks(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(reply(stop_reason="refusal"))
    events = await collect(model)
    assert not [e for e in events if isinstance(e, (BlockStart, BlockStop))]
    stop = final(events)
    assert stop.message == {"role": "assistant", "content": []}
    assert stop.stop_reason == "refusal"


async def test_invalid_tool_json_marks_block(api: LoopbackServer, model: AnthropicModel) -> None:
    broken = '{"file_path": "/tmp/a.txt", "content": "unterminated'
    api.push(reply(tool_use("Write", broken, id="toolu_01bad"), tool_use("Read", {"file_path": "/a"})))
    events = await collect(model)
    bad, good = [e.block for e in events if isinstance(e, BlockStop)]
    assert bad["id"] == "toolu_01bad"
    assert bad["_parse_error"].startswith("Tool input is not valid JSON")
    assert bad["_raw_input"] == broken
    assert bad["input"] == {}
    assert good["input"] == {"file_path": "/a"} and "_parse_error" not in good


async def test_tool_input_not_an_object(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(reply(tool_use("Read", '["a", "b"]')))
    (block,) = [e.block for e in await collect(model) if isinstance(e, BlockStop)]
    assert block["_parse_error"] == "Tool input is not a JSON object"
    assert block["input"] == {}


# ---------------------------------------------------------------- errors


async def test_sse_error_after_200_is_overloaded_mid_stream(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(sse_error("overloaded_error", "Overloaded", after=5, of=reply(text("A partial answer that"))))
    events, err = await collect_error(model)
    assert isinstance(events[0], MessageStart)
    assert [e.text for e in events if isinstance(e, BlockDelta)] == ["A partia", "l answer"]
    assert err.kind == "overloaded"
    assert err.mid_stream is True
    assert err.retryable
    assert err.message == "Overloaded"


async def test_dropped_connection_mid_stream(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(drop(after=4, of=reply(text("This will be cut off"))))
    events, err = await collect_error(model)
    assert isinstance(events[0], MessageStart)
    assert [e.text for e in events if isinstance(e, BlockDelta)] == ["This wil"]
    assert not [e for e in events if isinstance(e, MessageStop)]
    assert err.kind == "connection"
    assert err.mid_stream is True
    assert err.retryable


async def test_dropped_connection_before_message_start(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(drop(after=0))
    events, err = await collect_error(model)
    assert events == []
    assert err.kind == "connection"
    assert err.mid_stream is False


async def test_stream_ending_without_message_stop(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(raw([start_event(), text_start(), text_delta("half"), block_stop()]))
    _events, err = await collect_error(model)
    assert err.kind == "connection"
    assert err.mid_stream is True


async def test_429_with_retry_after(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(status(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit",
                    headers={"retry-after": "7"}))
    events, err = await collect_error(model)
    assert events == []
    assert err.kind == "rate_limit"
    assert err.status == 429
    assert err.retry_after == 7.0
    assert err.mid_stream is False
    assert "per-minute rate limit" in err.message
    assert len(api.requests) == 1  # the SDK's own retries are off


async def test_retry_after_ms_preferred(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(status(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1500", "retry-after": "2"}))
    _events, err = await collect_error(model)
    assert err.retry_after == 1.5


@pytest.mark.parametrize(
    ("code", "error_type", "message", "kind"),
    [
        (500, "api_error", "Internal server error", "server"),
        (529, "overloaded_error", "Overloaded", "overloaded"),
        (400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum", "prompt_too_long"),
        (413, "request_too_large", "Request exceeds the maximum allowed number of bytes.", "prompt_too_long"),
        (401, "authentication_error", "invalid x-api-key", "auth"),
        (403, "permission_error", "Your API key does not have permission", "permission"),
        (404, "not_found_error", "model: nope", "not_found"),
        (400, "invalid_request_error", "messages: roles must alternate", "invalid_request"),
    ],
    ids=["500-server", "529-overloaded", "400-prompt-too-long", "413-too-large", "401-auth",
         "403-permission", "404-not-found", "400-invalid"],
)
async def test_http_status_errors(
    api: LoopbackServer, model: AnthropicModel, code: int, error_type: str, message: str, kind: str
) -> None:
    api.push(status(code, error_type, message))
    events, err = await collect_error(model)
    assert events == []
    assert err.kind == kind
    assert err.status == code
    assert err.message == message
    assert err.mid_stream is False
    assert err.retryable == (kind in ("server", "overloaded"))


async def test_connection_refused(api: LoopbackServer, model: AnthropicModel) -> None:
    api.stop()
    events, err = await collect_error(model)
    assert events == []
    assert err.kind == "connection"
    assert err.mid_stream is False


# ---------------------------------------------------------------- the request


async def test_request_body_and_headers(api: LoopbackServer, model: AnthropicModel) -> None:
    tools = [{"name": "Read", "description": "Read a file",
              "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}},
                               "required": ["file_path"]}}]
    messages = [{"role": "user", "content": [{"type": "text", "text": "read a.py"}]}]
    api.push(reply(text("ok")))
    final(await collect(model, request(messages=messages, system="You are terse.", tools=tools, max_tokens=1234)))
    (received,) = api.requests
    assert received.path == "/v1/messages"
    body = received.body
    assert body["model"] == MODEL
    assert body["messages"] == messages
    assert body["tools"] == tools
    assert body["system"] == "You are terse."
    assert body["max_tokens"] == 1234
    assert body["stream"] is True
    assert received.headers["authorization"] == "Bearer test"
    assert received.headers["anthropic-version"]
    assert received.headers["content-type"] == "application/json"


async def test_input_tokens_estimated_from_request(api: LoopbackServer, model: AnthropicModel) -> None:
    big = [{"role": "user", "content": "x" * 4000}]
    api.push(reply(text("ok")))
    events = await collect(model, request(messages=big))
    assert 1000 <= final(events).usage["input_tokens"] <= 1100


# ---------------------------------------------------------------- performance and abort


async def _stream_text(srv: LoopbackServer, model: AnthropicModel, size: int) -> tuple[str, float]:
    answer = ("The quick brown fox jumps over the lazy dog. " * (size // 45 + 1))[:size]
    srv.push(reply(text(answer), chunk=8))
    gc.collect()
    last: StreamEvent | None = None
    # CPU time of this thread (the client; the server has its own): steadier than wall time on a busy machine.
    t0 = time.thread_time()
    async for event in model.stream(request()):
        last = event  # a consumer that keeps every event would time its own list, not the accumulator
    elapsed = time.thread_time() - t0
    assert isinstance(last, MessageStop)
    return last.message["content"][0]["text"], elapsed


async def test_a_330_kb_answer_in_8_character_deltas_arrives_whole(api: LoopbackServer, model: AnthropicModel) -> None:
    # How fast it arrives is a benchmark's question (tests/bench: the 330 KB stream rows), not a test's.
    size = 330_000
    text, _seconds = await _stream_text(api, model, size)  # ~41k text_delta events
    assert text == ("The quick brown fox jumps over the lazy dog. " * (size // 45 + 1))[:size]


@pytest.mark.parametrize("shape", ["slow-reply", "hang"])
async def test_aclose_disconnects(api: LoopbackServer, model: AnthropicModel, shape: str) -> None:
    if shape == "hang":
        api.push(hang())
    else:
        api.push(reply(text("word " * 200), chunk=8, delay=0.02))  # ~2.5 s if read to the end
    stream = model.stream(request())
    first = await anext(stream)
    assert isinstance(first, MessageStart)
    await stream.aclose()
    # A disconnect is only recorded while the server is still sending.
    assert await asyncio.to_thread(api.wait_disconnect, 1, 30.0)


async def test_tool_blocks_stream_over_time(api: LoopbackServer, model: AnthropicModel) -> None:
    # The second Read is held back by the server until the first has reached the client.
    held, gate = gated(reply(text("Reading two files."), tool_use("Read", {"file_path": "/a"}),
                             tool_use("Read", {"file_path": "/b"}, delay_before=0.01)), at=1)
    api.push(held)
    stops: list[int] = []
    async for event in model.stream(request()):
        if isinstance(event, BlockStop):
            stops.append(event.index)
            if event.index == 1:
                assert not gate.is_set()
                gate.set()
    assert stops == [0, 1, 2]


# ---------------------------------------------------------------- the loopback server itself


async def test_unscripted_request_is_a_clear_500(api: LoopbackServer, model: AnthropicModel) -> None:
    _events, err = await collect_error(model)
    assert err.kind == "server" and err.status == 500
    assert "script ran out" in err.message
    assert api.errors and "script ran out" in api.errors[0]


async def test_handler_scripts_dynamically_and_keeps_alive(api: LoopbackServer, model: AnthropicModel) -> None:
    def echo(body: dict[str, Any], index: int) -> Any:
        return reply(text(f"#{index}: {body['messages'][-1]['content']}"))

    api.handler = echo
    answers = []
    for prompt in ("one", "two", "three"):
        events = [e async for e in model.stream(request(messages=[{"role": "user", "content": prompt}]))]
        answers.append(final(events).message["content"][0]["text"])
    assert answers == ["#0: one", "#1: two", "#2: three"]
    assert api.connections == 1  # one kept-alive connection for all three requests
    assert api.disconnects == []  # every response was read to its end


async def test_non_streaming_count_tokens_and_404(api: LoopbackServer) -> None:
    from anthropic import AsyncAnthropic

    client = AsyncAnthropic(base_url=api.url, api_key="test", max_retries=0)
    api.push(reply(text("non-streamed"), tool_use("Read", {"file_path": "/x"}, id="toolu_01x")))
    message = await client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert message.content[0].text == "non-streamed"
    assert message.content[1].input == {"file_path": "/x"}
    assert message.stop_reason == "tool_use"
    assert message.id.startswith("msg_")

    count = await client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "y" * 400}])
    assert 100 <= count.input_tokens <= 130
    assert len(api.count_requests) == 1 and api.pending == 0

    def get_404() -> tuple[int, dict[str, Any]]:
        try:
            urllib.request.urlopen(api.url + "/v1/nothing-here", timeout=5)
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())
        raise AssertionError("expected a 404")

    code, body = await asyncio.to_thread(get_404)
    assert code == 404
    assert body["type"] == "error" and body["error"]["type"] == "not_found_error"
    await client.close()


def test_standalone_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"kind": "reply", "blocks": [{"text": "hi from the script"},
                                     {"tool_use": {"name": "Read", "input": {"file_path": "/etc/hosts"}}}],
         "chunk": 4, "delay": 0.001},
        {"kind": "status", "code": 529, "error_type": "overloaded_error", "message": "Overloaded"},
    ]))
    log = tmp_path / "requests.jsonl"
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.loopback", "--port", "0", "--script", str(script), "--log", str(log)],
        cwd=root, env=env, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")

        async def run() -> tuple[MessageStop, ModelError]:
            model = AnthropicModel(MODEL, base_url=url, api_key="test")
            try:
                events = await collect(model)
                _, err = await collect_error(model)
            finally:
                await model.aclose()
            return final(events), err

        stop, err = asyncio.run(run())
        assert stop.message["content"][0] == {"type": "text", "text": "hi from the script"}
        assert stop.message["content"][1]["input"] == {"file_path": "/etc/hosts"}
        assert err.kind == "overloaded"
        logged = [json.loads(line) for line in log.read_text().splitlines()]
        assert len(logged) == 2 and logged[0]["body"]["stream"] is True
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == 0
