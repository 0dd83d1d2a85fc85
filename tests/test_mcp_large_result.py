"""An MCP server that answers with tens of megabytes: capped as it arrives, the rest saved to a file."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_tui.engine import mcp_stdio
from agent_tui.engine.loop.query import TerminalReason
from agent_tui.engine.permissions.policy import PermissionPolicy
from tests import test_mcp
from tests.engine_helpers import make_session, tool_results
from tests.loopback import reply, tool_use

BIG_SERVER = '''
import sys
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("big")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def dump(megabytes: int) -> str:
    """A long text: numbered 100-character lines."""
    line = "%08d " + "z" * 90 + "\\n"
    return "".join(line % n for n in range(megabytes * 10_000))


if __name__ == "__main__":
    server.run()
'''


@pytest.fixture
def big(tmp_path: Path) -> dict[str, Any]:
    script = tmp_path / "big_server.py"
    script.write_text(BIG_SERVER)
    return {"command": sys.executable, "args": [str(script)]}


async def test_a_50_mb_result_is_capped_and_saved_and_the_turn_goes_on(api, tmp_path, big):
    """50 MB of text (about 100 MB on the wire): received in a few seconds (the SDK's reader took
    over a minute), saved whole to a file, and the model reads the path and the start of it."""
    api.push(reply(tool_use("mcp__big__dump", {"megabytes": 50}, id="t_dump")), reply("That was long."))
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(allow=["mcp__big"]),
                           mcp_servers={"big": big}, session_dir=tmp_path / "session")
    began = time.monotonic()
    terminal = await session.submit("dump")
    took = time.monotonic() - began
    await session.aclose()

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "That was long."
    assert took < 20, f"{took:.1f}s"
    [result] = tool_results(api.requests[1].body)
    content = result["content"] if isinstance(result["content"], str) else result["content"][0]["text"]
    assert not result.get("is_error")
    assert len(content) < 5_000
    assert content.startswith("Output too large (50,000,000 characters, over the 100,000-character limit for "
                              "mcp__big__dump). Full output saved to: ")
    assert "00000000 zzzz" in content
    path = Path(content.split("Full output saved to: ", 1)[1].split("\n", 1)[0])
    assert path.is_relative_to(tmp_path / "session")
    with path.open() as saved:
        assert saved.readline() == "00000000 " + "z" * 90 + "\n"
    assert path.stat().st_size == 50_000_000


async def test_a_message_over_the_transport_limit_fails_that_call_and_the_server_stays_usable(
    api, tmp_path, big, monkeypatch
):
    monkeypatch.setattr(mcp_stdio, "MAX_MESSAGE_BYTES", 4 << 20)
    api.push(
        reply(tool_use("mcp__big__dump", {"megabytes": 10}, id="t_big")),
        reply(tool_use("mcp__big__dump", {"megabytes": 1}, id="t_small")),
        reply("done"),
    )
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(allow=["mcp__big"]),
                           mcp_servers={"big": big}, session_dir=tmp_path / "session")
    terminal = await session.submit("dump twice")
    await session.aclose()

    assert terminal.reason is TerminalReason.COMPLETED
    [too_big] = tool_results(api.requests[1].body)
    assert too_big["is_error"] is True
    assert "over this client's 4,194,304-byte limit" in str(too_big["content"])
    [small] = tool_results(api.requests[2].body)
    assert not small.get("is_error") and "Full output saved to:" in str(small["content"])


# A server written by hand (no SDK), so it can send what the SDK would refuse to: an answer
# nested deeper than any JSON decoder goes.
RAW_SERVER = r"""
import json
import sys

TOOLS = [{"name": name, "description": name, "inputSchema": {"type": "object"}} for name in ("deep", "plain")]


def send(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    answer = {"jsonrpc": "2.0", "id": request["id"]}
    method = request["method"]
    if method == "initialize":
        answer["result"] = {"protocolVersion": request["params"]["protocolVersion"], "capabilities": {"tools": {}},
                            "serverInfo": {"name": "raw", "version": "1"}}
    elif method == "tools/list":
        answer["result"] = {"tools": TOOLS}
    elif method == "tools/call" and request["params"]["name"] == "deep":
        head = json.dumps(answer)[:-1]
        send(head + ', "result": {"content": [], "structuredContent": {"a": ' + "[" * 100000 + "]" * 100000 + "}}}")
        continue
    elif method == "tools/call":
        answer["result"] = {"content": [{"type": "text", "text": "plain answer"}]}
    else:
        answer["error"] = {"code": -32601, "message": "no such method"}
    send(json.dumps(answer))
"""


async def test_an_answer_nested_too_deeply_to_read_fails_its_call_at_once(api, tmp_path):
    script = tmp_path / "raw_server.py"
    script.write_text(RAW_SERVER)
    api.push(
        reply(tool_use("mcp__raw__deep", {}, id="t_deep")),
        reply(tool_use("mcp__raw__plain", {}, id="t_plain")),
        reply("done"),
    )
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(allow=["mcp__raw"]),
                           mcp_servers={"raw": {"command": sys.executable, "args": [str(script)]}})
    began = time.monotonic()
    terminal = await session.submit("go deep")
    took = time.monotonic() - began
    await session.aclose()

    assert terminal.reason is TerminalReason.COMPLETED and terminal.result == "done"
    assert took < 20  # not the ten-minute call timeout
    [deep] = tool_results(api.requests[1].body)
    assert deep["is_error"] is True
    assert "the answer could not be read" in str(deep["content"]) and "recursion limit" in str(deep["content"])
    [plain] = tool_results(api.requests[2].body)
    assert plain["content"] == "plain answer" and not plain.get("is_error")


# test_mcp.py's probe server over HTTP, started with the `probe` below.
http_probe = test_mcp.http_probe


@pytest.fixture
def probe(tmp_path: Path) -> dict[str, Any]:
    """The probe server of test_mcp.py, its `dump` tool answering 5 MB of text."""
    script = tmp_path / "probe_server.py"
    script.write_text(test_mcp.PROBE_SERVER.replace('"x" * 150_000', '"x" * 5_000_000'))
    return {"command": sys.executable, "args": [str(script)], "env": {"PROBE_DIR": str(tmp_path)}}


async def test_a_large_answer_over_http_is_saved_and_the_server_stays_connected(api, tmp_path, http_probe):
    """Over 1 MiB in one SSE event the SDK's default takes for a lost connection, and the server
    was gone for the rest of the session."""
    api.push(
        reply(tool_use("mcp__web__dump", {}, id="t_dump")),
        reply(tool_use("mcp__web__lookup", {"word": "otter"}, id="t_lookup")),
        reply("done"),
    )
    session = make_session(api.url, tmp_path, policy=PermissionPolicy(allow=["mcp__web"]),
                           mcp_servers={"web": {"type": "http", "url": http_probe}})
    terminal = await session.submit("dump, then look up otter")
    await session.aclose()

    assert terminal.reason is TerminalReason.COMPLETED
    [dump] = tool_results(api.requests[1].body)
    assert not dump.get("is_error")
    assert dump["content"][0]["text"].startswith("Output too large (5,000,000 characters")
    assert dump["content"][1]["type"] == "image"  # the image after the text still reaches the model
    [lookup] = tool_results(api.requests[2].body)
    assert lookup["content"] == "otter: a word the probe knows"
