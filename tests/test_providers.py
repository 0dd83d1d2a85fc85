"""Bedrock and Vertex AI through the SDK's clients: chosen by the environment, same events as the
Messages API (Vertex driven against the loopback server, which serves its route)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_tui.engine.models.base import ModelError
from agent_tui.engine.models.providers import ProviderModel, provider_from_env
from agent_tui.engine.models.stream import BlockStop, MessageStop, ModelRequest
from tests.loopback import reply, status, thinking, tool_use

AGENT = str(Path(sys.executable).with_name("agent-tui"))


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "anthropic"),
        ({"AGENT_TUI_PROVIDER": "bedrock"}, "bedrock"),
        ({"AGENT_TUI_PROVIDER": "Vertex"}, "vertex"),
        ({"CLAUDE_CODE_USE_BEDROCK": "1"}, "bedrock"),
        ({"CLAUDE_CODE_USE_VERTEX": "true"}, "vertex"),
        ({"CLAUDE_CODE_USE_VERTEX": "0"}, "anthropic"),
        ({"AGENT_TUI_PROVIDER": "anthropic", "CLAUDE_CODE_USE_BEDROCK": "1"}, "anthropic"),
    ],
)
def test_the_environment_chooses_the_provider(environ, expected):
    assert provider_from_env(environ) == expected


def vertex_model(api, model: str = "claude-sonnet-4-6") -> ProviderModel:
    from anthropic import AsyncAnthropicVertex

    client = AsyncAnthropicVertex(region="us-east5", project_id="proj", access_token="vertex-token",
                                  base_url=api.url + "/v1", max_retries=0)
    return ProviderModel("vertex", model, client=client)


async def test_vertex_streams_the_same_events_and_takes_the_same_request(api):
    api.push(reply(thinking("Plan.", "sig-v"), tool_use("Read", {"file_path": "/a"}, id="toolu_v")))
    model = vertex_model(api)
    request = ModelRequest(model=model.name, messages=[{"role": "user", "content": "hi"}], system="Be brief.",
                           tools=[{"name": "Read", "description": "Read", "input_schema": {"type": "object"}}],
                           thinking={"type": "adaptive"}, prompt_caching=True)
    try:
        events = [e async for e in model.stream(request)]
    finally:
        await model.aclose()

    received = api.requests[0]
    assert received.path == "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-6:streamRawPredict"
    assert received.headers["authorization"] == "Bearer vertex-token"
    assert received.body["anthropic_version"]  # Vertex takes the version in the body, the model in the path
    assert received.body["thinking"] == {"type": "adaptive"}
    assert received.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    stops = [e.block for e in events if isinstance(e, BlockStop)]
    assert stops[0] == {"type": "thinking", "thinking": "Plan.", "signature": "sig-v"}
    assert stops[1]["input"] == {"file_path": "/a"}
    assert isinstance(events[-1], MessageStop) and events[-1].stop_reason == "tool_use"


async def test_vertex_errors_are_classified_like_the_api(api):
    api.push(status(529, "overloaded_error", "Overloaded", headers={"retry-after": "3"}))
    model = vertex_model(api)
    try:
        with pytest.raises(ModelError) as info:
            async for _ in model.stream(ModelRequest(model=model.name, messages=[{"role": "user", "content": "hi"}])):
                pass
    finally:
        await model.aclose()
    assert (info.value.kind, info.value.status, info.value.retry_after) == ("overloaded", 529, 3.0)
    assert info.value.retryable


@pytest.mark.skipif(importlib.util.find_spec("boto3") is not None, reason="the bedrock extra is installed")
def test_bedrock_without_its_extra_says_what_to_install(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_USE_"))}
    env.update(CLAUDE_CODE_USE_BEDROCK="1", HOME=str(tmp_path))
    out = subprocess.run([AGENT, "-p", "hi"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == "agent-tui: bedrock needs boto3: pip install 'agent-tui[bedrock]'"
