"""The Messages-API transport (httpx2): headers, error verdicts, and the SDK kept off the hot path."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_tui.engine.models.anthropic import AnthropicModel
from agent_tui.engine.models.base import ModelError
from agent_tui.engine.models.stream import ModelRequest
from tests.loopback import LoopbackServer, reply, status

MODEL = "claude-loopback-test"
ROOT = Path(__file__).resolve().parents[1]


def request() -> ModelRequest:
    return ModelRequest(model=MODEL, messages=[{"role": "user", "content": "hello"}])


async def failure(model: AnthropicModel) -> ModelError:
    with pytest.raises(ModelError) as info:
        async for _ in model.stream(request()):
            pass
    return info.value


@pytest.fixture
async def model(api: LoopbackServer) -> AsyncIterator[AnthropicModel]:
    client = AnthropicModel(MODEL, base_url=api.url, api_key="test")
    yield client
    await client.aclose()


async def test_auth_token_is_sent_as_a_bearer_token(api: LoopbackServer) -> None:
    client = AnthropicModel(MODEL, base_url=api.url, api_key="", auth_token="tok-123")
    api.push(reply("ok"))
    try:
        async for _ in client.stream(request()):
            pass
    finally:
        await client.aclose()
    headers = api.requests[0].headers
    assert headers["authorization"] == "Bearer tok-123"
    assert "x-api-key" not in headers


async def test_every_request_names_the_api_version_and_the_client(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(reply("ok"))
    async for _ in model.stream(request()):
        pass
    headers = api.requests[0].headers
    assert headers["anthropic-version"] == "2026-10-21"
    assert headers["user-agent"].startswith("agent-tui/")
    assert headers["accept"] == "application/json"


async def test_x_should_retry_false_makes_a_server_error_final(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(status(500, "api_error", "Internal server error", headers={"x-should-retry": "false"}))
    err = await failure(model)
    assert err.kind == "server" and err.retryable is False


async def test_x_should_retry_true_makes_a_conflict_retryable(api: LoopbackServer, model: AnthropicModel) -> None:
    api.push(status(409, "invalid_request_error", "Conflict", headers={"x-should-retry": "true"}))
    err = await failure(model)
    assert err.status == 409 and err.retryable is True


async def test_a_non_json_error_body_becomes_a_one_line_reason(api: LoopbackServer, model: AnthropicModel) -> None:
    from tests.loopback import Response

    api.push(Response(status=502, headers={"content-type": "text/html"}, body=b"<html>Bad gateway</html>"),
             Response(status=503, headers={"content-type": "text/plain"}, body=b"upstream connect error\nreset"))
    err = await failure(model)
    assert err.kind == "server" and err.status == 502
    assert err.message == "Bad Gateway"  # no <title>: the status's reason phrase
    err = await failure(model)
    assert err.message == "upstream connect error"


async def test_a_refused_connection_names_host_and_port() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again when the block ends: nothing listens there
    client = AnthropicModel(MODEL, base_url=f"http://127.0.0.1:{port}", api_key="test")
    try:
        err = await failure(client)
    finally:
        await client.aclose()
    assert err.kind == "connection" and err.retryable
    assert err.message == f"Connection refused (127.0.0.1:{port})"
    assert err.mid_stream is False


PROBE = """
import sys
from agent_tui.cli import main
status = main(["-p", "hi"])
loaded = sorted({name.split(".")[0] for name in sys.modules} & {"anthropic", "pydantic", "textual"})
print("LOADED=" + ",".join(loaded), file=sys.stderr)
sys.exit(status)
"""


def test_print_mode_with_a_key_does_not_import_the_sdk(api: LoopbackServer, tmp_path: Path) -> None:
    api.push(reply("hello from the API"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_USE_"))}
    env.update(ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key", HOME=str(tmp_path),
               PYTHONPATH=str(ROOT))
    env.pop("AGENT_TUI_PROVIDER", None)
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "hello from the API\n"
    assert "LOADED=\n" in out.stderr
    assert len(api.requests) == 1


async def test_one_tls_context_made_ahead_serves_every_client(api: LoopbackServer) -> None:
    """`prepare` (run by the app in a thread after its first frame) makes the verifying TLS
    context, so the first request does not load the CA bundle; each client then uses it."""
    import threading

    import httpx2

    from agent_tui.engine.models import transport

    made: list[str] = []
    real = httpx2.create_ssl_context

    def counting(*args, **kwargs):
        made.append(threading.current_thread().name)
        return real(*args, **kwargs)

    saved, transport._tls = transport._tls, None
    httpx2.create_ssl_context = counting
    try:
        first = AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test")
        second = AnthropicModel("claude-sonnet-4-6", base_url=api.url, api_key="test")
        worker = threading.Thread(target=first.prepare, name="prepare")
        worker.start()
        worker.join()
        assert made == ["prepare"]
        api.push(reply("one"), reply("two"))
        for model in (first, second):
            request = ModelRequest(model="claude-sonnet-4-6", system="", messages=[{"role": "user", "content": "hi"}],
                                   tools=[], max_tokens=64)
            [event async for event in model.stream(request)]
            assert model._transport._client._transport._pool._ssl_context is transport.tls_context()
            await model.aclose()
        assert made == ["prepare"]  # made once, ahead, not again for either client
    finally:
        httpx2.create_ssl_context = real
        transport._tls = saved
